"""An in-memory API server: the :class:`~nodewright.cluster.Cluster` adapter for simulations
and tests.

It keeps the API server's rules that controllers depend on (resourceVersion conflicts,
finalizers and ``deletionTimestamp``, garbage collection through ownerReferences, the
Binding and Eviction subresources, watch order) and nothing else: no admission, no
defaulting beyond what the rules need, no validation of specs. Everything random (UIDs,
generated names) comes from one seeded generator, so a simulation replays exactly.

Objects live in a :class:`~nodewright.cluster.state.ClusterState` and are read without copying:
what ``get`` and ``list`` return is shared and read-only. Every write stores a private copy of
what it was given and replaces the stored object instead of mutating it, so an object read once
never changes afterwards. With ``check_read_only`` (the test suite turns it on) the store keeps a
pristine copy of every stored object and raises :class:`~nodewright.cluster.ReadOnlyViolation`
when a reader changed one in place. The store is single-threaded, like the simulation loop that
drives it.

For crash-consistency tests a :class:`~nodewright.cluster.faults.FaultPoint` armed with
:meth:`MemoryCluster.crash_at` raises :class:`~nodewright.cluster.faults.Crash` just before or
just after a matching write, stopping the writer there as if its process had died (the store
itself stays consistent). Evictions are checked against PodDisruptionBudgets as the API
server checks them (:mod:`nodewright.cluster.eviction`).
"""

from __future__ import annotations

import builtins
import itertools
import os
import random
import string
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any, Literal, TypeVar

from nodewright.api.core import Event, LabelSelector, Pod, PodCondition
from nodewright.api.meta import KubeObject, shallow_copy
from nodewright.clock import Clock
from nodewright.cluster import (
    AlreadyExistsError,
    ClusterError,
    ConflictError,
    InvalidError,
    NotFoundError,
    ReadOnlyViolation,
    WatchEvent,
)
from nodewright.cluster.eviction import EvictionCheck
from nodewright.cluster.faults import Crash, FaultPoint, WriteVerb
from nodewright.cluster.objects import collector_paused, mutable
from nodewright.cluster.selectors import label_selector_matches
from nodewright.cluster.state import ClusterState

T = TypeVar("T", bound=KubeObject)

#: Set (to "1") to make every MemoryCluster check that readers never change shared objects.
CHECK_READ_ONLY_ENV = "NODEWRIGHT_CHECK_READ_ONLY"
#: The old name of :func:`~nodewright.cluster.objects.mutable`, still used by some callers.
copy_object = mutable
__all__ = ["collector_paused", "copy_object"]

DEFAULT_NAMESPACE = "default"
#: How many watch events the store remembers; older resourceVersions are "gone" (HTTP 410).
#: Each event keeps the object version it wrote alive, so this bounds the memory it holds.
WATCH_HISTORY = 10_000
_NAME_SUFFIX_ALPHABET = string.ascii_lowercase + string.digits
_NAME_SUFFIX_LENGTH = 5
_MAX_NAME_ATTEMPTS = 64

_Key = tuple[str, str]  # (namespace, name); namespace is "" for cluster-scoped kinds


class WatchExpiredError(ClusterError):
    """The requested resourceVersion is older than the watch history (HTTP 410 Gone)."""


# --- the store ----------------------------------------------------------------------------------


