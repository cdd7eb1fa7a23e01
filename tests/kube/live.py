"""Helpers for the ``cluster``-marked suite: tests against a live control plane, run only when
``NODEWRIGHT_TEST_KUBECONFIG`` names an admin kubeconfig (see docs/kubernetes.md).

``NODEWRIGHT_TEST_KWOK_CONTROLLER=1`` says a KWOK controller plays kubelet for the fake Nodes
(kind + KWOK, kwokctl, ``KWOK=1 realk8s/up.sh``); the tests then run nodewright with
``kwok.manage-nodes=false``, and skip those that need the provider's own node emulation (the
two would fight over the same Nodes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.api.labels import NODEPOOL_LABEL
from nodewright.cluster.kube import KubeCluster
from nodewright.cluster.kube.transport import Answer
from nodewright.settings.run import RunSettings
from nodewright.testing.manifests import deployment, kwok_node_class, node_pool
from tests.kube.polling import eventually

KUBECONFIG = os.environ.get("NODEWRIGHT_TEST_KUBECONFIG", "")
KWOK_CONTROLLER = os.environ.get("NODEWRIGHT_TEST_KWOK_CONTROLLER", "") not in ("", "0", "false")
#: How long nodes may take to appear, pods to run, nodes to go.
TIMEOUT = float(os.environ.get("NODEWRIGHT_TEST_TIMEOUT", "300"))
#: Seconds between two looks at the real control plane while waiting.
POLL = 0.5
#: How long a scaled-up cluster is watched for Nodes going NotReady (the node lifecycle
#: controller's grace period is 50 s; a silent kubelet shows within one).
HOLD = float(os.environ.get("NODEWRIGHT_TEST_HOLD", "90"))

#: Marks for every test of this suite.
LIVE = [
    pytest.mark.cluster,
    pytest.mark.skipif(not KUBECONFIG, reason="NODEWRIGHT_TEST_KUBECONFIG is not set"),
]
#: Marks for tests that need the KWOK provider's own node emulation.
EMULATION = pytest.mark.skipif(
    KWOK_CONTROLLER, reason="a KWOK controller plays kubelet (NODEWRIGHT_TEST_KWOK_CONTROLLER)"
)
#: The provider options that fit the control plane.
PROVIDER_OPTIONS = "kwok.manage-nodes=false" if KWOK_CONTROLLER else ""


def suffix() -> str:
    return uuid.uuid4().hex[:6]


#: The image of examples/inflate.
PAUSE_IMAGE = "public.ecr.aws/eks-distro/kubernetes/pause:3.7"


def run_manifests(
    pool: str,
    requirements: str,
    workloads: str,
    *,
    disruption: str = "{consolidationPolicy: WhenEmpty, consolidateAfter: 30s}",
    template_spec: str = "",
    limits: str = "{}",
) -> str:
    """One live run's KWOKNodeClass and NodePool, both named ``pool`` so runs never share
    them, then its ``workloads``: the live tests differ only in these."""
    node_class_ref = {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": pool}
    return (
        kwok_node_class(pool)
        + node_pool(
            pool,
            weight=None,
            requirements=requirements,
            template_spec=template_spec,
            limits=limits,
            disruption=disruption,
            node_class_ref=node_class_ref,
        )
        + workloads
    )


def inflate(pool: str, namespace: str, replicas: int) -> str:
    """examples/inflate's Deployment (1 CPU a pod, no grace period) in ``namespace``, its pods
    selecting this run's NodePool."""
    return deployment(
        "inflate",
        replicas,
        memory=None,
        namespace=namespace,
        container="inflate",
        image=PAUSE_IMAGE,
        extra_spec=f"terminationGracePeriodSeconds: 0\nnodeSelector: {{{NODEPOOL_LABEL}: {pool}}}",
    )


def kubectl(*args: str, stdin: str | None = None, kubeconfig: str = KUBECONFIG) -> str:
    """Run kubectl as a user would; its output, or an AssertionError with its message."""
    done = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def apply(manifests: str) -> None:
    kubectl("apply", "-f", "-", stdin=manifests)


def connect(kubeconfig: str = KUBECONFIG) -> KubeCluster:
    return KubeCluster.connect(kubeconfig)


