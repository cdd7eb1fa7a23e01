"""The :class:`~nodewright.cluster.Cluster` adapter over a real API server (see the package
docstring for the semantics it keeps)."""

from __future__ import annotations

import builtins
import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from nodewright.api.core import Event, Pod
from nodewright.api.meta import KubeObject, compact
from nodewright.cluster import (
    EvictionBlockedError,
    InvalidError,
    ReadOnlyViolation,
)
from nodewright.cluster.fence import Fence
from nodewright.cluster.kube.credentials import api_client
from nodewright.cluster.kube.events import EVENTS_V1, EventsApi, events_v1_path
from nodewright.cluster.kube.eventwriter import EventWriter
from nodewright.cluster.kube.informer import Informer, Key
from nodewright.cluster.kube.lease import LeaseClient
from nodewright.cluster.kube.patch import (
    JSON_PATCH,
    as_stored,
    json_patch,
    precondition_failed,
    spec_and_metadata,
    status_of,
)
from nodewright.cluster.kube.replace import replace_from_server
from nodewright.cluster.kube.routing import collection_path, object_path, plural_of
from nodewright.cluster.kube.slim import READ_ONLY, slimmed
from nodewright.cluster.kube.transport import (
    Answer,
    ClientSettings,
    ServerUnavailableError,
    Transport,
    model_of,
    raise_for,
)
from nodewright.cluster.memory import DEFAULT_NAMESPACE, copy_object
from nodewright.cluster.state import ClusterState

T = TypeVar("T", bound=KubeObject)

log = logging.getLogger("nodewright.cluster.kube")