class MemoryCluster:
    """Kubernetes objects in memory, with API-server semantics (see the module docstring)."""

    def __init__(self, clock: Clock, seed: int = 0, *, check_read_only: bool | None = None) -> None:
        self._clock = clock
        self._rng = random.Random(seed)
        self._resource_version = 0
        self.state = ClusterState()
        self._check_eviction = EvictionCheck(self.state)
        self._objects = self.state._objects
        if check_read_only is None:
            check_read_only = os.environ.get(CHECK_READ_ONLY_ENV) == "1"
        #: (kind, key) -> a private copy of the stored object, when checking readers.
        self._pristine: dict[tuple[type[KubeObject], _Key], KubeObject] | None = (
            {} if check_read_only else None
        )
        self._by_uid: dict[str, tuple[type[KubeObject], _Key]] = {}
        #: owner uid -> dependents that name it in ownerReferences
        self._dependents: dict[str, set[tuple[type[KubeObject], _Key]]] = {}
        self._history: deque[WatchEvent] = deque(maxlen=WATCH_HISTORY)
        self._fault_points: builtins.list[FaultPoint] = []

    # -- fault points ----------------------------------------------------------------------------

    def crash_at(self, point: FaultPoint) -> None:
        """Arm ``point``: the first write it matches raises :class:`Crash` (once)."""
        self._fault_points.append(point)

    def disarm(self) -> None:
        """Remove every armed fault point."""
        self._fault_points.clear()

    def _fault(
        self,
        verb: WriteVerb,
        kind: type[KubeObject],
        before: bool,
        old: KubeObject | None,
        new: KubeObject | None,
    ) -> None:
        for point in self._fault_points:
            if point.matches(verb, kind, before, old, new):
                self._fault_points.remove(point)
                raise Crash(f"crashed {'before' if before else 'after'} {point.name}")

    # -- reads -----------------------------------------------------------------------------------

    def get(self, kind: type[T], name: str, namespace: str = "") -> T | None:
        return self.state.get(kind, self._key(kind, name, namespace))

    def list(
        self,
        kind: type[T],
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> builtins.list[T]:
        return builtins.list(self.peek(kind, namespace, labels))

    def select(
        self, kind: type[T], selector: LabelSelector, namespace: str | None = None
    ) -> builtins.list[T]:
        """Objects whose labels satisfy a full label selector, sorted by namespace and name."""
        return [
            obj
            for obj in self.peek(kind, namespace)
            if label_selector_matches(selector, obj.metadata.labels)
        ]

    def peek(
        self,
        kind: type[T],
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Iterator[T]:
        """The stored objects, sorted by namespace and name, as a lazy iterator (read-only)."""
        if not labels:
            yield from self.state.sorted(kind, namespace)
            return
        wanted = builtins.list(labels.items())
        for obj in self.state.sorted(kind, namespace):
            own = obj.metadata.labels
            if all(own.get(k) == v for k, v in wanted):
                yield obj

    def resource_version(self) -> int:
        return self._resource_version

    def sync(self) -> None:
        """Nothing to do: every write reaches the state as it happens."""

    def watch(self, since: int) -> builtins.list[WatchEvent]:
        """Every change after resourceVersion ``since``, oldest first.

        Raises :class:`WatchExpiredError` when ``since`` is older than the kept history, as
        the API server answers 410 Gone; the watcher should then list again.
        """
        if since >= self._resource_version:
            return []
        oldest = self._history[0].resource_version if self._history else self._resource_version + 1
        if since + 1 < oldest:
            raise WatchExpiredError(
                f"resourceVersion {since} is too old; the watch history starts after {oldest - 1}"
            )
        start = since + 1 - self._history[0].resource_version
        return builtins.list(itertools.islice(self._history, start, None))

    # -- read-only checking ---------------------------------------------------------------------

    def verify_read_only(self) -> None:
        """Raise :class:`ReadOnlyViolation` if a reader changed a stored object in place.

        Only when the store was made with ``check_read_only``; otherwise it does nothing.
        """
        if self._pristine is None:
            return
        for (kind, key), pristine in self._pristine.items():
            self._verify(kind, key, pristine)

    def _verify(self, kind: type[KubeObject], key: _Key, pristine: KubeObject | None) -> None:
        stored = self._objects.get(kind, {}).get(key)
        if stored is not None and pristine is not None and stored != pristine:
            where = f"{key[0]}/" if key[0] else ""
            raise ReadOnlyViolation(
                f"{kind.KIND} {where}{key[1]} was changed in place by a reader; "
                "take a mutable() copy, change that and write it back"
            )

    def _check_before_write(self, kind: type[KubeObject], key: _Key, given: object) -> None:
        stored = self._objects.get(kind, {}).get(key)
        if given is not None and given is stored:
            where = f"{key[0]}/" if key[0] else ""
            raise ReadOnlyViolation(
                f"{kind.KIND} {where}{key[1]}: the object written is the shared one that was "
                "read; take a mutable() copy, change that and write it back"
            )
        if self._pristine is not None:
            self._verify(kind, key, self._pristine.get((kind, key)))

    # -- writes ----------------------------------------------------------------------------------

    def create(self, obj: T) -> T:
        return self._create(mutable(obj))

    def adopt(self, obj: T) -> T:
        """Store ``obj`` itself as a new object, without the private copy :meth:`create` makes.

        The caller hands it over and never touches it again. Its metadata and status must be
        its own (the store stamps them); the rest may be shared, read-only, with stored objects:
        the embedded ReplicaSet controller makes replicas this way, so the pods of one template
        share one spec instead of holding 100,000 copies of it.
        """
        return self._create(obj)

    def _create(self, new: T) -> T:
        kind = type(new)
        meta = new.metadata
        if kind.NAMESPACED:
            meta.namespace = meta.namespace or DEFAULT_NAMESPACE
        else:
            meta.namespace = None
        objects = self._objects.setdefault(kind, {})
        if not meta.name:
            if not meta.generate_name:
                raise InvalidError(f"{kind.KIND}: metadata.name or generateName is required")
            meta.name = self._generated_name(kind, meta.generate_name, meta.namespace or "")
        key = (meta.namespace or "", meta.name)
        if key in objects:
            where = f"{meta.namespace}/" if meta.namespace else ""
            raise AlreadyExistsError(f'{kind.KIND} "{where}{meta.name}" already exists')
        if self._fault_points:
            self._fault("create", kind, True, None, new)
        meta.uid = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        meta.creation_timestamp = self._clock.now()
        meta.deletion_timestamp = None
        meta.generation = 1
        if isinstance(new, Pod) and new.status.phase is None:
            new.status.phase = "Pending"
        self._store(kind, key, new, None, "ADDED")
        if self._fault_points:
            self._fault("create", kind, False, None, new)
        return new

    def update(self, obj: T) -> T:
        kind = type(obj)
        key, current = self._current(obj)
        new = mutable(obj)
        meta, old_meta = new.metadata, current.metadata
        if old_meta.deletion_timestamp is not None and set(meta.finalizers) - set(
            old_meta.finalizers
        ):
            raise InvalidError(
                f"{kind.KIND} {current.key}: no new finalizers can be added while it is deleting"
            )
        meta.namespace = old_meta.namespace
        meta.uid = old_meta.uid
        meta.creation_timestamp = old_meta.creation_timestamp
        meta.deletion_timestamp = old_meta.deletion_timestamp
        meta.generation = old_meta.generation
        meta.resource_version = old_meta.resource_version
        meta.generate_name = old_meta.generate_name
        if "status" in kind.model_fields:
            new.__dict__["status"] = getattr(current, "status")  # noqa: B009 - shared, never mutated
        if _spec_of(new) != _spec_of(current):
            meta.generation = (old_meta.generation or 0) + 1
        if new == current:
            return current
        if self._fault_points:
            self._fault("update", kind, True, current, new)
        if meta.deletion_timestamp is not None and not meta.finalizers:
            self._remove(kind, key, new)
        else:
            self._store(kind, key, new, current, "MODIFIED")
        if self._fault_points:
            self._fault("update", kind, False, current, new)
        return new

    def update_status(self, obj: T) -> T:
        kind = type(obj)
        if "status" not in kind.model_fields:
            raise InvalidError(f"{kind.KIND} has no status subresource")
        key, current = self._current(obj)
        new = _with_status(current, mutable(getattr(obj, "status")))  # noqa: B009
        if new == current:
            return current
        if self._fault_points:
            self._fault("update_status", kind, True, current, new)
        self._store(kind, key, new, current, "MODIFIED")
        if self._fault_points:
            self._fault("update_status", kind, False, current, new)
        return new

    def delete(self, kind: type[T], name: str, namespace: str = "") -> None:
        key = self._key(kind, name, namespace)
        current = self._objects.get(kind, {}).get(key)
        if current is None:
            return
        if self._fault_points:
            self._fault("delete", kind, True, current, None)
        self._delete_stored(kind, key, current)
        if self._fault_points:
            self._fault("delete", kind, False, current, self._objects.get(kind, {}).get(key))

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        key = self._key(Pod, pod_name, namespace)
        current = self._objects.get(Pod, {}).get(key)
        if not isinstance(current, Pod):
            raise NotFoundError(f'pods "{pod_name}" not found in namespace "{namespace}"')
        if current.spec.node_name:
            raise ConflictError(
                f"pod {current.key} is already assigned to node {current.spec.node_name!r}"
            )
        if current.deleting:
            raise InvalidError(f"pod {current.key} is being deleted")
        if self._pristine is not None:
            self._check_before_write(Pod, key, None)
        # A new version that shares what binding leaves alone with the old one (stored
        # objects are never changed in place): the spec's other fields, the containers.
        pod = _revised(current)
        pod.spec = shallow_copy(current.spec)
        pod.status = shallow_copy(current.status)
        pod.status.conditions = [shallow_copy(c) for c in current.status.conditions]
        pod.spec.node_name = node_name
        now = self._clock.now()
        scheduled = pod.condition("PodScheduled")
        if scheduled is None:
            pod.status.conditions.append(
                PodCondition(type="PodScheduled", status="True", last_transition_time=now)
            )
        else:
            if scheduled.status != "True":
                scheduled.last_transition_time = now
            scheduled.status = "True"
            scheduled.reason = None
            scheduled.message = None
        pod.status.nominated_node_name = None
        if self._fault_points:
            self._fault("bind", Pod, True, current, pod)
        self._store(Pod, key, pod, current, "MODIFIED")
        if self._fault_points:
            self._fault("bind", Pod, False, current, pod)

    def catch_up_evictions(self) -> None:
        """Count what changed since the last eviction into the eviction check's budgets now:
        the simulated control plane calls this on each pass, so the changes it follows are
        not held until the next drain."""
        self._check_eviction.catch_up()

    def evict(self, pod_name: str, namespace: str) -> None:
        key = self._key(Pod, pod_name, namespace)
        current = self._objects.get(Pod, {}).get(key)
        if not isinstance(current, Pod):
            raise NotFoundError(f'pods "{pod_name}" not found in namespace "{namespace}"')
        self._check_eviction(current)
        if self._fault_points:
            self._fault("evict", Pod, True, current, None)
        self._delete_stored(Pod, key, current)
        if self._fault_points:
            self._fault("evict", Pod, False, current, None)

    # -- internals -------------------------------------------------------------------------------

    def record_event(self, event: Event) -> None:
        """Store an Event at once (the store is local: nothing to queue)."""
        stored = self.get(Event, event.name, event.metadata.namespace or DEFAULT_NAMESPACE)
        if stored is None:
            self.create(event)
            return
        repeat = mutable(stored)
        repeat.count = max(stored.count + 1, event.count)
        repeat.last_timestamp = event.last_timestamp
        repeat.message = event.message
        self.update(repeat)

    def _key(self, kind: type[KubeObject], name: str, namespace: str) -> _Key:
        if kind.NAMESPACED:
            return (namespace or DEFAULT_NAMESPACE, name)
        return ("", name)

    def _current(self, obj: T) -> tuple[_Key, T]:
        kind = type(obj)
        key = self._key(kind, obj.name, obj.namespace)
        current = self._objects.get(kind, {}).get(key)
        if current is None:
            where = f' in namespace "{key[0]}"' if key[0] else ""
            raise NotFoundError(f'{kind.KIND} "{obj.name}" not found{where}')
        self._check_before_write(kind, key, obj)
        given = obj.metadata.resource_version
        if given and given != current.metadata.resource_version:
            raise ConflictError(
                f'Operation cannot be fulfilled on {kind.KIND} "{obj.name}": the object has been '
                "modified; please apply your changes to the latest version and try again"
            )
        return key, current  # type: ignore[return-value]

    def _generated_name(self, kind: type[KubeObject], prefix: str, namespace: str) -> str:
        objects = self._objects.get(kind, {})
        for _ in range(_MAX_NAME_ATTEMPTS):
            suffix = "".join(self._rng.choices(_NAME_SUFFIX_ALPHABET, k=_NAME_SUFFIX_LENGTH))
            if (namespace, prefix + suffix) not in objects:
                return prefix + suffix
        raise AlreadyExistsError(f"could not generate a unique name from {prefix!r}")

    def _next_version(self) -> int:
        self._resource_version += 1
        return self._resource_version

    def _store(
        self,
        kind: type[KubeObject],
        key: _Key,
        new: KubeObject,
        old: KubeObject | None,
        event: Literal["ADDED", "MODIFIED"],
    ) -> None:
        version = self._next_version()
        new.metadata.resource_version = str(version)
        self.state.apply(kind, key, old, new)
        if self._pristine is not None:
            self._pristine[(kind, key)] = mutable(new)
        uid = new.metadata.uid or ""
        self._by_uid[uid] = (kind, key)
        old_owners = {ref.uid for ref in old.metadata.owner_references} if old else set()
        new_owners = {ref.uid for ref in new.metadata.owner_references}
        for owner in old_owners - new_owners:
            self._dependents.get(owner, set()).discard((kind, key))
        for owner in new_owners - old_owners:
            self._dependents.setdefault(owner, set()).add((kind, key))
        self._history.append(WatchEvent(type=event, object=new, resource_version=version))

    def _delete_stored(self, kind: type[KubeObject], key: _Key, current: KubeObject) -> None:
        if current.metadata.finalizers:
            if current.metadata.deletion_timestamp is None:
                marked = _revised(current)
                marked.metadata.deletion_timestamp = self._clock.now()
                self._store(kind, key, marked, current, "MODIFIED")
            return
        self._remove(kind, key, current)

    def _remove(self, kind: type[KubeObject], key: _Key, final: KubeObject) -> None:
        """Drop an object, record its DELETED event, and collect its dependents."""
        self.state.apply(kind, key, final, None)
        if self._pristine is not None:
            self._pristine.pop((kind, key), None)
        uid = final.metadata.uid or ""
        self._by_uid.pop(uid, None)
        for ref in final.metadata.owner_references:
            self._dependents.get(ref.uid, set()).discard((kind, key))
        gone = _revised(final)
        version = self._next_version()
        gone.metadata.resource_version = str(version)
        self._history.append(WatchEvent(type="DELETED", object=gone, resource_version=version))
        self._collect_dependents(uid)

    def _collect_dependents(self, owner_uid: str) -> None:
        """Background garbage collection: a dependent goes once none of its owners exist."""
        dependents = self._dependents.pop(owner_uid, set())
        for kind, key in sorted(dependents, key=lambda d: (d[0].KIND, d[1])):
            current = self._objects.get(kind, {}).get(key)
            if current is None:
                continue
            refs = current.metadata.owner_references
            if any(ref.uid != owner_uid and ref.uid in self._by_uid for ref in refs):
                orphaned = _revised(current)
                orphaned.metadata.owner_references = [r for r in refs if r.uid != owner_uid]
                self._store(kind, key, orphaned, current, "MODIFIED")
                continue
            self._delete_stored(kind, key, current)


def _revised(obj: T) -> T:
    """A new version of a stored object to change its metadata on: it shares everything else
    with ``obj`` (never changed in place) and has metadata of its own, which the store stamps."""
    clone = shallow_copy(obj)
    meta = shallow_copy(obj.metadata)
    meta.finalizers = list(meta.finalizers)
    meta.owner_references = list(meta.owner_references)
    clone.__dict__["metadata"] = meta
    return clone


def _with_status(obj: T, status: Any) -> T:
    """A new version of ``obj`` with ``status``: it shares the (never mutated) spec with the
    old one and gets its own metadata, which the store stamps."""
    clone = shallow_copy(obj)
    clone.__dict__["status"] = status
    clone.__dict__["metadata"] = shallow_copy(obj.metadata)
    return clone


def _spec_of(obj: KubeObject) -> dict[str, Any]:
    """Everything but metadata and status: what a change to bumps ``generation``."""
    return {k: v for k, v in obj.__dict__.items() if k not in ("metadata", "status")} | {
        "__extra__": obj.__pydantic_extra__
    }
