# syntax=docker/dockerfile:1
# The nodewright controller image: nodewright and the providers named by PROVIDERS in a
# virtualenv on a distroless Python (no shell, no package manager), run as uid 65532.
#
#   docker build --build-arg PROVIDERS=aws -t ghcr.io/nodewright/nodewright:0.1.0-aws .
#
# or `bin/build --image --providers aws`, which also tags the image as the chart expects.
# PROVIDERS is a comma-separated list of providers whose wheels the workspace builds
# (kwok, aws, azure).

ARG PROVIDERS=kwok

# 1. The wheels, built from this source tree as bin/build builds them for a release.
FROM python:3.11-slim-bookworm AS dist
RUN pip install --no-cache-dir uv==0.13.9
WORKDIR /src
COPY . .
RUN bin/build --dist-dir /dist

# 2. A virtualenv on the runtime image's interpreter (Debian 12's /usr/bin/python3.11).
FROM debian:bookworm-slim AS venv
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3.11 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=dist /usr/local/bin/uv /usr/local/bin/uv
COPY --from=dist /dist /dist
COPY bin/install-venv /usr/local/bin/install-venv
ARG PROVIDERS
ENV UV_NO_CACHE=1 \
    PYTHON=/usr/bin/python3.11
RUN install-venv /opt/nodewright /dist "$PROVIDERS"

# 3. What runs: the same Debian 12 Python, nothing else. The chart mounts an emptyDir at /tmp
#    and makes the root file system read-only.
FROM gcr.io/distroless/python3-debian12:nonroot
ARG PROVIDERS
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="nodewright" \
      org.opencontainers.image.description="A Kubernetes node autoscaler, drop-in compatible with Karpenter, with cloud providers as plugins." \
      org.opencontainers.image.source="https://github.com/nodewright/nodewright" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      io.nodewright.providers="${PROVIDERS}"
COPY --from=venv /opt/nodewright /opt/nodewright
ENV PATH=/opt/nodewright/bin:/usr/local/bin:/usr/bin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    NODEWRIGHT_PLUGINS=${PROVIDERS}
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["nodewright"]
CMD ["run"]
