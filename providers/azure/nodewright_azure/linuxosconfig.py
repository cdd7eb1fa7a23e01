"""AKSNodeClass ``linuxOSConfig`` (AKS custom Linux OS configuration): a swap file, the
transparent huge page modes and 28 bounded sysctls, each checked as the CRD checks it
(bounds, and CEL rules between related sysctls).

Where it takes effect is Karpenter Azure's: in an AKS machine's ``linuxOSConfig`` under the
AKS machine API provision modes (:func:`machine_linux_os_config`), and in the provision
profile the node bootstrapping server is given; the scriptless VM bootstrap leaves it out.
The kubelet settings go to the same two places in the AKS API's form (:func:`kubelet_config`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from nodewright.plugin import Int32, Model, Rule, Schema, parse_resources, validations

if TYPE_CHECKING:
    from nodewright_azure.nodeclass import AKSKubeletConfiguration

SIZE_PATTERN = r"^\d+(E|P|T|G|M|K|Ei|Pi|Ti|Gi|Mi|Ki)$"
PORT_RANGE_PATTERN = r"^\d+ \d+$"

#: CRD field -> (AKS API field, minimum, maximum) of every integer sysctl.
BOUNDED: dict[str, tuple[str, int, int]] = {
    "fsAioMaxNr": ("fsAioMaxNr", 65536, 6553500),
    "fsFileMax": ("fsFileMax", 8192, 12000500),
    "fsInotifyMaxUserWatches": ("fsInotifyMaxUserWatches", 781250, 2097152),
    "fsNrOpen": ("fsNrOpen", 8192, 20000500),
    "kernelThreadsMax": ("kernelThreadsMax", 20, 513785),
    "netCoreNetdevMaxBacklog": ("netCoreNetdevMaxBacklog", 1000, 3240000),
    "netCoreOptmemMax": ("netCoreOptmemMax", 20480, 4194304),
    "netCoreRmemDefault": ("netCoreRmemDefault", 212992, 134217728),
    "netCoreRmemMax": ("netCoreRmemMax", 212992, 134217728),
    "netCoreSomaxconn": ("netCoreSomaxconn", 4096, 3240000),
    "netCoreWmemDefault": ("netCoreWmemDefault", 212992, 134217728),
    "netCoreWmemMax": ("netCoreWmemMax", 212992, 134217728),
    "netIPv4NeighDefaultGcThresh1": ("netIpv4NeighDefaultGcThresh1", 128, 80000),
    "netIPv4NeighDefaultGcThresh2": ("netIpv4NeighDefaultGcThresh2", 512, 90000),
    "netIPv4NeighDefaultGcThresh3": ("netIpv4NeighDefaultGcThresh3", 1024, 100000),
    "netIPv4TCPFinTimeout": ("netIpv4TcpFinTimeout", 5, 120),
    "netIPv4TCPKeepaliveProbes": ("netIpv4TcpKeepaliveProbes", 1, 15),
    "netIPv4TCPKeepaliveTime": ("netIpv4TcpKeepaliveTime", 30, 432000),
    "netIPv4TCPMaxSynBacklog": ("netIpv4TcpMaxSynBacklog", 128, 3240000),
    "netIPv4TCPMaxTwBuckets": ("netIpv4TcpMaxTwBuckets", 8000, 1440000),
    "netIPv4TCPKeepaliveIntvl": ("netIpv4TcpkeepaliveIntvl", 10, 90),
    "netNetfilterNfConntrackBuckets": ("netNetfilterNfConntrackBuckets", 65536, 524288),
    "netNetfilterNfConntrackMax": ("netNetfilterNfConntrackMax", 131072, 2097152),
    "vmMaxMapCount": ("vmMaxMapCount", 65530, 262144),
    "vmSwappiness": ("vmSwappiness", 0, 100),
    "vmVfsCachePressure": ("vmVfsCachePressure", 0, 100),
}
#: The two sysctls that are not bounded integers: CRD field -> AKS API field.
OTHERS = {
    "netIPv4IPLocalPortRange": "netIpv4IpLocalPortRange",
    "netIPv4TCPTwReuse": "netIpv4TcpTwReuse",
}

#: (smaller, larger) pairs the CRD orders.
ORDERED = (
    ("netCoreRmemDefault", "netCoreRmemMax"),
    ("netCoreWmemDefault", "netCoreWmemMax"),
    ("netIPv4NeighDefaultGcThresh1", "netIPv4NeighDefaultGcThresh2"),
    ("netIPv4NeighDefaultGcThresh2", "netIPv4NeighDefaultGcThresh3"),
)
_FIRST = "int(self.netIPv4IPLocalPortRange.split(' ')[0])"
_LAST = "int(self.netIPv4IPLocalPortRange.split(' ')[1])"
_HAS_RANGE = "!has(self.netIPv4IPLocalPortRange) || "


def _sysctl_rules() -> dict[str, Any]:
    rules = [
        Rule(
            f"has(self.{low}) && has(self.{high}) ? self.{low} <= self.{high} : true",
            f"{low} must be <= {high}",
        )
        for low, high in ORDERED
    ]
    rules += [
        Rule(
            f"{_HAS_RANGE}({_FIRST} >= 1024 && {_FIRST} <= 60999)",
            "netIPv4IPLocalPortRange first port must be in [1024, 60999]",
        ),
        Rule(
            f"{_HAS_RANGE}({_LAST} >= 32768 && {_LAST} <= 65535)",
            "netIPv4IPLocalPortRange last port must be in [32768, 65535]",
        ),
        Rule(
            f"{_HAS_RANGE}{_FIRST} <= {_LAST}",
            "netIPv4IPLocalPortRange first port must be <= last port",
        ),
    ]
    return validations(*rules)


def _bounded(field: str) -> Any:
    """An optional int32 sysctl with its CRD name and bounds."""
    _, low, high = BOUNDED[field]
    return Field(default=None, alias=field, ge=low, le=high)


class SysctlConfiguration(Model):
    """The sysctls AKS lets a node pool set (each maps to the kernel setting it names)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_sysctl_rules())

    fs_aio_max_nr: Int32 | None = _bounded("fsAioMaxNr")
    fs_file_max: Int32 | None = _bounded("fsFileMax")
    fs_inotify_max_user_watches: Int32 | None = _bounded("fsInotifyMaxUserWatches")
    fs_nr_open: Int32 | None = _bounded("fsNrOpen")
    kernel_threads_max: Int32 | None = _bounded("kernelThreadsMax")
    net_core_netdev_max_backlog: Int32 | None = _bounded("netCoreNetdevMaxBacklog")
    net_core_optmem_max: Int32 | None = _bounded("netCoreOptmemMax")
    net_core_rmem_default: Int32 | None = _bounded("netCoreRmemDefault")
    net_core_rmem_max: Int32 | None = _bounded("netCoreRmemMax")
    net_core_somaxconn: Int32 | None = _bounded("netCoreSomaxconn")
    net_core_wmem_default: Int32 | None = _bounded("netCoreWmemDefault")
    net_core_wmem_max: Int32 | None = _bounded("netCoreWmemMax")
    net_ipv4_ip_local_port_range: Annotated[str | None, Schema(pattern=PORT_RANGE_PATTERN)] = Field(
        default=None, alias="netIPv4IPLocalPortRange"
    )
    net_ipv4_neigh_default_gc_thresh1: Int32 | None = _bounded("netIPv4NeighDefaultGcThresh1")
    net_ipv4_neigh_default_gc_thresh2: Int32 | None = _bounded("netIPv4NeighDefaultGcThresh2")
    net_ipv4_neigh_default_gc_thresh3: Int32 | None = _bounded("netIPv4NeighDefaultGcThresh3")
    net_ipv4_tcp_fin_timeout: Int32 | None = _bounded("netIPv4TCPFinTimeout")
    net_ipv4_tcp_keepalive_probes: Int32 | None = _bounded("netIPv4TCPKeepaliveProbes")
    net_ipv4_tcp_keepalive_time: Int32 | None = _bounded("netIPv4TCPKeepaliveTime")
    net_ipv4_tcp_max_syn_backlog: Int32 | None = _bounded("netIPv4TCPMaxSynBacklog")
    net_ipv4_tcp_max_tw_buckets: Int32 | None = _bounded("netIPv4TCPMaxTwBuckets")
    net_ipv4_tcp_tw_reuse: bool | None = Field(default=None, alias="netIPv4TCPTwReuse")
    net_ipv4_tcp_keepalive_intvl: Int32 | None = _bounded("netIPv4TCPKeepaliveIntvl")
    net_netfilter_nf_conntrack_buckets: Int32 | None = _bounded("netNetfilterNfConntrackBuckets")
    net_netfilter_nf_conntrack_max: Int32 | None = _bounded("netNetfilterNfConntrackMax")
    vm_max_map_count: Int32 | None = _bounded("vmMaxMapCount")
    vm_swappiness: Int32 | None = _bounded("vmSwappiness")
    vm_vfs_cache_pressure: Int32 | None = _bounded("vmVfsCachePressure")

    @model_validator(mode="after")
    def _check(self) -> SysctlConfiguration:
        values = self.to_dict()
        for low, high in ORDERED:
            if low in values and high in values and values[low] > values[high]:
                raise ValueError(f"linuxOSConfig.sysctls.{low} must be <= {high}")
        ports = self.net_ipv4_ip_local_port_range
        if ports is not None:
            first, _, last = ports.partition(" ")
            if not (first.isdigit() and last.isdigit()):
                raise ValueError(
                    f"linuxOSConfig.sysctls.netIPv4IPLocalPortRange {ports!r} must be "
                    "'<first> <last>'"
                )
            if not 1024 <= int(first) <= 60999:
                raise ValueError("netIPv4IPLocalPortRange first port must be in [1024, 60999]")
            if not 32768 <= int(last) <= 65535:
                raise ValueError("netIPv4IPLocalPortRange last port must be in [32768, 65535]")
            if int(first) > int(last):
                raise ValueError("netIPv4IPLocalPortRange first port must be <= last port")
        return self


