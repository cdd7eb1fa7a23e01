"""Which model class reads each (apiVersion, kind): the kinds the core serves, the ones
providers register, and what to say about a kind nothing serves."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.apps import (
    CSINode,
    DaemonSet,
    Deployment,
    Job,
    PodDisruptionBudget,
    ReplicaSet,
    StatefulSet,
    StorageClass,
)
from nodewright.api.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.api.core import (
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Service,
)
from nodewright.api.excerpt import cut
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.meta import KubeObject
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.resource import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)

CORE_KINDS: tuple[type[KubeObject], ...] = (
    Namespace,
    Pod,
    Node,
    PersistentVolumeClaim,
    PersistentVolume,
    Service,
    PodTemplate,
    CapacityBuffer,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    PodDisruptionBudget,
    StorageClass,
    CSINode,
    NodePool,
    NodeClaim,
    NodeOverlay,
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)

#: Kinds Karpenter retired, and what replaced them.
_RETIRED_KINDS = {
    "Provisioner": "NodePool (karpenter.sh/v1)",
    "Machine": "NodeClaim (karpenter.sh/v1)",
    "AWSNodeTemplate": "EC2NodeClass (karpenter.k8s.aws/v1)",
}


class KindRegistry:
    """Which model class reads each (apiVersion, kind).

    Starts with the Kubernetes and Karpenter kinds the core knows; providers register their
    NodeClass kinds.
    """

    def __init__(self) -> None:
        self._models: dict[tuple[str, str], type[KubeObject]] = {}
        for model in CORE_KINDS:
            self.register(model)

    def register(self, model: type[KubeObject], extra_versions: Sequence[str] = ()) -> None:
        """Serve ``model`` at its ``API_VERSION`` and at ``extra_versions``.

        An extra version may be a full apiVersion (``group/v1beta1``) or just the version
        (``v1beta1``), which is taken to be in the model's group.
        """
        if not model.KIND:
            raise ValueError(f"{model.__name__} declares no KIND")
        group, slash, _ = model.API_VERSION.rpartition("/")
        for version in (model.API_VERSION, *extra_versions):
            api_version = f"{group}/{version}" if slash and "/" not in version else version
            key = (api_version, model.KIND)
            existing = self._models.get(key)
            if existing is not None and existing is not model:
                raise ValueError(
                    f"{api_version} {model.KIND} is already served by {existing.__name__}; "
                    f"cannot also register {model.__name__}"
                )
            self._models[key] = model

    def lookup(self, api_version: str, kind: str) -> type[KubeObject] | None:
        return self._models.get((api_version, kind))

    def kinds(self) -> list[tuple[str, str]]:
        """Every served (apiVersion, kind), sorted."""
        return sorted(self._models)

    def versions(self, kind: str) -> list[str]:
        """The apiVersions at which ``kind`` is served."""
        return sorted(version for version, served in self._models if served == kind)


def unsupported_kind(api_version: str, kind: str, registry: KindRegistry) -> str:
    shown_kind, shown_version = cut(kind, 80), cut(api_version, 80)
    served = registry.versions(kind)
    if served:
        return f"apiVersion {shown_version} is not served for {shown_kind}; use {', '.join(served)}"
    replacement = _RETIRED_KINDS.get(kind)
    if replacement is not None:
        return f"kind {shown_kind} ({shown_version}) is no longer supported; use {replacement}"
    supported = sorted({served_kind for _, served_kind in registry.kinds()})
    return (
        f"unknown kind {shown_kind} (apiVersion {shown_version}); "
        f"supported kinds: {', '.join(supported)}"
    )
