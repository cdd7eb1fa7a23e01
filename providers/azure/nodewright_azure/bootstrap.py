"""The VM's custom data: a self-contained node bootstrap script (Karpenter Azure's
``aksscriptless`` style), base64-encoded as ARM wants ``osProfile.customData``.

The script sets the variables AKS's node provisioning script reads (cluster endpoint, CA,
TLS bootstrap token, Kubernetes version, network plugin and policy, kubelet identity) and the
kubelet's flags: the
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

from nodewright.plugin import UNREGISTERED_TAINT_KEY, Taint, kubelet_flag, kubelet_flags
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
    #: The cluster's network policy (``calico``, ``cilium``, ``azure`` or none).
    network_policy: str = ""
    #: The kubelet identity's client ID (what AKS calls the user-assigned identity ID).
    kubelet_identity_client_id: str = ""


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


def node_kubelet_flags(cluster: ClusterBootstrap, node: NodeBootstrap) -> list[str]:
    """The kubelet's command-line flags, in a stable order."""
    reserved = {
        "cpu": f"{node.kube_reserved_cpu_millis}m",
        "memory": f"{node.kube_reserved_memory_mib}Mi",
    }
    k = node.kubelet or AKSKubeletConfiguration()
    return kubelet_flags(
        kubelet_flag("max-pods", node.max_pods),
        kubelet_flag("kube-reserved", reserved),
        kubelet_flag("eviction-hard", EVICTION_HARD),
        kubelet_flag("cluster-dns", cluster.dns_service_ip),
        kubelet_flag("cpu-manager-policy", k.cpu_manager_policy),
        kubelet_flag("cpu-cfs-quota", k.cpu_cfs_quota),
        kubelet_flag("cpu-cfs-quota-period", k.cpu_cfs_quota_period),
        kubelet_flag("image-gc-high-threshold", k.image_gc_high_threshold_percent),
        kubelet_flag("image-gc-low-threshold", k.image_gc_low_threshold_percent),
        kubelet_flag("topology-manager-policy", k.topology_manager_policy),
        kubelet_flag("allowed-unsafe-sysctls", k.allowed_unsafe_sysctls),
        kubelet_flag("container-log-max-size", k.container_log_max_size),
        kubelet_flag("container-log-max-files", k.container_log_max_files),
        kubelet_flag("pod-max-pids", k.pod_pids_limit),
        kubelet_flag("fail-swap-on", k.fail_swap_on),
        kubelet_flag("node-labels", kubelet_labels(node.labels)),
        kubelet_flag("register-with-taints", [_taint(t) for t in node.taints]),
    )


def script(cluster: ClusterBootstrap, node: NodeBootstrap) -> str:
    """The bootstrap script (plain text)."""
    variables = {
        "CLUSTER_NAME": cluster.cluster_name,
        "API_SERVER_NAME": cluster.endpoint,
        "KUBE_CA_CRT": base64.b64encode(cluster.ca_pem.encode()).decode(),
        "TLS_BOOTSTRAP_TOKEN": cluster.bootstrap_token,
        "KUBERNETES_VERSION": cluster.kubernetes_version,
        "NETWORK_PLUGIN": cluster.network_plugin,
        "NETWORK_POLICY": cluster.network_policy,
        "USER_ASSIGNED_IDENTITY_ID": cluster.kubelet_identity_client_id,
        "SUBSCRIPTION_ID": cluster.subscription_id,
        "RESOURCE_GROUP": cluster.resource_group,
        "LOCATION": cluster.location,
        "TENANT_ID": cluster.tenant_id,
        "SUBNET_ID": cluster.subnet_id,
        "NODE_NAME": node.node_name,
        "ARCH": node.arch,
        "MAX_PODS": str(node.max_pods),
        "KUBELET_FLAGS": " ".join(node_kubelet_flags(cluster, node)),
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
