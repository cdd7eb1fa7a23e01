"""The :class:`~nodewright.cluster.Cluster` adapter over a real Kubernetes API server.

This is the only module that imports the ``kubernetes`` client. It keeps the semantics of
:class:`~nodewright.cluster.memory.MemoryCluster` that controllers rely on:

* reads come from a list+watch cache per kind (started on first use, relisted on 410 Gone
  and every ``resync_period``); the cache also takes in what this process writes, so a
  controller reads its own writes at once;
* writes go to the server with the object's ``resourceVersion`` (409 -> ConflictError, the
  caller re-reads and retries); ``update`` replaces metadata and spec and ``update_status``
  the status subresource; a ``create`` carrying a status writes it through the status
  subresource, as the in-memory store keeps it;
* ``bind`` posts a Binding and ``evict`` an Eviction (429 -> EvictionBlockedError);
* every call waits for a client-side token bucket (QPS and burst), has a timeout, and is
  retried with exponential backoff on 429 (honouring Retry-After) and, for reads, on 5xx
  and broken connections.

Kinds are routed by their model's ``API_VERSION`` and ``KIND``; the REST plural comes from
:func:`plural_of`. Credentials live in the client's configuration and are never logged.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import urllib3
from kubernetes import client as kube_client
from kubernetes import config as _kube_config
from pydantic import ValidationError

from nodewright.api.core import Event, Pod
from nodewright.api.meta import KubeObject
from nodewright.cluster import (
    AlreadyExistsError,
    ClusterError,
    ConflictError,
    EvictionBlockedError,
    InvalidError,
    NotFoundError,
)
from nodewright.cluster.memory import DEFAULT_NAMESPACE, collector_paused, copy_object

T = TypeVar("T", bound=KubeObject)

#: The client's config loaders are untyped.
kube_config: Any = _kube_config

log = logging.getLogger("nodewright.cluster.kube")

_Key = tuple[str, str]

#: Plurals that the simple English rules below get wrong.
IRREGULAR_PLURALS: dict[str, str] = {"Endpoints": "endpoints"}


def plural_of(kind: str) -> str:
    """The REST resource name of a kind, as the API server and CRDs spell it."""
    if kind in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[kind]
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


class ServerUnavailableError(ClusterError):
    """The API server did not answer in time or kept failing after retries."""


class TooManyRequestsError(ServerUnavailableError):
    """The API server kept answering 429 after every retry."""


@dataclass(frozen=True)
class ClientSettings:
    """How the adapter talks to the server (Karpenter's KUBE_CLIENT_QPS/BURST defaults)."""

    qps: float = 200.0
    burst: int = 300
    #: Seconds to connect and to wait for each answer.
    connect_timeout: float = 5.0
    request_timeout: float = 30.0
    #: Attempts for one call before giving up (429, 5xx on reads, broken connections).
    max_attempts: int = 6
    backoff_base: float = 0.2
    backoff_max: float = 10.0
    #: A watch asks the server to end it after this long; it is then resumed.
    watch_timeout: float = 300.0
    #: Every cache lists again this often, whatever its watch says.
    resync_period: float = 3600.0
    #: How long the first read of a kind waits for its cache to fill.
    sync_timeout: float = 60.0


class TokenBucket:
    """Client-side rate limiting: ``qps`` tokens a second, at most ``burst`` saved up."""

    def __init__(
        self,
        qps: float,
        burst: int,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._rate = max(qps, 1e-9)
        self._capacity = float(max(burst, 1))
        self._tokens = self._capacity
        self._now = now
        self._sleep = sleep
        self._stamp = now()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, waiting for it; returns the seconds waited."""
        with self._lock:
            now = self._now()
            self._tokens = min(self._capacity, self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now
            self._tokens -= 1.0
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self._rate
        if wait > 0:
            self._sleep(wait)
        return wait


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: Mapping[str, str]
    body: dict[str, Any]

    @property
    def message(self) -> str:
        return str(self.body.get("message") or self.body.get("reason") or f"HTTP {self.status}")


_RETRYABLE_SERVER_ERRORS = frozenset({500, 502, 503, 504})


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After") or headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class _Api:
    """HTTP plumbing: auth from the client's configuration, rate limit, timeout, retries."""

    def __init__(
        self,
        api_client: Any,
        settings: ClientSettings,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = api_client
        self.settings = settings
        self.limiter = TokenBucket(settings.qps, settings.burst, sleep=sleep)
        self._sleep = sleep
        self.retries = 0  # how many calls were repeated (for tests and logs)

    def _open(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: Mapping[str, Any] | builtins.list[Any] | None,
        read_timeout: float,
        *,
        content_type: str = "application/json",
    ) -> Any:
        """One HTTP exchange; returns the urllib3 response (body not read yet)."""
        self.limiter.acquire()
        url_path = path + ("?" + urlencode(query) if query else "")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        request = self.client.param_serialize(
            method=method,
            resource_path=url_path,
            header_params=headers,
            body=(list(body) if isinstance(body, list) else dict(body))
            if body is not None
            else None,
            auth_settings=["BearerToken"],
        )
        response = self.client.call_api(
            *request, _request_timeout=(self.settings.connect_timeout, read_timeout)
        )
        return response.response

    def call(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | builtins.list[Any] | None = None,
        *,
        retry_statuses: frozenset[int] | None = None,
        content_type: str = "application/json",
    ) -> _Answer:
        """A request with retries; returns the final answer (any status) or raises
        :class:`ServerUnavailableError` when the server cannot be reached or keeps failing."""
        is_read = method == "GET"
        retryable = (
            retry_statuses
            if retry_statuses is not None
            else frozenset({429}) | (_RETRYABLE_SERVER_ERRORS if is_read else frozenset())
        )
        attempt = 0
        while True:
            attempt += 1
            try:
                raw = self._open(
                    method,
                    path,
                    query,
                    body,
                    self.settings.request_timeout,
                    content_type=content_type,
                )
                try:
                    data = raw.read()
                finally:
                    raw.release_conn()
            except (urllib3.exceptions.HTTPError, OSError) as error:
                if not is_read or attempt >= self.settings.max_attempts:
                    raise ServerUnavailableError(
                        f"{method} {path}: {type(error).__name__}: {error}"
                    ) from None
                self._backoff(attempt, None)
                continue
            headers = dict(raw.headers.items())
            answer = _Answer(raw.status, headers, _json_object(data))
            if answer.status in retryable or (
                answer.status in _RETRYABLE_SERVER_ERRORS and _retry_after(headers) is not None
            ):
                if attempt >= self.settings.max_attempts:
                    error_kind = (
                        TooManyRequestsError if answer.status == 429 else ServerUnavailableError
                    )
                    raise error_kind(
                        f"{method} {path}: HTTP {answer.status} after {attempt} attempts: "
                        f"{answer.message}"
                    )
                self._backoff(attempt, _retry_after(headers))
                continue
            return answer

    def stream(self, path: str, query: Mapping[str, str], read_timeout: float) -> tuple[int, Any]:
        """Open a watch; returns the status and the urllib3 response to read lines from."""
        raw = self._open("GET", path, query, None, read_timeout)
        return raw.status, raw

    def _backoff(self, attempt: int, retry_after: float | None) -> None:
        self.retries += 1
        if retry_after is not None:
            delay = min(retry_after, self.settings.backoff_max)
        else:
            delay = min(self.settings.backoff_base * 2 ** (attempt - 1), self.settings.backoff_max)
            delay *= 0.5 + random.random() / 2
        self._sleep(delay)


def _json_object(data: bytes) -> dict[str, Any]:
    if not data:
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {"message": data[:200].decode("utf-8", "replace")}
    return value if isinstance(value, dict) else {}


# --- routing ------------------------------------------------------------------------------------


def collection_path(kind: type[KubeObject], namespace: str | None) -> str:
    """``/api/v1/namespaces/NS/pods``, ``/apis/karpenter.sh/v1/nodepools`` ..."""
    api_version = kind.API_VERSION
    prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    plural = plural_of(kind.KIND)
    if kind.NAMESPACED and namespace:
        return f"{prefix}/namespaces/{quote(namespace, safe='')}/{plural}"
    return f"{prefix}/{plural}"


def object_path(kind: type[KubeObject], name: str, namespace: str) -> str:
    ns = (namespace or DEFAULT_NAMESPACE) if kind.NAMESPACED else None
    return f"{collection_path(kind, ns)}/{quote(name, safe='')}"


def _described(kind: type[KubeObject], name: str, namespace: str) -> str:
    where = f' in namespace "{namespace or DEFAULT_NAMESPACE}"' if kind.NAMESPACED else ""
    return f'{kind.KIND} "{name}"{where}'


def _raise_for(answer: _Answer, kind: type[KubeObject], name: str, namespace: str) -> None:
    if 200 <= answer.status < 300:
        return
    what = _described(kind, name, namespace)
    if answer.status == 404:
        raise NotFoundError(f"{what} not found: {answer.message}")
    if answer.status == 409:
        if answer.body.get("reason") == "AlreadyExists":
            raise AlreadyExistsError(f"{what} already exists")
        raise ConflictError(f"{what}: {answer.message}")
    if answer.status in (400, 422):
        raise InvalidError(f"{what}: {answer.message}")
    if answer.status in (401, 403):
        raise ClusterError(f"{what}: HTTP {answer.status} {answer.message}")
    raise ClusterError(f"{what}: HTTP {answer.status} {answer.message}")


# --- patches ------------------------------------------------------------------------------------

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"

#: How many earlier versions of each object a cache remembers as bases for patches.
PAST_VERSIONS_KEPT = 3

#: Metadata the server owns; never part of a patch.
_SERVER_OWNED_METADATA = frozenset(
    {
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "managedFields",
        "selfLink",
        "namespace",
        "name",
    }
)


def _pointer(parts: Iterable[str]) -> str:
    """A JSON pointer (RFC 6901) to ``parts``."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _ambiguous(value: Any) -> bool:
    """Empty and zero values (and maps of nothing else): the server may store them or leave
    the field out, so a ``test`` against them, or a path through them, could fail for no
    reason."""
    if isinstance(value, dict):
        return all(_ambiguous(v) for v in value.values())
    return value is None or value is False or value in ("", 0, [])


def json_patch(
    old: Mapping[str, Any], new: Mapping[str, Any], prefix: tuple[str, ...] = ()
) -> tuple[builtins.list[dict[str, Any]], bool]:
    """The JSON patch (RFC 6902) turning ``old`` into ``new``, with a ``test`` of the old
    value before every change to a value that was set (a list such as finalizers or taints is
    one value). Keys only ``new`` has are added without a test, like a merge patch.

    Returns the operations and whether some old value was empty or zero and could not be
    tested: the caller then adds a whole-object resourceVersion precondition.
    """
    ops: list[dict[str, Any]] = []
    untestable = _diff(dict(old), dict(new), prefix, ops, whole=True)
    return ops, untestable


def _diff(
    old: Any,
    new: Any,
    path: tuple[str, ...],
    ops: builtins.list[dict[str, Any]],
    *,
    whole: bool = False,
) -> bool:
    if old == new:
        return False
    if isinstance(old, dict) and isinstance(new, dict) and (whole or not _ambiguous(old)):
        untestable = False
        for key in sorted(set(old) | set(new)):
            where = (*path, key)
            if key not in new:
                if _ambiguous(old[key]):
                    continue  # empty before, gone now: nothing a reader could tell apart
                ops.append({"op": "test", "path": _pointer(where), "value": old[key]})
                ops.append({"op": "remove", "path": _pointer(where)})
            elif key not in old:
                ops.append({"op": "add", "path": _pointer(where), "value": new[key]})
            else:
                # metadata always exists on the server, however empty our copy looks
                inner = whole and key == "metadata"
                untestable |= _diff(old[key], new[key], where, ops, whole=inner)
        return untestable
    if _ambiguous(old):
        # "add" sets a member whether or not the server has it.
        ops.append({"op": "add", "path": _pointer(path), "value": new})
        return True
    ops.append({"op": "test", "path": _pointer(path), "value": old})
    ops.append({"op": "replace", "path": _pointer(path), "value": new})
    return False


#: Words in the API server's 422 answer when a JSON patch's ``test`` (or a path it needs)
#: failed: the object changed under us, not an invalid request.
_PRECONDITION_FAILED = ("test failed", "testing value", "missing path", "missing value")


def _precondition_failed(answer: _Answer) -> bool:
    message = answer.message.lower()
    return answer.status == 422 and any(word in message for word in _PRECONDITION_FAILED)


def _spec_and_metadata(data: Mapping[str, Any]) -> dict[str, Any]:
    """An object's dict without status and server-owned metadata: what ``update`` writes."""
    body = {k: v for k, v in data.items() if k not in ("status", "apiVersion", "kind")}
    meta = body.get("metadata") or {}
    body["metadata"] = {k: v for k, v in meta.items() if k not in _SERVER_OWNED_METADATA}
    return body


# --- events -------------------------------------------------------------------------------------

EVENTS_V1 = "events.k8s.io/v1"
#: What the Events API calls each of Karpenter's reasons' ``action`` (what was being done).
EVENT_ACTIONS: dict[str, str] = {
    "Nominated": "Nominate",
    "FailedScheduling": "Schedule",
    "NoCompatibleInstanceTypes": "Provision",
    "InsufficientCapacityError": "Launch",
    "NodeClassNotReady": "Launch",
    "FailedValidation": "Validate",
    "FailedConsistencyCheck": "CheckConsistency",
    "NotReady": "Register",
    "UnregisteredTaintMissing": "Register",
    "Disrupted": "Disrupt",
    "DisruptionBlocked": "Disrupt",
    "DisruptionLaunching": "Disrupt",
    "DisruptionTerminating": "Disrupt",
    "DisruptionWaitingReadiness": "Disrupt",
    "InvalidDoNotDisruptAnnotation": "Disrupt",
    "Unconsolidatable": "Consolidate",
    "ConsolidationRejected": "Consolidate",
    "Evicted": "Evict",
    "FailedDraining": "Drain",
    "AwaitingVolumeDetachment": "Drain",
    "TerminationGracePeriodExpiring": "Terminate",
}
#: The Events API's limits on ``note`` (bytes) and ``action``/``reason`` (characters).
EVENT_NOTE_LIMIT = 1024
EVENT_FIELD_LIMIT = 128


def _micro_time(value: datetime | None) -> str | None:
    """A MicroTime as the Events API writes it."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _truncated(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", "ignore") + "..."


def event_to_v1(event: Event, reporting_instance: str) -> dict[str, Any]:
    """A core/v1 Event (what the recorder writes) as an events.k8s.io/v1 Event."""
    first = event.first_timestamp or event.last_timestamp or datetime.now(UTC)
    last = event.last_timestamp or first
    reason = _truncated(event.reason or "Unknown", EVENT_FIELD_LIMIT)
    body: dict[str, Any] = {
        "apiVersion": EVENTS_V1,
        "kind": "Event",
        "metadata": {
            k: v
            for k, v in event.metadata.to_dict().items()
            if k
            in (
                "name",
                "generateName",
                "namespace",
                "labels",
                "annotations",
                "uid",
                "resourceVersion",
            )
        },
        "eventTime": _micro_time(first),
        "reportingController": event.source.component or "karpenter",
        "reportingInstance": _truncated(reporting_instance, EVENT_FIELD_LIMIT),
        "action": _truncated(EVENT_ACTIONS.get(event.reason, reason), EVENT_FIELD_LIMIT),
        "reason": reason,
        "note": _truncated(event.message, EVENT_NOTE_LIMIT),
        "type": event.type,
        "regarding": event.involved_object.to_dict(),
    }
    if event.count > 1:
        body["series"] = {"count": event.count, "lastObservedTime": _micro_time(last)}
    return body


def event_from_v1(data: Mapping[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as a core/v1 Event dict (what the recorder reads)."""
    series = data.get("series") or {}
    first = data.get("eventTime") or data.get("deprecatedFirstTimestamp")
    last = series.get("lastObservedTime") or data.get("deprecatedLastTimestamp") or first
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": data.get("metadata") or {},
        "involvedObject": data.get("regarding") or {},
        "reason": data.get("reason") or "",
        "message": data.get("note") or "",
        "type": data.get("type") or "Normal",
        "count": int(series.get("count") or data.get("deprecatedCount") or 1),
        "firstTimestamp": first,
        "lastTimestamp": last,
        "source": {
            "component": data.get("reportingController"),
            "host": data.get("reportingInstance"),
        },
    }


def _events_v1_path(namespace: str | None, name: str | None = None) -> str:
    path = f"/apis/{EVENTS_V1}"
    if namespace:
        path += f"/namespaces/{quote(namespace, safe='')}"
    path += "/events"
    if name is not None:
        path += f"/{quote(name, safe='')}"
    return path


# --- the cache ----------------------------------------------------------------------------------


def _version_number(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


class _Informer:
    """One kind's cache: list, then watch from the list's resourceVersion, relisting on
    410 Gone, on errors and every ``resync_period``."""

    def __init__(self, cluster: KubeCluster, kind: type[KubeObject]) -> None:
        self.kind = kind
        self._cluster = cluster
        self._api = cluster._api
        self.objects: dict[_Key, KubeObject] = {}
        self._sorted: list[_Key] | None = None
        self.lock = threading.RLock()
        self.synced = threading.Event()
        self.resource_version = ""
        #: keys deleted by this process and the resourceVersion they were deleted at: an
        #: older watch event must not bring them back.
        self._tombstones: dict[_Key, int] = {}
        #: the last few versions each key held before its current one: the base a caller's
        #: copy is diffed against when it writes back (see :meth:`KubeCluster.update`).
        self._past: dict[_Key, list[KubeObject]] = {}
        self.lists = 0
        self.relists_on_gone = 0
        self._thread = threading.Thread(
            target=self._run, name=f"watch-{plural_of(kind.KIND)}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    # -- reading ---------------------------------------------------------------------------------

    def peek(self, namespace: str | None, labels: Mapping[str, str] | None) -> list[KubeObject]:
        with self.lock:
            if self._sorted is None:
                self._sorted = sorted(self.objects)
            wanted = list(labels.items()) if labels else []
            found: list[KubeObject] = []
            for key in self._sorted:
                if namespace is not None and key[0] != namespace:
                    continue
                obj = self.objects[key]
                if wanted and any(obj.metadata.labels.get(k) != v for k, v in wanted):
                    continue
                found.append(obj)
            return found

    def get(self, key: _Key) -> KubeObject | None:
        with self.lock:
            return self.objects.get(key)

    def version_of(self, key: _Key, resource_version: str) -> KubeObject | None:
        """The object as it was at ``resource_version``, if this cache still remembers it."""
        with self.lock:
            current = self.objects.get(key)
            if current is not None and current.metadata.resource_version == resource_version:
                return current
            for past in reversed(self._past.get(key, ())):
                if past.metadata.resource_version == resource_version:
                    return past
        return None

    def _remember(self, key: _Key, replaced: KubeObject | None) -> None:
        """Keep ``replaced`` (called with the lock held) as one of the key's past versions."""
        if replaced is None:
            return
        past = self._past.setdefault(key, [])
        past.append(replaced)
        if len(past) > PAST_VERSIONS_KEPT:
            del past[0]

    # -- taking in changes -----------------------------------------------------------------------

    def _key_of(self, obj: KubeObject) -> _Key:
        return (obj.metadata.namespace or "", obj.metadata.name)

    def observe(self, obj: KubeObject, deleted: bool = False) -> None:
        """Take in an object this process just wrote (or deleted), unless the cache already
        holds something newer."""
        key = self._key_of(obj)
        version = _version_number(obj.metadata.resource_version)
        with self.lock:
            current = self.objects.get(key)
            current_version = None if current is None else current.metadata.resource_version
            if (
                current is not None
                and version is not None
                and (_version_number(current_version) or 0) > version
            ):
                return
            if deleted:
                if current is not None:
                    del self.objects[key]
                    self._sorted = None
                self._past.pop(key, None)
                self._tombstones[key] = version or _version_number(current_version) or 0
            else:
                self._tombstones.pop(key, None)
                if current is None:
                    self._sorted = None
                elif current.metadata.resource_version != obj.metadata.resource_version:
                    self._remember(key, current)
                self.objects[key] = obj
        self._cluster._changed()

    def _apply(self, event_type: str, obj: KubeObject) -> None:
        key = self._key_of(obj)
        version = _version_number(obj.metadata.resource_version)
        with self.lock:
            tomb = self._tombstones.get(key)
            if event_type == "DELETED":
                self._tombstones.pop(key, None)
                self._past.pop(key, None)
                if key in self.objects:
                    del self.objects[key]
                    self._sorted = None
                else:
                    return
            else:
                if tomb is not None and version is not None and version <= tomb:
                    return
                self._tombstones.pop(key, None)
                current = self.objects.get(key)
                if current is not None:
                    current_version = _version_number(current.metadata.resource_version)
                    if (
                        version is not None
                        and current_version is not None
                        and current_version >= version
                    ):
                        return
                    self._remember(key, current)
                else:
                    self._sorted = None
                self.objects[key] = obj
        self._cluster._changed()

    def _replace(self, objects: Iterable[KubeObject], resource_version: str) -> None:
        fresh = {self._key_of(obj): obj for obj in objects}
        with self.lock:
            changed = set(fresh) != set(self.objects) or any(
                self.objects[k].metadata.resource_version != o.metadata.resource_version
                for k, o in fresh.items()
            )
            for key, obj in fresh.items():
                old = self.objects.get(key)
                if (
                    old is not None
                    and old.metadata.resource_version != obj.metadata.resource_version
                ):
                    self._remember(key, old)
            self._past = {k: v for k, v in self._past.items() if k in fresh}
            self.objects = fresh
            self._sorted = None
            self._tombstones.clear()
            self.resource_version = resource_version
        if changed:
            self._cluster._changed()

    # -- the loop --------------------------------------------------------------------------------

    def _parse(self, data: Mapping[str, Any]) -> KubeObject | None:
        try:
            obj = self.kind.model_validate(data)
        except ValidationError as error:
            meta = data.get("metadata") or {}
            name = meta.get("name", "?") if isinstance(meta, dict) else "?"
            problems = error.errors()
            field = ".".join(str(p) for p in problems[0]["loc"]) if problems else "?"
            message = problems[0]["msg"] if problems else str(error)
            log.warning("ignoring %s %s: field %s: %s", self.kind.KIND, name, field, message)
            return None
        return obj

    def list_now(self) -> None:
        """One LIST of the whole kind, replacing the cache."""
        answer = self._api.call("GET", collection_path(self.kind, None))
        _raise_for(answer, self.kind, "(list)", "")
        items = answer.body.get("items") or []
        objects = []
        for item in items:
            if not isinstance(item, dict):
                continue
            item.setdefault("apiVersion", self.kind.API_VERSION)
            item.setdefault("kind", self.kind.KIND)
            obj = self._parse(item)
            if obj is not None:
                objects.append(obj)
        metadata = answer.body.get("metadata") or {}
        self._replace(objects, str(metadata.get("resourceVersion") or ""))
        self.lists += 1
        self.synced.set()

    def _run(self) -> None:
        failures = 0
        stop = self._cluster._stop
        while not stop.is_set():
            try:
                self.list_now()
                failures = 0
                deadline = time.monotonic() + self._api.settings.resync_period
                while not stop.is_set() and time.monotonic() < deadline:
                    if not self._watch_once(deadline - time.monotonic()):
                        break  # 410 Gone: relist
            except ClusterError as error:
                failures += 1
                if not stop.is_set():
                    log.warning("cache of %s: %s", plural_of(self.kind.KIND), error)
            except (urllib3.exceptions.HTTPError, OSError) as error:
                failures += 1
                if not stop.is_set():
                    log.warning(
                        "watch of %s broke: %s: %s",
                        plural_of(self.kind.KIND),
                        type(error).__name__,
                        error,
                    )
            except Exception:  # a bug must not leave the cache silently stale
                failures += 1
                if not stop.is_set():
                    log.exception("cache of %s failed; listing again", plural_of(self.kind.KIND))
            if failures:
                settings = self._api.settings
                delay = min(settings.backoff_base * 2 ** min(failures, 10), settings.backoff_max)
                stop.wait(delay)

    def _watch_once(self, remaining: float) -> bool:
        """Watch until the server ends the stream; False when the resourceVersion is gone."""
        timeout = max(1, int(min(self._api.settings.watch_timeout, remaining)))
        query = {
            "watch": "true",
            "resourceVersion": self.resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout),
        }
        status, raw = self._api.stream(
            collection_path(self.kind, None), query, read_timeout=timeout + 30.0
        )
        self._cluster._track(raw)
        try:
            if status == 410:
                self.relists_on_gone += 1
                log.info(
                    "watch of %s: resourceVersion too old, listing again", plural_of(self.kind.KIND)
                )
                return False
            if status != 200:
                body = _json_object(raw.read())
                raise ClusterError(
                    f"watch of {plural_of(self.kind.KIND)}: HTTP {status} {body.get('message', '')}"
                )
            for line in _lines(raw):
                if self._cluster._stop.is_set():
                    return True
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                kind = event.get("type")
                data = event.get("object") or {}
                if kind == "ERROR":
                    if data.get("code") == 410:
                        self.relists_on_gone += 1
                        log.info(
                            "watch of %s expired (410 Gone), listing again",
                            plural_of(self.kind.KIND),
                        )
                        return False
                    raise ClusterError(
                        f"watch of {plural_of(self.kind.KIND)}: {data.get('message', data)}"
                    )
                meta = data.get("metadata") or {}
                version = str(meta.get("resourceVersion") or "")
                if kind == "BOOKMARK":
                    self.resource_version = version or self.resource_version
                    continue
                if kind not in ("ADDED", "MODIFIED", "DELETED"):
                    continue
                data.setdefault("apiVersion", self.kind.API_VERSION)
                data.setdefault("kind", self.kind.KIND)
                obj = self._parse(data)
                if version:
                    self.resource_version = version
                if obj is not None:
                    self._apply(kind, obj)
            return True
        finally:
            self._cluster._untrack(raw)
            with contextlib.suppress(Exception):
                raw.release_conn()


def _lines(raw: Any) -> Iterator[bytes]:
    """Newline-delimited JSON from a chunked watch stream."""
    pending = b""
    for chunk in raw.stream(4096, decode_content=True):
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                yield line
    if pending.strip():
        yield pending


# --- the adapter --------------------------------------------------------------------------------


class KubeCluster:
    """Kubernetes objects on an API server, with MemoryCluster's semantics (module docstring).

    Thread-safe: caches fill from watch threads while the operator reads them.
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
        #: Who writes the Events (events.k8s.io ``reportingInstance``): the pod's name.
        self.reporting_instance = (
            reporting_instance or os.environ.get("POD_NAME") or socket.gethostname()
        )
        self._events_api: str | None = None
        self.settings = settings or ClientSettings()
        self._api = _Api(api_client, self.settings, sleep=sleep)
        self._uncached = frozenset(uncached)
        self._informers: dict[type[KubeObject], _Informer] = {}
        self._informers_lock = threading.Lock()
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
        configuration = kube_client.Configuration()
        try:
            if kubeconfig or in_cluster is False:
                kube_config.load_kube_config(
                    config_file=kubeconfig, context=context, client_configuration=configuration
                )
            elif in_cluster:
                kube_config.load_incluster_config(client_configuration=configuration)
            else:
                try:
                    kube_config.load_incluster_config(client_configuration=configuration)
                except kube_config.ConfigException:
                    kube_config.load_kube_config(
                        context=context, client_configuration=configuration
                    )
        except (kube_config.ConfigException, OSError, ValueError) as error:
            where = kubeconfig or "the in-cluster service account or ~/.kube/config"
            raise ClusterError(
                f"cannot load Kubernetes credentials from {where}: {error}"
            ) from None
        # Retries are ours (rate limit aware); urllib3 only retries failed connects.
        configuration.retries = urllib3.Retry(
            total=None,
            connect=1,
            read=0,
            redirect=0,
            status=0,
            other=0,
            respect_retry_after_header=False,
            raise_on_status=False,
        )
        configuration.client_go_retries = False
        return cls(kube_client.ApiClient(configuration), settings, uncached=uncached)

    @property
    def host(self) -> str:
        return str(self._client.configuration.host)

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
        """Stop every watch and close connections."""
        self._stop.set()
        with self._streams_lock:
            streams = list(self._streams)
        for raw in streams:
            with contextlib.suppress(Exception):
                raw.shutdown()
        with self._informers_lock:
            informers = list(self._informers.values())
        deadline = time.monotonic() + 2.0
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

    def _informer(self, kind: type[KubeObject], wait: bool = True) -> _Informer:
        with self._informers_lock:
            informer = self._informers.get(kind)
            if informer is None:
                informer = _Informer(self, kind)
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

    def events_api(self) -> str:
        """``events.k8s.io/v1`` when the server serves it, else ``v1`` (asked once)."""
        if self._events_api is None:
            answer = self._api.call("GET", f"/apis/{EVENTS_V1}")
            if answer.status == 404:
                self._events_api = "v1"
            elif 200 <= answer.status < 300:
                served = {r.get("name") for r in answer.body.get("resources") or []}
                self._events_api = EVENTS_V1 if "events" in served else "v1"
            else:
                raise ClusterError(
                    f"discovery of {EVENTS_V1}: HTTP {answer.status} {answer.message}"
                )
            log.info("writing Events through %s", self._events_api)
        return self._events_api

    def _events_v1(self, kind: type[KubeObject]) -> bool:
        return kind is Event and self.events_api() == EVENTS_V1

    def _event_from(self, data: Mapping[str, Any]) -> Event:
        return self._model(Event, event_from_v1(data))

    def _read_event_v1(self, name: str, namespace: str) -> Event | None:
        answer = self._api.call("GET", _events_v1_path(namespace or DEFAULT_NAMESPACE, name))
        if answer.status == 404:
            return None
        _raise_for(answer, Event, name, namespace)
        return self._event_from(answer.body)

    def _list_events_v1(
        self, namespace: str | None, labels: Mapping[str, str] | None
    ) -> builtins.list[Event]:
        query = {"labelSelector": ",".join(f"{k}={v}" for k, v in labels.items())} if labels else {}
        answer = self._api.call("GET", _events_v1_path(namespace), query)
        _raise_for(answer, Event, "(list)", namespace or "")
        found = [self._event_from(item) for item in answer.body.get("items") or []]
        return sorted(found, key=lambda e: (e.namespace, e.name))

    def _create_event_v1(self, event: Event) -> Event:
        namespace = event.metadata.namespace or DEFAULT_NAMESPACE
        body = event_to_v1(event, self.reporting_instance)
        body["metadata"]["namespace"] = namespace
        for server_owned in ("uid", "resourceVersion"):
            body["metadata"].pop(server_owned, None)
        answer = self._api.call("POST", _events_v1_path(namespace), body=body)
        _raise_for(answer, Event, event.name, namespace)
        return self._event_from(answer.body)

    def _update_event_v1(self, event: Event) -> Event:
        """A repeat: a merge patch of the series (count and last time), as client-go does."""
        namespace = event.metadata.namespace or DEFAULT_NAMESPACE
        body = event_to_v1(event, self.reporting_instance)
        patch: dict[str, Any] = {"series": body.get("series"), "note": body["note"]}
        answer = self._api.call(
            "PATCH",
            _events_v1_path(namespace, event.name),
            body=patch,
            content_type=MERGE_PATCH,
        )
        _raise_for(answer, Event, event.name, namespace)
        return self._event_from(answer.body)

    def _update_event_core(self, event: Event) -> Event:
        """A repeat on core/v1: a merge patch of the count and last time (the chart grants
        ``patch`` on events, not ``update``)."""
        namespace = event.metadata.namespace or DEFAULT_NAMESPACE
        data = event.to_dict()
        patch = {k: data.get(k) for k in ("count", "lastTimestamp", "message")}
        answer = self._api.call(
            "PATCH", object_path(Event, event.name, namespace), body=patch, content_type=MERGE_PATCH
        )
        _raise_for(answer, Event, event.name, namespace)
        return self._model(Event, answer.body)

    # -- reads -----------------------------------------------------------------------------------

    @staticmethod
    def _key(kind: type[KubeObject], name: str, namespace: str) -> _Key:
        return ((namespace or DEFAULT_NAMESPACE), name) if kind.NAMESPACED else ("", name)

    def get(self, kind: type[T], name: str, namespace: str = "") -> T | None:
        if self._events_v1(kind):
            return self._read_event_v1(name, namespace)  # type: ignore[return-value]
        if kind in self._uncached:
            return self.read(kind, name, namespace)
        stored = self._informer(kind).get(self._key(kind, name, namespace))
        return None if stored is None else copy_object(stored)  # type: ignore[return-value]

    def read(self, kind: type[T], name: str, namespace: str = "") -> T | None:
        """A live GET from the server, bypassing the cache."""
        if self._events_v1(kind):
            return self._read_event_v1(name, namespace)  # type: ignore[return-value]
        answer = self._api.call("GET", object_path(kind, name, namespace))
        if answer.status == 404:
            return None
        _raise_for(answer, kind, name, namespace)
        return self._model(kind, answer.body)

    def list(
        self,
        kind: type[T],
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> builtins.list[T]:
        if self._events_v1(kind):
            return self._list_events_v1(namespace, labels)  # type: ignore[return-value]
        if kind in self._uncached:
            return self._list_live(kind, namespace, labels)
        found = self._informer(kind).peek(namespace, labels)
        with collector_paused():
            return [copy_object(obj) for obj in found]  # type: ignore[misc]

    def _list_live(
        self, kind: type[T], namespace: str | None, labels: Mapping[str, str] | None
    ) -> builtins.list[T]:
        query = {"labelSelector": ",".join(f"{k}={v}" for k, v in labels.items())} if labels else {}
        answer = self._api.call("GET", collection_path(kind, namespace), query)
        _raise_for(answer, kind, "(list)", namespace or "")
        objects = []
        for item in answer.body.get("items") or []:
            item.setdefault("apiVersion", kind.API_VERSION)
            item.setdefault("kind", kind.KIND)
            objects.append(self._model(kind, item))
        return sorted(objects, key=lambda o: (o.namespace, o.name))

    @staticmethod
    def _model(kind: type[T], data: Mapping[str, Any]) -> T:
        try:
            return kind.model_validate(data)
        except ValidationError as error:
            meta = data.get("metadata") or {}
            raise InvalidError(
                f"{kind.KIND} {meta.get('name', '?')} from the API server does not parse: {error}"
            ) from None

    # -- writes ----------------------------------------------------------------------------------

    def _taken_in(self, kind: type[T], data: Mapping[str, Any], deleted: bool = False) -> T:
        obj = self._model(kind, data)
        if kind not in self._uncached:
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
            return self._create_event_v1(obj)  # type: ignore[return-value]
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
        _raise_for(answer, kind, name, namespace or "")
        created = self._taken_in(kind, answer.body)
        if "status" in kind.model_fields and "status" in obj.model_fields_set:
            wanted = getattr(obj, "status")  # noqa: B009
            if wanted != getattr(created, "status"):  # noqa: B009
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
        return base  # type: ignore[return-value]

    def _patch(
        self,
        obj: T,
        path: str,
        ops: builtins.list[dict[str, Any]],
        untestable: bool,
    ) -> _Answer:
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
                return self._update_event_v1(obj)  # type: ignore[return-value]
            return self._update_event_core(obj)  # type: ignore[return-value]
        base = self._base_of(obj)
        if base is not None:
            ops, untestable = json_patch(
                _spec_and_metadata(base.to_dict()), _spec_and_metadata(obj.to_dict())
            )
            if not ops:
                return copy_object(base)
            answer = self._patch(obj, object_path(kind, obj.name, obj.namespace), ops, untestable)
            if not _precondition_failed(answer):
                return self._after_write(kind, obj, answer)
            self.patch_fallbacks += 1
        body = obj.to_dict()
        answer = self._api.call("PUT", object_path(kind, obj.name, obj.namespace), body=body)
        return self._after_write(kind, obj, answer)

    def _after_write(self, kind: type[T], obj: T, answer: _Answer) -> T:
        _raise_for(answer, kind, obj.name, obj.namespace)
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
                {"status": base.to_dict().get("status", {})},
                {"status": obj.to_dict().get("status", {})},
            )
            if not ops:
                return copy_object(base)
            answer = self._patch(obj, path, ops, untestable)
            if not _precondition_failed(answer):
                _raise_for(answer, kind, obj.name, obj.namespace)
                return self._taken_in(kind, answer.body)
            self.patch_fallbacks += 1
        answer = self._api.call("PUT", path, body=obj.to_dict())
        _raise_for(answer, kind, obj.name, obj.namespace)
        return self._taken_in(kind, answer.body)

    def delete(self, kind: type[T], name: str, namespace: str = "") -> None:
        path = object_path(kind, name, namespace)
        if self._events_v1(kind):
            path = _events_v1_path(namespace or DEFAULT_NAMESPACE, name)
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
        _raise_for(answer, kind, name, namespace)
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
        _raise_for(answer, Pod, pod_name, namespace)
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
        _raise_for(answer, Pod, pod_name, namespace)
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


__all__ = [
    "ClientSettings",
    "KubeCluster",
    "ServerUnavailableError",
    "TokenBucket",
    "TooManyRequestsError",
    "collection_path",
    "object_path",
    "plural_of",
]