class LinuxOSConfig(Model):
    model_config = ConfigDict(extra="allow")

    swap_file_size: Annotated[str | None, Schema(pattern=SIZE_PATTERN)] = None
    sysctls: SysctlConfiguration | None = None
    transparent_huge_page_enabled: Literal["always", "madvise", "never"] | None = None
    transparent_huge_page_defrag: (
        Literal["always", "defer", "defer+madvise", "madvise", "never"] | None
    ) = None


def size_mb(size: str) -> int:
    """A quantity (``1500Mi``, ``2Gi``) in whole MiB, as AKS takes sizes (rounded)."""
    return round(parse_resources({"size": size})["size"] / 1000 / 2**20)


def machine_linux_os_config(config: LinuxOSConfig | None) -> dict[str, Any] | None:
    """The AKS API's ``linuxOSConfig`` (an AKS machine's, a provision profile's)."""
    if config is None:
        return None
    out: dict[str, Any] = {}
    if config.swap_file_size:
        out["swapFileSizeMB"] = size_mb(config.swap_file_size)
    if config.transparent_huge_page_enabled is not None:
        out["transparentHugePageEnabled"] = config.transparent_huge_page_enabled
    if config.transparent_huge_page_defrag is not None:
        out["transparentHugePageDefrag"] = config.transparent_huge_page_defrag
    if config.sysctls is not None:
        written = config.sysctls.to_dict()
        names = {**{k: v[0] for k, v in BOUNDED.items()}, **OTHERS}
        out["sysctls"] = {names[k]: v for k, v in written.items() if k in names}
    return out


def kubelet_config(k: AKSKubeletConfiguration | None) -> dict[str, Any] | None:
    """The class's kubelet settings as the AKS API's ``kubeletConfig`` (an AKS machine's, a
    provision profile's ``customKubeletConfig``)."""
    if k is None:
        return None
    values = {
        "cpuManagerPolicy": k.cpu_manager_policy,
        "cpuCfsQuota": k.cpu_cfs_quota,
        "cpuCfsQuotaPeriod": k.cpu_cfs_quota_period,
        "imageGcHighThreshold": k.image_gc_high_threshold_percent,
        "imageGcLowThreshold": k.image_gc_low_threshold_percent,
        "topologyManagerPolicy": k.topology_manager_policy,
        "allowedUnsafeSysctls": k.allowed_unsafe_sysctls or None,
        "containerLogMaxSizeMB": size_mb(k.container_log_max_size)
        if k.container_log_max_size
        else None,
        "containerLogMaxFiles": k.container_log_max_files,
        "podMaxPids": None if k.pod_pids_limit is None else min(k.pod_pids_limit, 2**31 - 1),
        "failSwapOn": k.fail_swap_on,
    }
    return {key: value for key, value in values.items() if value is not None}
