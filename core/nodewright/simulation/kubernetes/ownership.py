"""Owner references as the workload controllers use them: who controls an object, and
objects created for an owner."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TypeVar

from nodewright.api.core import Pod, PodTemplateSpec
from nodewright.api.meta import KubeObject, ObjectMeta, OwnerReference
from nodewright.cluster import AlreadyExistsError
from nodewright.cluster.memory import MemoryCluster, copy_object

K = TypeVar("K", bound=KubeObject)


def controller_uid(obj: KubeObject) -> str | None:
    """The UID of the object's controller (its ownerReference with ``controller: true``)."""
    for ref in obj.metadata.owner_references:
        if ref.controller:
            return ref.uid
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


def by_controller(objects: Iterable[K]) -> dict[str, list[K]]:
    """Objects grouped by their controller's UID; objects without one are left out."""
    owned: dict[str, list[K]] = defaultdict(list)
    for obj in objects:
        uid = controller_uid(obj)
        if uid is not None:
            owned[uid].append(obj)
    return owned


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
        spec=copy_object(template.spec),
    )


def create_unless_taken(cluster: MemoryCluster, obj: KubeObject) -> None:
    """Create an object with a fixed name; an unrelated object holding it blocks (and the
    real controllers, too, wait for the name to be freed)."""
    try:
        cluster.create(obj)
    except AlreadyExistsError:
        return
