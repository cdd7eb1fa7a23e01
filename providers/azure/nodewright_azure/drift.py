"""Drift (Karpenter Azure's cloudprovider drift): the AKSNodeClass spec changed since launch
(its hash annotation, same hash version), the node's image is not one the class resolves to
now (a newer node image was published), or the Node's kubelet runs another Kubernetes version
than the cluster's (``azure.kubernetes-version``), or the Node's kubelet identity label is not
``azure.kubelet-identity-client-id`` (VM nodes). Also re-stamps NodeClaims hashed under
another hash version, so later class changes drift them."""

from __future__ import annotations

from nodewright.plugin import (
    Node,
    NodeClaim,
    NodeClassNotReadyError,
    ProviderCluster,
    TemporaryProviderError,
    restamp_hashes,
)
from nodewright_azure import labels as L
from nodewright_azure.images import ImageProvider
from nodewright_azure.nodeclass import (
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    AKSNodeClass,
    AKSNodeClassSpec,
    spec_hash,
)
from nodewright_azure.options import Settings

#: Drift reasons (Karpenter Azure's).
NODECLASS_DRIFT = "NodeClassDrift"
IMAGE_DRIFT = "ImageDrift"
K8S_VERSION_DRIFT = "K8sVersionDrift"
KUBELET_IDENTITY_DRIFT = "KubeletIdentityDrift"


def drift_annotations(spec: AKSNodeClassSpec) -> dict[str, str]:
    """The annotations written on a NodeClaim at launch, that drift compares against."""
    return {HASH_ANNOTATION: spec_hash(spec), HASH_VERSION_ANNOTATION: HASH_VERSION}


def drift_reason(
    node_claim: NodeClaim,
    spec: AKSNodeClassSpec,
    settings: Settings,
    images: ImageProvider,
    cluster: ProviderCluster | None,
) -> str | None:
    """Why the claim drifted from its class, or None (also when the images cannot be read)."""
    annotations = node_claim.metadata.annotations
    launched_hash = annotations.get(HASH_ANNOTATION)
    if (
        launched_hash is not None
        and annotations.get(HASH_VERSION_ANNOTATION) == HASH_VERSION
        and launched_hash != spec_hash(spec)
    ):
        return NODECLASS_DRIFT
    image = node_claim.status.image_id
    if image and not settings.missing():
        try:
            current = images.node_images(spec)
        except (TemporaryProviderError, NodeClassNotReadyError):
            return None
        if current and image.lower() not in {i.id.lower() for i in current}:
            return IMAGE_DRIFT
    wanted = settings.kubernetes_version
    running = kubelet_version(node_claim, cluster)
    if wanted and running and release(running) != release(wanted):
        return K8S_VERSION_DRIFT
    if L.AKS_MACHINE_ANNOTATION not in annotations:  # AKS sets an AKS machine's identity
        identity = node_label(node_claim, cluster, L.AKS_KUBELET_IDENTITY)
        # A node without the label (launched before it existed) is not drifted.
        if identity and identity != settings.kubelet_identity_client_id:
            return KUBELET_IDENTITY_DRIFT
    return None


def node_label(node_claim: NodeClaim, cluster: ProviderCluster | None, key: str) -> str:
    """A label of the claim's Node ("" when the Node or the label is unknown)."""
    name = node_claim.status.node_name
    node = cluster.get(Node, name) if cluster is not None and name else None
    return "" if node is None else node.metadata.labels.get(key, "")


def kubelet_version(node_claim: NodeClaim, cluster: ProviderCluster | None) -> str | None:
    """The kubelet version the claim's Node reports (``status.nodeInfo``), if known."""
    name = node_claim.status.node_name
    if cluster is None or not name:
        return None
    node = cluster.get(Node, name)
    if node is None:
        return None
    info = (node.status.model_extra or {}).get("nodeInfo") or {}
    version = info.get("kubeletVersion") if isinstance(info, dict) else None
    return version if isinstance(version, str) and version else None


def release(version: str) -> tuple[int, ...]:
    """``v1.30.3`` / ``1.30.3-hotfix.1`` / ``v1.30.3+aks`` as (1, 30, 3)."""
    core = version.strip().removeprefix("v").split("+")[0].split("-")[0]
    try:
        return tuple(int(part) for part in core.split("."))
    except ValueError:
        return ()


def restamp(cluster: ProviderCluster) -> list[str]:
    """Re-stamp NodeClaims hashed under another version (Karpenter Azure's ``v3`` on
    takeover) with the class's current hash, so later class changes drift them."""
    return restamp_hashes(
        cluster,
        AKSNodeClass,
        HASH_VERSION_ANNOTATION,
        HASH_VERSION,
        lambda node_class: drift_annotations(node_class.spec),
    )
