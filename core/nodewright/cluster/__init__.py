"""The cluster port: the only way controllers read and write Kubernetes objects.

Two adapters implement :class:`Cluster`: :class:`nodewright.cluster.memory.MemoryCluster`, an
in-memory API store used by ``nodewright simulate`` and the tests, and (for ``nodewright run``)
an adapter over the Kubernetes API server. Controllers depend on this protocol only.

Semantics follow the API server: every write bumps a cluster-wide ``resourceVersion``;
``update`` with a stale ``resourceVersion`` raises :class:`ConflictError`; ``delete`` of an
object with finalizers only sets ``deletionTimestamp``, and the object disappears when its
last finalizer is removed; ``create`` fills ``uid``, ``creationTimestamp`` and, from
``generateName``, ``name``.

Reads never copy: ``get`` and ``list`` return the objects the adapter's
:class:`~nodewright.cluster.state.ClusterState` holds, shared by every reader, so they must be
treated as read-only. To change an object, take a :func:`~nodewright.cluster.objects.mutable`
copy, change that and write it back; what a write returns is the caller's own copy. Controllers
that need more than a lookup read the state's indexes and drain change feeds from it instead of
listing whole kinds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from nodewright.api.core import Event
from nodewright.api.meta import KubeObject

if TYPE_CHECKING:
    from nodewright.cluster.state import ClusterState

T = TypeVar("T", bound=KubeObject)


class ClusterError(Exception):
    """Base for API errors."""


class NotFoundError(ClusterError):
    """The object does not exist."""


class AlreadyExistsError(ClusterError):
    """An object with that name already exists."""


class ConflictError(ClusterError):
    """The object changed since it was read (stale resourceVersion)."""


class InvalidError(ClusterError):
    """The API server rejected the object."""


class ReadOnlyViolation(RuntimeError):
    """A reader changed a shared object in place (a programming error, never an API answer)."""


class EvictionBlockedError(ClusterError):
    """An eviction would violate a PodDisruptionBudget (HTTP 429 from the Eviction API)."""


@dataclass(frozen=True)
class WatchEvent:
    """A change to one object, in resourceVersion order."""

    type: Literal["ADDED", "MODIFIED", "DELETED"]
    object: KubeObject
    resource_version: int


class Cluster(Protocol):
    """Reads and writes Kubernetes objects. See the module docstring for semantics."""

    #: Every object the adapter holds, indexed, with change feeds (shared, read-only).
    state: ClusterState

    def get(self, kind: type[T], name: str, namespace: str = "") -> T | None:
        """The object (shared, read-only), or None when it does not exist."""
        ...

    def list(
        self,
        kind: type[T],
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[T]:
        """Objects of ``kind`` (in ``namespace`` if given) whose labels include ``labels``,
        sorted by namespace and name (shared, read-only)."""
        ...

    def create(self, obj: T) -> T:
        """Store a new object; returns it as stored (shared and read-only, like a read: take a
        mutable() copy to change it further)."""
        ...

    def update(self, obj: T) -> T:
        """Replace metadata and spec (status is ignored); raises ConflictError when stale.
        Returns the object as stored (shared and read-only)."""
        ...

    def update_status(self, obj: T) -> T:
        """Replace status only; raises ConflictError when stale. Returns the object as stored
        (shared and read-only)."""
        ...

    def delete(self, kind: type[T], name: str, namespace: str = "") -> None:
        """Delete, or mark for deletion when finalizers remain. Missing objects are ignored."""
        ...

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        """Bind a pod to a node (the Binding subresource)."""
        ...

    def evict(self, pod_name: str, namespace: str) -> None:
        """Evict a pod through the Eviction API; raises EvictionBlockedError under a PDB."""
        ...

    def record_event(self, event: Event) -> None:
        """Write an Event, best effort: never raises and never waits for the API server.

        ``count`` 1 creates it; a higher count is a repeat of the Event of the same name (its
        count and last time are patched, or it is created if it is gone).
        """
        ...

    def resource_version(self) -> int:
        """The latest resourceVersion written (a change counter for quiescence checks)."""
        ...

    def sync(self) -> None:
        """Bring :attr:`state` up to date with what the adapter received from elsewhere.

        The operator calls it before each pass. An adapter that applies every change as it
        happens (the in-memory store) has nothing to do.
        """
        ...


def object_version(cluster: Cluster) -> int:
    """A change counter for "did anything a controller reads change": the cluster's
    :meth:`~Cluster.resource_version` less the writes to Events. No controller reads Events
    (Karpenter's do not watch them), so a pass that only recorded one, such as a repeat of
    ``Unconsolidatable`` every 15 minutes, changes nothing the next pass would look at."""
    return cluster.resource_version() - cluster.state.kind_version(Event)
