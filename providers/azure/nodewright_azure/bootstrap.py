"""The VM's custom data: a self-contained node bootstrap script (Karpenter Azure's
``aksscriptless`` style), base64-encoded as ARM wants ``osProfile.customData``.

The script sets the variables AKS's node provisioning script reads (cluster endpoint, CA,
TLS bootstrap token, Kubernetes version, network plugin) and the kubelet's flags: the
NodeClass's ``kubelet`` settings, max pods, the same kube-reserved and eviction values the
scheduling simulation assumes, the NodeClaim's labels (those a kubelet may set) and its taints,
startup taints and ``karpenter.sh/unregistered``; then it runs the provisioning script the AKS
node images ship. Nothing in it is logged: it carries the bootstrap token.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nodewright.api.core import Taint
from nodewright.api.labels import UNREGISTERED_TAINT_KEY
from nodewright_azure.nodeclass import AKSKubeletConfiguration

#: Label domains the NodeRestriction admission plugin lets a kubelet set in these families.
_KUBELET_ALLOWED = frozenset(
    {
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
    }
)
PROVISION_SCRIPT = "/opt/azure/containers/provision_start.sh"
EVICTION_HARD = "memory.available<750Mi"


@dataclass(frozen=True)
class ClusterBootstrap:
    """What every node of the cluster needs to join it (from the provider options)."""

    cluster_name: str
    endpoint: str
    ca_pem: str
    bootstrap_token: str
    kubernetes_version: str
    network_plugin: str
    dns_service_ip: str
    subscription_id: str
    resource_group: str
    location: str
    tenant_id: str
    subnet_id: str


@dataclass(frozen=True)
class NodeBootstrap:
    """What differs per node."""

    node_name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    max_pods: int
    kube_reserved_cpu_millis: int
    kube_reserved_memory_mib: int
    kubelet: AKSKubeletConfiguration | None
    arch: str


def kubelet_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels a kubelet may register itself with (NodeRestriction's rule): none in the
    ``kubernetes.io`` and ``k8s.io`` domains but the well-known ones and ``node.kubernetes.io``."""
    allowed: dict[str, str] = {}
    for key, value in labels.items():
        domain = key.split("/", 1)[0] if "/" in key else ""
        restricted = domain.endswith(("kubernetes.io", "k8s.io"))
        if restricted and key not in _KUBELET_ALLOWED and not domain.endswith("node.kubernetes.io"):
            continue
        allowed[key] = value
    return allowed


def register_taints(taints: Iterable[Taint], startup_taints: Iterable[Taint]) -> tuple[Taint, ...]:
    """Taints, startup taints, then ``karpenter.sh/unregistered:NoExecute`` (once each)."""
    found: list[Taint] = []
    seen: set[tuple[str, str | None, str]] = set()
    for taint in [*taints, *startup_taints, Taint(key=UNREGISTERED_TAINT_KEY, effect="NoExecute")]:
        identity = (taint.key, taint.value, taint.effect)
        if identity not in seen:
            seen.add(identity)
            found.append(taint)
    return tuple(found)


def _taint(taint: Taint) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def kubelet_flags(cluster: ClusterBootstrap, node: NodeBootstrap) -> list[str]:
    """The kubelet's command-line flags, in a stable order."""
    flags = [
        f"--max-pods={node.max_pods}",
        f"--kube-reserved=cpu={node.kube_reserved_cpu_millis}m,"
        f"memory={node.kube_reserved_memory_mib}Mi",
        f"--eviction-hard={EVICTION_HARD}",
        f"--cluster-dns={cluster.dns_service_ip}",
    ]
    k = node.kubelet
    if k is not None:
        if k.cpu_manager_policy is not None:
            flags.append(f"--cpu-manager-policy={k.cpu_manager_policy}")
        if k.cpu_cfs_quota is not None:
            flags.append(f"--cpu-cfs-quota={str(k.cpu_cfs_quota).lower()}")
        if k.cpu_cfs_quota_period is not None:
            flags.append(f"--cpu-cfs-quota-period={k.cpu_cfs_quota_period}")
        if k.image_gc_high_threshold_percent is not None:
            flags.append(f"--image-gc-high-threshold={k.image_gc_high_threshold_percent}")
        if k.image_gc_low_threshold_percent is not None:
            flags.append(f"--image-gc-low-threshold={k.image_gc_low_threshold_percent}")
        if k.topology_manager_policy is not None:
            flags.append(f"--topology-manager-policy={k.topology_manager_policy}")
        if k.allowed_unsafe_sysctls:
            flags.append(f"--allowed-unsafe-sysctls={','.join(k.allowed_unsafe_sysctls)}")
        if k.container_log_max_size is not None:
            flags.append(f"--container-log-max-size={k.container_log_max_size}")
        if k.container_log_max_files is not None:
            flags.append(f"--container-log-max-files={k.container_log_max_files}")
        if k.pod_pids_limit is not None:
            flags.append(f"--pod-max-pids={k.pod_pids_limit}")
        if k.fail_swap_on is not None:
            flags.append(f"--fail-swap-on={str(k.fail_swap_on).lower()}")
    labels = kubelet_labels(node.labels)
    if labels:
        flags.append("--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())))
    if node.taints:
        flags.append("--register-with-taints=" + ",".join(_taint(t) for t in node.taints))
    return flags


def script(cluster: ClusterBootstrap, node: NodeBootstrap) -> str:
    """The bootstrap script (plain text)."""
    variables = {
        "CLUSTER_NAME": cluster.cluster_name,
        "API_SERVER_NAME": cluster.endpoint,
        "KUBE_CA_CRT": base64.b64encode(cluster.ca_pem.encode()).decode(),
        "TLS_BOOTSTRAP_TOKEN": cluster.bootstrap_token,
        "KUBERNETES_VERSION": cluster.kubernetes_version,
        "NETWORK_PLUGIN": cluster.network_plugin,
        "SUBSCRIPTION_ID": cluster.subscription_id,
        "RESOURCE_GROUP": cluster.resource_group,
        "LOCATION": cluster.location,
        "TENANT_ID": cluster.tenant_id,
        "SUBNET_ID": cluster.subnet_id,
        "NODE_NAME": node.node_name,
        "ARCH": node.arch,
        "MAX_PODS": str(node.max_pods),
        "KUBELET_FLAGS": " ".join(kubelet_flags(cluster, node)),
    }
    lines = [
        "#!/bin/bash",
        "# Node bootstrap written by nodewright (Karpenter Azure's self-contained style).",
        "set -euo pipefail",
        *(f"export {name}={shlex.quote(value)}" for name, value in variables.items()),
        f"exec {PROVISION_SCRIPT}",
        "",
    ]
    return "\n".join(lines)


def custom_data(cluster: ClusterBootstrap, node: NodeBootstrap) -> str:
    """``osProfile.customData``: the script, base64-encoded."""
    return base64.b64encode(script(cluster, node).encode()).decode()