def install_crds() -> None:
    """``nodewright crds | kubectl apply -f -``, then wait until every CRD is established."""
    done = subprocess.run(
        [sys.executable, "-m", "nodewright.commands", "crds"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    apply(done.stdout)

    def established() -> bool:
        # A CRD the API server has not looked at yet has no conditions, and `kubectl wait`
        # then fails at once instead of waiting: ask again.
        try:
            kubectl("wait", "--for=condition=established", "--timeout=60s", "crd", "--all")
        except AssertionError:
            return False
        return True

    eventually(established, "every CRD is established", timeout=120, every=1.0)


# -- the chart's identity ----------------------------------------------------------------------


@dataclasses.dataclass
class Identity:
    """The chart's ServiceAccount, bound to its RBAC, as a kubeconfig with its token."""

    namespace: str
    service_account: str
    lease_name: str
    kubeconfig: str

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"

    def run_settings(self, **changes: Any) -> RunSettings:
        """``nodewright run``'s settings as this identity: its kubeconfig and lease, the KWOK
        provider's options, ports the system picks, text logs; ``changes`` on top."""
        fields: dict[str, Any] = {
            "kubeconfig": self.kubeconfig,
            "metrics_port": 0,
            "health_probe_port": 0,
            "bind_address": "127.0.0.1",
            "leader_election_namespace": self.namespace,
            "leader_election_name": self.lease_name,
            "provider_options": PROVIDER_OPTIONS,
            "log_format": "text",
        }
        return RunSettings(**{**fields, **changes})


@contextlib.contextmanager
def chart_identity(
    tmp_path: Path, release: str, settings: Mapping[str, Any] | None = None
) -> Iterator[Identity]:
    """Render the chart's RBAC and ServiceAccount for ``release`` (in a namespace of the same
    name; ``settings``: more chart settings), apply them, and hand out a token for the account;
    delete it all afterwards."""
    from tests.charts.helm import render

    objects = render(
        {
            "settings": {"clusterName": release, **(settings or {})},
            "providers": {"enabled": "kwok"},
        },
        release=release,
        namespace=release,
    )
    kinds = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
    rbac = [o for o in objects if o["kind"] in kinds]
    [account] = [o for o in rbac if o["kind"] == "ServiceAccount"]
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    manifests = yaml.safe_dump_all(rbac)
    kubectl("create", "namespace", release)
    try:
        apply(manifests)
        token = kubectl(
            "create", "token", account["metadata"]["name"], "-n", release, "--duration", "2h"
        ).strip()
        admin = yaml.safe_load(Path(KUBECONFIG).read_text(encoding="utf-8"))
        context = next(
            c["context"] for c in admin["contexts"] if c["name"] == admin["current-context"]
        )
        cluster = next(c for c in admin["clusters"] if c["name"] == context["cluster"])
        cluster = _with_inline_ca(cluster, Path(KUBECONFIG).parent)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [cluster],
            "users": [{"name": release, "user": {"token": token}}],
            "contexts": [
                {"name": release, "context": {"cluster": cluster["name"], "user": release}}
            ],
            "current-context": release,
        }
        path = tmp_path / f"{release}.kubeconfig"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        yield Identity(
            release, account["metadata"]["name"], str(env["LEADER_ELECTION_NAME"]), str(path)
        )
    finally:
        subprocess.run(
            ["kubectl", "--kubeconfig", KUBECONFIG, "delete", "--ignore-not-found", "--wait=false",
             "-f", "-"],
            input=manifests, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        kubectl("delete", "namespace", release, "--ignore-not-found", "--wait=false")


def _with_inline_ca(cluster: dict[str, Any], base: Path) -> dict[str, Any]:
    """The admin kubeconfig's cluster entry, its CA file made absolute."""
    entry = dict(cluster["cluster"])
    ca = entry.get("certificate-authority")
    if ca and not Path(ca).is_absolute():
        entry["certificate-authority"] = str(base / ca)
    return {"name": cluster["name"], "cluster": entry}


# -- what a client asked of the server -----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Request:
    """One API request, as RBAC sees it."""

    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    #: The object's name (one of them, for requests that differ only in it): RBAC rules may
    #: name the objects they allow (the leader election Lease).
    name: str = dataclasses.field(default="", compare=False)

    def can_i(self, kubeconfig: str) -> bool:
        """``kubectl auth can-i`` for this request, as the kubeconfig's user: for the kind,
        else for the object it was made on."""
        resource = f"{self.resource}.{self.group}" if self.group else self.resource
        return _can_i(kubeconfig, self, resource) or (
            bool(self.name) and _can_i(kubeconfig, self, f"{resource}/{self.name}")
        )

    def __str__(self) -> str:
        what = self.resource + (f"/{self.subresource}" if self.subresource else "")
        what = f"{what}.{self.group}" if self.group else what
        return f"{self.verb} {what}" + (f" in {self.namespace}" if self.namespace else "")


def _can_i(kubeconfig: str, request: Request, what: str) -> bool:
    args = ["auth", "can-i", request.verb, what]
    if request.subresource:
        args.append(f"--subresource={request.subresource}")
    args += ["-n", request.namespace] if request.namespace else []
    done = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout.strip() == "yes"


_PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<resource>[^/?]+)"
    r"(?:/(?P<name>[^/?]+))?(?:/(?P<sub>[^/?]+))?$"
)
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def as_request(method: str, path: str, query: Mapping[str, str] | None) -> Request | None:
    """The RBAC attributes of a request, or None for discovery (not a resource)."""
    found = _PATH.match(path.split("?", 1)[0])
    if found is None:
        return None
    if method == "GET":
        if found["name"]:
            verb = "get"
        else:
            verb = "watch" if (query or {}).get("watch") in ("true", "1") else "list"
    else:
        verb = _VERBS[method]
    return Request(
        verb,
        found["group"] or "",
        found["resource"],
        found["sub"] or "",
        found["namespace"] or "",
        found["name"] or "",
    )


class RequestLog:
    """Every request a KubeCluster makes, with its answer's status."""

    def __init__(self, cluster: KubeCluster) -> None:
        self.answers: list[tuple[Request, int]] = []
        self._lock = threading.Lock()
        transport = cluster._api
        call, stream = transport.call, transport.stream

        def logged_call(
            method: str,
            path: str,
            query: Mapping[str, str] | None = None,
            *args: Any,
            **kwargs: Any,
        ) -> Answer:
            answer = call(method, path, query, *args, **kwargs)
            self._record(method, path, query, answer.status)
            return answer

        def logged_stream(
            path: str, query: Mapping[str, str], read_timeout: float
        ) -> tuple[int, Any]:
            status, raw = stream(path, query, read_timeout)
            self._record("GET", path, query, status)
            return status, raw

        transport.call = logged_call  # type: ignore[method-assign]
        transport.stream = logged_stream  # type: ignore[method-assign]

    def _record(self, method: str, path: str, query: Mapping[str, str] | None, status: int) -> None:
        request = as_request(method, path, query)
        if request is not None:
            with self._lock:
                self.answers.append((request, status))

    def requests(self) -> set[Request]:
        with self._lock:
            return {request for request, _ in self.answers}

    def refused(self) -> list[tuple[Request, int]]:
        with self._lock:
            return [(r, status) for r, status in self.answers if status in (401, 403)]
