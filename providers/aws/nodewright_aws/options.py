"""The AWS provider's options (``--provider-option aws.<name>=<value>``).

Parsing never touches AWS: a missing region or credentials is reported when the provider
first needs AWS, naming what to set.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

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
ISOLATED_VPC = "isolated-vpc"
EKS_CONTROL_PLANE = "eks-control-plane"
DISABLE_DRY_RUN = "disable-dry-run"
ENABLE_ZONAL_SHIFT = "enable-zonal-shift"
AMI_REFRESH_INTERVAL = "ami-refresh-interval"
SUBNET_REFRESH_INTERVAL = "subnet-refresh-interval"
OPTIONS = (
    OFFLINE,
    ISOLATED_VPC,
    EKS_CONTROL_PLANE,
    DISABLE_DRY_RUN,
    ENABLE_ZONAL_SHIFT,
    AMI_REFRESH_INTERVAL,
    SUBNET_REFRESH_INTERVAL,
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
    #: The VPC reaches only services with a VPC endpoint: the Pricing API (which has none) is
    #: never called; on-demand prices stay those of the bundled table.
    isolated_vpc: bool = False
    #: Whether the cluster is EKS: True, DescribeCluster must answer (its failure is reported);
    #: False, it is never called (the Kubernetes version, endpoint, CA and CIDR come from the
    #: options); None (unset), asked and a cluster EKS does not know is tolerated.
    eks_control_plane: bool | None = None
    #: No dry-run CreateLaunchTemplate / CreateFleet / RunInstances check of each class.
    disable_dry_run: bool = False
    #: Follow the cluster's ARC zonal shifts: no launch into a zone shifted away from.
    enable_zonal_shift: bool = False
    #: How long resolved AMIs and subnets are reused before EC2 is asked again.
    ami_refresh_interval: timedelta = timedelta(minutes=1)
    subnet_refresh_interval: timedelta = timedelta(minutes=1)


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
    eks = text(EKS_CONTROL_PLANE)
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
        isolated_vpc=_flag(ISOLATED_VPC, text(ISOLATED_VPC)) or False,
        eks_control_plane=_flag(EKS_CONTROL_PLANE, eks),
        disable_dry_run=_flag(DISABLE_DRY_RUN, text(DISABLE_DRY_RUN)) or False,
        enable_zonal_shift=_flag(ENABLE_ZONAL_SHIFT, text(ENABLE_ZONAL_SHIFT)) or False,
        ami_refresh_interval=_interval(AMI_REFRESH_INTERVAL, text(AMI_REFRESH_INTERVAL)),
        subnet_refresh_interval=_interval(SUBNET_REFRESH_INTERVAL, text(SUBNET_REFRESH_INTERVAL)),
    )


_TRUE = frozenset({"1", "t", "true"})
_FALSE = frozenset({"0", "f", "false"})
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def _flag(name: str, value: str | None) -> bool | None:
    """A boolean as Go's flag package reads one (true/false, t/f, 1/0); None when unset."""
    if value is None:
        return None
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ValueError(f"{name}: {value!r} is not true or false")


def _interval(name: str, value: str | None) -> timedelta:
    """A Go duration (``90s``, ``5m``, ``1h30m``) of at least a minute; a minute when unset."""
    if value is None:
        return timedelta(minutes=1)
    parts = _DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise ValueError(f"{name}: {value!r} is not a duration such as 90s, 5m or 1h30m")
    seconds = sum(float(n) * _UNIT[u] for n, u in parts)
    if seconds < 60:
        raise ValueError(f"{name} must be at least 1m (got {value})")
    return timedelta(seconds=seconds)


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