class KubeCluster:
    """Kubernetes objects on an API server, with MemoryCluster's semantics (package docstring).

    Caches fill from watch threads; what they take in reaches :attr:`state` (and ``get`` and
    ``list``) when the operator's thread calls :meth:`sync`, so a pass reads a picture that
    changes only by its own writes, which reach the state at once.
    """

    def __init__(
        self,
        api_client: Any,
        settings: ClientSettings | None = None,
        *,
        uncached: Iterable[type[KubeObject]] = (Event,),
        sleep: Callable[[float], None] = time.sleep,
        reporting_instance: str | None = None,
    ) -> None:
        self._client = api_client
        self.settings = settings or ClientSettings()
        self._api = Transport(api_client, self.settings, sleep=sleep)
        self._events = EventsApi(
            self._api, reporting_instance or os.environ.get("POD_NAME") or socket.gethostname()
        )
        self._event_writer = EventWriter(
            self.create, self.update, lambda event: self.read(Event, event.name, event.namespace)
        )
        self._uncached = frozenset(uncached)
        self._informers: dict[type[KubeObject], Informer] = {}
        self._informers_lock = threading.Lock()
        #: Every cached object, indexed; changed only on the thread that calls :meth:`sync`.
        self.state = ClusterState()
        #: Keys whose cached object changed since the last sync, by kind.
        self._staged: dict[type[KubeObject], set[Key]] = {}
        self._staged_lock = threading.Lock()
        self._stop = threading.Event()
        self._version = 0
        self._changes = threading.Condition()
        self._streams: set[Any] = set()
        self._streams_lock = threading.Lock()
        #: JSON patches sent, and how many fell back to a replace (a failed ``test``).
        self.patches = 0
        self.patch_fallbacks = 0

    # -- construction ----------------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        kubeconfig: str | None = None,
        context: str | None = None,
        settings: ClientSettings | None = None,
        in_cluster: bool | None = None,
        uncached: Iterable[type[KubeObject]] = (Event,),
    ) -> KubeCluster:
        """From a kubeconfig file, or the pod's service account when running in a cluster."""
        return cls(api_client(kubeconfig, context, in_cluster), settings, uncached=uncached)

    @property
    def host(self) -> str:
        return str(self._client.configuration.host)

    @property
    def fence(self) -> Fence | None:
        """Checked before every write (see :mod:`nodewright.cluster.fence`); None: unfenced."""
        return self._api.fence

    @fence.setter
    def fence(self, fence: Fence | None) -> None:
        self._api.fence = fence

    def leases(self) -> LeaseClient:
        """Leases for leader election: bounded, single attempts, never fenced."""
        return LeaseClient(self._api)

    @property
    def api_retries(self) -> int:
        """How many calls were repeated after 429, 5xx or a broken connection."""
        return self._api.retries

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self, kinds: Iterable[type[KubeObject]]) -> None:
        """Start the caches of ``kinds`` now (otherwise each starts on its first read)."""
        for kind in kinds:
            self._informer(kind, wait=False)

    def synced(self) -> bool:
        """True when every started cache has listed once."""
        with self._informers_lock:
            informers = list(self._informers.values())
        return all(informer.synced.is_set() for informer in informers)

    def wait_synced(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._informers_lock:
            informers = list(self._informers.values())
        return all(i.synced.wait(max(0.0, deadline - time.monotonic())) for i in informers)

    def close(self) -> None:
        """Write what Events it can in a moment, stop every watch and close connections."""
        self._event_writer.close()
        self._stop.set()
        with self._streams_lock:
            streams = list(self._streams)
        for raw in streams:
            with contextlib.suppress(Exception):
                raw.shutdown()
        with self._informers_lock:
            informers = list(self._informers.values())
        deadline = time.monotonic() + 0.5
        for informer in informers:
            informer.join(max(0.0, deadline - time.monotonic()))
        with self._changes:
            self._changes.notify_all()

    def _track(self, raw: Any) -> None:
        with self._streams_lock:
            self._streams.add(raw)
            if self._stop.is_set():  # opened while closing: end it now
                with contextlib.suppress(Exception):
                    raw.shutdown()

    def _untrack(self, raw: Any) -> None:
        with self._streams_lock:
            self._streams.discard(raw)

    def _informer(self, kind: type[KubeObject], wait: bool = True) -> Informer:
        with self._informers_lock:
            informer = self._informers.get(kind)
            if informer is None:
                informer = Informer(self, kind)
                self._informers[kind] = informer
                informer.start()
        if wait and not informer.synced.wait(self.settings.sync_timeout):
            raise ServerUnavailableError(
                f"the cache of {plural_of(kind.KIND)} did not fill within "
                f"{self.settings.sync_timeout:g}s"
            )
        return informer

    def informer_stats(self, kind: type[KubeObject]) -> tuple[int, int]:
        """(lists, relists after 410 Gone) of ``kind``'s cache, for tests and diagnostics."""
        informer = self._informer(kind)
        return informer.lists, informer.relists_on_gone

    # -- the cluster state ------------------------------------------------------------------------

    def _stage(self, kind: type[KubeObject], key: Key) -> None:
        """Note that a cache changed ``key`` (called by informers, from any thread)."""
        with self._staged_lock:
            self._staged.setdefault(kind, set()).add(key)

    def sync(self) -> None:
        """Bring :attr:`state` up to date with the caches (on the operator's thread)."""
        with self._staged_lock:
            staged, self._staged = self._staged, {}
        for kind, keys in staged.items():
            with self._informers_lock:
                informer = self._informers.get(kind)
            if informer is None:
                continue
            with informer.lock:
                current = {key: informer.objects.get(key) for key in keys}
            for key in sorted(keys):
                old, new = self.state.get(kind, key), current[key]
                if old is not new:
                    self.state.apply(kind, key, old, new)

    # -- change notification ---------------------------------------------------------------------

    def _changed(self) -> None:
        with self._changes:
            self._version += 1
            self._changes.notify_all()

    def resource_version(self) -> int:
        """A counter of changes this process has seen (cache events and its own writes)."""
        with self._changes:
            return self._version

    def wake(self) -> None:
        """Wake anyone in :meth:`wait_for_change` (e.g. to shut down)."""
        with self._changes:
            self._changes.notify_all()

    def wait_for_change(self, since: int, timeout: float) -> int:
        """Block until the change counter passes ``since`` or ``timeout`` seconds pass."""
        with self._changes:
            if self._version == since:
                self._changes.wait(max(0.0, timeout))
            return self._version

    # -- events ----------------------------------------------------------------------------------

    @property
    def reporting_instance(self) -> str:
        """Who writes the Events (events.k8s.io ``reportingInstance``): the pod's name."""
        return self._events.reporting_instance

    @reporting_instance.setter
    def reporting_instance(self, name: str) -> None:
        self._events.reporting_instance = name

    def record_event(self, event: Event) -> None:
        """Queue ``event`` for the background writer (see :mod:`.eventwriter`); never blocks."""
        self._event_writer.put(event)

    def flush_events(self, timeout: float = 10.0) -> bool:
        """Wait until every queued Event is written or dropped; False on timeout."""
        return self._event_writer.flush(timeout)

    def events_api(self) -> str:
        """``events.k8s.io/v1`` when the server serves it, else ``v1`` (asked once)."""
        return self._events.served()

    def _events_v1(self, kind: type[KubeObject]) -> bool:
        return kind is Event and self._events.served() == EVENTS_V1

    # -- reads -----------------------------------------------------------------------------------

    @staticmethod
    def _key(kind: type[KubeObject], name: str, namespace: str) -> Key:
        return ((namespace or DEFAULT_NAMESPACE), name) if kind.NAMESPACED else ("", name)

    def get(self, kind: type[T], name: str, namespace: str = "") -> T | None:
        if self._events_v1(kind):
            return self._events.read(name, namespace)  # type: ignore[return-value]
        if kind in self._uncached:
            return self.read(kind, name, namespace)
        self._informer(kind)
        self.sync()
        return self.state.get(kind, self._key(kind, name, namespace))

    def read(self, kind: type[T], name: str, namespace: str = "") -> T | None:
        """A live GET from the server, bypassing the cache."""
        if self._events_v1(kind):
            return self._events.read(name, namespace)  # type: ignore[return-value]
        answer = self._api.call("GET", object_path(kind, name, namespace))
        if answer.status == 404:
            return None
        raise_for(answer, kind, name, namespace)
        return model_of(kind, answer.body)

    def list(
        self,
        kind: type[T],
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> builtins.list[T]:
        if self._events_v1(kind):
            return self._events.list(namespace, labels)  # type: ignore[return-value]
        if kind in self._uncached:
            return self._list_live(kind, namespace, labels)
        self._informer(kind)
        self.sync()
        if not labels:
            return builtins.list(self.state.sorted(kind, namespace))
        wanted = builtins.list(labels.items())
        return [
            obj
            for obj in self.state.sorted(kind, namespace)
            if all(obj.metadata.labels.get(k) == v for k, v in wanted)
        ]

    def _list_live(
        self, kind: type[T], namespace: str | None, labels: Mapping[str, str] | None
    ) -> builtins.list[T]:
        query = {"labelSelector": ",".join(f"{k}={v}" for k, v in labels.items())} if labels else {}
        answer = self._api.call("GET", collection_path(kind, namespace), query)
        raise_for(answer, kind, "(list)", namespace or "")
        objects = []
        for item in answer.body.get("items") or []:
            item.setdefault("apiVersion", kind.API_VERSION)
            item.setdefault("kind", kind.KIND)
            objects.append(model_of(kind, item))
        return sorted(objects, key=lambda o: (o.namespace, o.name))

    # -- writes ----------------------------------------------------------------------------------

    def _taken_in(self, kind: type[T], data: Mapping[str, Any], deleted: bool = False) -> T:
        if kind in self._uncached:
            return model_of(kind, data)
        obj = model_of(kind, slimmed(kind, data))  # as the cache keeps it (see .slim)
        compact(obj)
        with self._informers_lock:
            informer = self._informers.get(kind)
        if informer is not None:
            informer.observe(copy_object(obj), deleted=deleted)
        else:
            self._changed()
        return obj

    def create(self, obj: T) -> T:
        kind = type(obj)
        if isinstance(obj, Event) and self._events_v1(kind):
            return self._events.create(obj)  # type: ignore[return-value]
        body = obj.to_dict()
        meta = body.setdefault("metadata", {})
        namespace = (obj.metadata.namespace or DEFAULT_NAMESPACE) if kind.NAMESPACED else None
        if namespace:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        for server_owned in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"):
            meta.pop(server_owned, None)
        name = obj.metadata.name or f"{obj.metadata.generate_name or ''}(generated)"
        answer = self._api.call("POST", collection_path(kind, namespace), body=body)
        raise_for(answer, kind, name, namespace or "")
        created = self._taken_in(kind, answer.body)
        if "status" in kind.model_fields:
            wanted = getattr(obj, "status")  # noqa: B009
            empty = type(wanted)()
            if wanted != empty and wanted != getattr(created, "status"):  # noqa: B009
                with_status = copy_object(created)
                with_status.__dict__["status"] = copy_object(wanted)
                created = self.update_status(with_status)
        return created

    def _base_of(self, obj: T) -> T | None:
        """The object as the caller read it (same resourceVersion), from the cache."""
        kind = type(obj)
        version = obj.metadata.resource_version
        if kind in self._uncached or not version or not obj.metadata.uid:
            return None
        with self._informers_lock:
            informer = self._informers.get(kind)
        if informer is None:
            return None
        base = informer.version_of(self._key(kind, obj.name, obj.namespace), version)
        if base is None or base.metadata.uid != obj.metadata.uid:
            return None
        if base is obj:
            raise ReadOnlyViolation(
                f"{kind.KIND} {obj.key}: the object written is the shared one that was read; "
                "take a mutable() copy, change that and write it back"
            )
        return base  # type: ignore[return-value]

    def _patch(
        self,
        obj: T,
        path: str,
        ops: builtins.list[dict[str, Any]],
        untestable: bool,
    ) -> Answer:
        """PATCH ``ops`` guarded by the object's uid (and its resourceVersion when some old
        value could not be tested)."""
        guard = [{"op": "test", "path": "/metadata/uid", "value": obj.metadata.uid}]
        if untestable:
            guard.append(
                {
                    "op": "test",
                    "path": "/metadata/resourceVersion",
                    "value": obj.metadata.resource_version,
                }
            )
        self.patches += 1
        return self._api.call("PATCH", path, body=guard + ops, content_type=JSON_PATCH)

    def update(self, obj: T) -> T:
        """Write the caller's changes to metadata and spec.

        When the cache still holds the version the caller read, only the changes are sent,
        as a JSON patch that tests each changed value's old value: a concurrent writer's
        change to other labels, annotations or fields survives, and a concurrent change to
        a value we change (say the finalizer list) is a :class:`ConflictError`. Otherwise,
        and when a test fails for reasons of representation, the object is replaced with
        its resourceVersion (stale -> ConflictError), as before.
        """
        kind = type(obj)
        if isinstance(obj, Event):
            if self._events_v1(kind):
                return self._events.update(obj)  # type: ignore[return-value]
            return self._events.update_core(obj)  # type: ignore[return-value]
        base = self._base_of(obj)
        if base is not None:
            ops, untestable = json_patch(
                spec_and_metadata(as_stored(kind, base.to_dict())),
                spec_and_metadata(as_stored(kind, obj.to_dict())),
            )
            if not ops:
                return copy_object(base)
            answer = self._patch(obj, object_path(kind, obj.name, obj.namespace), ops, untestable)
            if not precondition_failed(answer):
                return self._after_write(kind, obj, answer)
            self.patch_fallbacks += 1
        path = object_path(kind, obj.name, obj.namespace)
        if kind in READ_ONLY:
            answer = replace_from_server(self._api, obj, path, spec_and_metadata)
        else:
            answer = self._api.call("PUT", path, body=obj.to_dict())
        return self._after_write(kind, obj, answer)

    def _after_write(self, kind: type[T], obj: T, answer: Answer) -> T:
        raise_for(answer, kind, obj.name, obj.namespace)
        meta = answer.body.get("metadata") or {}
        if answer.body.get("kind") == "Status" or not meta:
            return self._taken_in(kind, obj.to_dict(), deleted=True)
        # the last finalizer went: the server answers with the object and removes it
        gone = bool(meta.get("deletionTimestamp")) and not meta.get("finalizers")
        return self._taken_in(kind, answer.body, deleted=gone)

    def update_status(self, obj: T) -> T:
        """Write the caller's status changes: a JSON patch of the status subresource when
        the cache holds the version read (see :meth:`update`), else a replace."""
        kind = type(obj)
        if "status" not in kind.model_fields:
            raise InvalidError(f"{kind.KIND} has no status subresource")
        path = object_path(kind, obj.name, obj.namespace) + "/status"
        base = self._base_of(obj)
        if base is not None:
            ops, untestable = json_patch(
                {"status": as_stored(kind, base.to_dict()).get("status", {})},
                {"status": as_stored(kind, obj.to_dict()).get("status", {})},
            )
            if not ops:
                return copy_object(base)
            answer = self._patch(obj, path, ops, untestable)
            if not precondition_failed(answer):
                raise_for(answer, kind, obj.name, obj.namespace)
                return self._taken_in(kind, answer.body)
            self.patch_fallbacks += 1
        if kind in READ_ONLY:
            answer = replace_from_server(self._api, obj, path, status_of)
        else:
            answer = self._api.call("PUT", path, body=obj.to_dict())
        raise_for(answer, kind, obj.name, obj.namespace)
        return self._taken_in(kind, answer.body)

    def delete(self, kind: type[T], name: str, namespace: str = "") -> None:
        path = object_path(kind, name, namespace)
        if self._events_v1(kind):
            path = events_v1_path(namespace or DEFAULT_NAMESPACE, name)
        answer = self._api.call(
            "DELETE",
            path,
            body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
        )
        if answer.status == 404:
            cached = self._cached(kind, name, namespace)
            if cached is not None:
                self._taken_in(kind, cached.to_dict(), deleted=True)
            return
        raise_for(answer, kind, name, namespace)
        self._after_delete(kind, answer.body, name, namespace)

    def _cached(self, kind: type[T], name: str, namespace: str) -> T | None:
        with self._informers_lock:
            informer = self._informers.get(kind)
        if informer is None:
            return None
        return informer.get(self._key(kind, name, namespace))  # type: ignore[return-value]

    def _after_delete(
        self, kind: type[T], body: Mapping[str, Any], name: str, namespace: str
    ) -> None:
        if body.get("kind") != "Status" and body.get("metadata"):
            data = dict(body)
            meta = data.get("metadata") or {}
            still_there = bool(meta.get("finalizers")) and bool(meta.get("deletionTimestamp"))
            self._taken_in(kind, data, deleted=not still_there)
            return
        cached = self._cached(kind, name, namespace)
        if cached is not None:
            self._taken_in(kind, cached.to_dict(), deleted=True)

    def bind(self, pod_name: str, namespace: str, node_name: str) -> None:
        namespace = namespace or DEFAULT_NAMESPACE
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod_name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        answer = self._api.call(
            "POST", object_path(Pod, pod_name, namespace) + "/binding", body=body
        )
        raise_for(answer, Pod, pod_name, namespace)
        self._refresh(Pod, pod_name, namespace)

    def evict(self, pod_name: str, namespace: str) -> None:
        namespace = namespace or DEFAULT_NAMESPACE
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod_name, "namespace": namespace},
        }
        answer = self._api.call(
            "POST",
            object_path(Pod, pod_name, namespace) + "/eviction",
            body=body,
            retry_statuses=frozenset(),  # a 429 here is a PodDisruptionBudget, not a rate limit
        )
        if answer.status == 429 or (
            answer.status == 500 and "more than one" in answer.message.lower()
        ):
            raise EvictionBlockedError(f"cannot evict pod {namespace}/{pod_name}: {answer.message}")
        raise_for(answer, Pod, pod_name, namespace)
        self._refresh(Pod, pod_name, namespace)

    def _refresh(self, kind: type[T], name: str, namespace: str) -> None:
        """After a subresource write: read the object back into the cache."""
        if kind in self._uncached:
            return
        with self._informers_lock:
            informer = self._informers.get(kind)
        if informer is None:
            return
        answer = self._api.call("GET", object_path(kind, name, namespace))
        if answer.status == 404:
            cached = informer.get(self._key(kind, name, namespace))
            if cached is not None:
                informer.observe(copy_object(cached), deleted=True)
            return
        if 200 <= answer.status < 300:
            self._taken_in(kind, answer.body)
