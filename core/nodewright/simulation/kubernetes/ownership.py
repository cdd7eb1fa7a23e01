"""Owner references as the workload controllers use them: who controls an object, and
objects created for an owner."""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.api.core import Pod, PodStatus, PodTemplateSpec
from nodewright.api.meta import KubeObject, ObjectMeta, OwnerReference, shallow_copy
from nodewright.cluster import AlreadyExistsError
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import Key


def controller_uid(obj: KubeObject) -> str | None:
    """The UID of the object's controller (its ownerReference with ``controller: true``)."""
    for ref in obj.metadata.owner_references:
        if ref.controller:
            return ref.uid
    return None


def controller_key(obj: KubeObject, kind: type[KubeObject]) -> Key | None:
    """The key of the object's controller when it is a ``kind`` (owners share the namespace)."""
    for ref in obj.metadata.owner_references:
        if ref.controller:
            return (obj.metadata.namespace or "", ref.name) if ref.kind == kind.KIND else None
    return None


def controller_ref(owner: KubeObject) -> OwnerReference:
    return OwnerReference(
        api_version=owner.api_version,
        kind=owner.kind,
        name=owner.name,
        uid=owner.metadata.uid or "",
        controller=True,
        block_owner_deletion=True,
    )


def pod_from_template(
    template: PodTemplateSpec,
    owner: KubeObject,
    *,
    name: str = "",
    generate_name: str = "",
    labels: Mapping[str, str] | None = None,
) -> Pod:
    """A pod for ``owner`` from its template, controlled by it."""
    return Pod(
        metadata=ObjectMeta(
            name=name,
            generate_name=generate_name or None,
            namespace=owner.namespace,
            labels={**template.metadata.labels, **(labels or {})},
            annotations=dict(template.metadata.annotations),
            owner_references=[controller_ref(owner)],
        ),
        spec=mutable(template.spec),
    )


def create_unless_taken(cluster: MemoryCluster, obj: KubeObject) -> bool:
    """Create an object with a fixed name; False when an object holding the name blocks it
    (the real controllers, too, wait for the name to be freed)."""
    try:
        cluster.create(obj)
    except AlreadyExistsError:
        return False
    return True


def replica_of(prototype: Pod) -> Pod:
    """A new pod like ``prototype`` (a pod from a template, never stored itself) for
    :meth:`~nodewright.cluster.memory.MemoryCluster.adopt`: its own metadata and status, and the
    prototype's spec, labels, annotations and owner references, shared and read-only."""
    replica = shallow_copy(prototype)
    replica.__dict__["metadata"] = shallow_copy(prototype.metadata)
    replica.__dict__["status"] = PodStatus()
    return replica
