"""The AWS provider's options (``--provider-option aws.<name>=<value>``).

Parsing never touches AWS: a missing region or credentials is reported when the provider
first needs AWS, naming what to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

REGION = "region"
ENDPOINT_URL = "endpoint-url"
CLUSTER_NAME = "cluster-name"
INTERRUPTION_QUEUE = "interruption-queue"
KUBERNETES_VERSION = "kubernetes-version"
INSTANCE_TYPES = "instance-types"
VM_MEMORY_OVERHEAD_PERCENT = "vm-memory-overhead-percent"
RESERVED_ENIS = "reserved-enis"
DEFAULT_INSTANCE_PROFILE = "default-instance-profile"
CLUSTER_ENDPOINT = "cluster-endpoint"
CLUSTER_CA_BUNDLE = "cluster-ca-bundle"
CLUSTER_CIDR = "cluster-cidr"
OFFLINE = "offline"
OPTIONS = (
    OFFLINE,
    CLUSTER_ENDPOINT,
    CLUSTER_CA_BUNDLE,
    CLUSTER_CIDR,
    DEFAULT_INSTANCE_PROFILE,
    REGION,
    ENDPOINT_URL,
    CLUSTER_NAME,
    INTERRUPTION_QUEUE,
    KUBERNETES_VERSION,
    INSTANCE_TYPES,
    VM_MEMORY_OVERHEAD_PERCENT,
    RESERVED_ENIS,
)


@dataclass(frozen=True)
class Settings:
    #: The EC2 region; from AWS_REGION / AWS_DEFAULT_REGION when unset.
    region: str | None = None
    #: One endpoint for every AWS API (moto, LocalStack); unset means the real endpoints.
    endpoint_url: str | None = None
    #: Names instances' cluster tags; defaults to the core's cluster name.
    cluster_name: str | None = None
    #: SQS queue *name* of EventBridge interruption events; unset disables interruption.
    interruption_queue: str | None = None
    #: Kubernetes minor version (``1.33``) for AMI aliases; unset asks EKS DescribeCluster.
    kubernetes_version: str | None = None
    #: Instance-type name patterns (``m5.*,c6g.large``) to discover; unset means all.
    instance_types: tuple[str, ...] = ()
    #: Fraction of memory the hypervisor keeps (Karpenter's VM_MEMORY_OVERHEAD_PERCENT).
    vm_memory_overhead_percent: float = 0.075
    #: ENIs kept out of pod networking (Karpenter's RESERVED_ENIS).
    reserved_enis: int = 0
    #: Instance profile for EC2NodeClasses that set neither role nor instanceProfile
    #: (v1alpha5's ``aws.defaultInstanceProfile``, for converted manifests).
    default_instance_profile: str | None = None
    #: API server endpoint written into user data; unset asks EKS DescribeCluster.
    cluster_endpoint: str | None = None
    #: Base64 cluster CA written into user data; unset asks EKS DescribeCluster.
    cluster_ca_bundle: str | None = None
    #: Service CIDR for nodeadm (AL2023); unset asks EKS DescribeCluster.
    cluster_cidr: str | None = None
    #: ``aws.offline=REGION``: answer every AWS call in-process from the bundled catalog of
    #: that region (nodewright_aws.offline); no endpoint, no credentials, no network.
    offline: bool = False


#: The instance profile of EC2NodeClasses with neither role nor instanceProfile, offline.
OFFLINE_INSTANCE_PROFILE = "nodewright-offline"


def parse_settings(options: Mapping[str, str]) -> Settings:
    """Parse the options; an unknown option or a bad value is a ValueError naming it."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown aws option {unknown[0]!r}; known options: {', '.join(OPTIONS)}")

    def text(name: str) -> str | None:
        return options.get(name, "").strip() or None

    overhead = text(VM_MEMORY_OVERHEAD_PERCENT)
    try:
        overhead_value = float(overhead) if overhead is not None else 0.075
    except ValueError:
        raise ValueError(f"{VM_MEMORY_OVERHEAD_PERCENT}: {overhead!r} is not a number") from None
    if not 0 <= overhead_value < 1:
        raise ValueError(f"{VM_MEMORY_OVERHEAD_PERCENT}: must be a fraction in [0, 1), e.g. 0.075")
    enis = text(RESERVED_ENIS) or "0"
    if not enis.isdigit():
        raise ValueError(f"{RESERVED_ENIS}: {enis!r} is not a whole number")
    offline = text(OFFLINE)
    region = text(REGION)
    if offline is not None:
        _check_offline(offline, region, text(ENDPOINT_URL))
        region = offline
    version = text(KUBERNETES_VERSION)
    if version is not None and not _is_minor_version(version):
        raise ValueError(f"{KUBERNETES_VERSION}: {version!r} must look like 1.33")
    return Settings(
        region=region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"),
        endpoint_url=text(ENDPOINT_URL),
        cluster_name=text(CLUSTER_NAME),
        interruption_queue=text(INTERRUPTION_QUEUE),
        kubernetes_version=version,
        instance_types=tuple(
            p.strip() for p in (text(INSTANCE_TYPES) or "").split(",") if p.strip()
        ),
        vm_memory_overhead_percent=overhead_value,
        reserved_enis=int(enis),
        default_instance_profile=text(DEFAULT_INSTANCE_PROFILE)
        or (OFFLINE_INSTANCE_PROFILE if offline else None),
        cluster_endpoint=text(CLUSTER_ENDPOINT),
        cluster_ca_bundle=text(CLUSTER_CA_BUNDLE),
        cluster_cidr=text(CLUSTER_CIDR),
        offline=offline is not None,
    )


def _check_offline(region: str, other_region: str | None, endpoint: str | None) -> None:
    """The offline region must be in the bundled catalog; a server or another region
    alongside it is a contradiction, not something to choose between silently."""
    from nodewright_aws.offline.catalog import load_catalog  # noqa: PLC0415

    regions = load_catalog().regions
    if region not in regions:
        raise ValueError(
            f"{OFFLINE}: no bundled catalog for region {region!r}; available: {', '.join(regions)}"
        )
    if endpoint is not None:
        raise ValueError(
            f"{OFFLINE} and {ENDPOINT_URL} conflict: offline mode talks to no server; "
            f"drop aws.{ENDPOINT_URL} or aws.{OFFLINE}"
        )
    if other_region is not None and other_region != region:
        raise ValueError(
            f"{OFFLINE}={region} and {REGION}={other_region} conflict: offline mode "
            f"simulates the region it names; drop aws.{REGION}"
        )


def _is_minor_version(version: str) -> bool:
    major, _, minor = version.partition(".")
    return major.isdigit() and minor.isdigit()
