"""One kind's list+watch cache, and the past versions it keeps as bases for patches."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import urllib3
from pydantic import ValidationError

from nodewright.api.meta import KubeObject, compact
from nodewright.cluster import ClusterError
from nodewright.cluster.kube.routing import collection_path, plural_of
from nodewright.cluster.kube.shared import SharedParts
from nodewright.cluster.kube.slim import READ_ONLY, slimmed
from nodewright.cluster.kube.transport import json_object, raise_for

if TYPE_CHECKING:
    from nodewright.cluster.kube.adapter import KubeCluster

log = logging.getLogger("nodewright.cluster.kube")

#: A cached object's (namespace, name); the namespace is "" for cluster-scoped kinds.
Key = tuple[str, str]

#: How many earlier versions of each object a cache remembers as bases for patches (only for
#: kinds nodewright writes: see :data:`~nodewright.cluster.kube.slim.READ_ONLY`).
PAST_VERSIONS_KEPT = 3
#: Objects asked for per page when listing (client-go's reflector asks for 500).
PAGE_SIZE = 500


def _version_number(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


class Informer:
    """One kind's cache: list, then watch from the list's resourceVersion, relisting on
    410 Gone, on errors and every ``resync_period``."""

    def __init__(self, cluster: KubeCluster, kind: type[KubeObject]) -> None:
        self.kind = kind
        self._cluster = cluster
        self._api = cluster._api
        self.objects: dict[Key, KubeObject] = {}
        self._sorted: list[Key] | None = None
        self.lock = threading.RLock()
        self.synced = threading.Event()
        self.resource_version = ""
        #: keys deleted by this process and the resourceVersion they were deleted at: an
        #: older watch event must not bring them back.
        self._tombstones: dict[Key, int] = {}
        #: the last few versions each key held before its current one: the base a caller's
        #: copy is diffed against when it writes back (see :meth:`KubeCluster.update`).
        self._past: dict[Key, list[KubeObject]] = {}
        #: Kinds nodewright never writes back need no past versions.
        self._keeps_past = kind not in READ_ONLY
        #: Read-only kinds hold equal parts of their objects once (used on this cache's
        #: thread only: see :mod:`~nodewright.cluster.kube.shared`).
        self._shared = SharedParts() if kind in READ_ONLY else None
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

    def get(self, key: Key) -> KubeObject | None:
        with self.lock:
            return self.objects.get(key)

    def version_of(self, key: Key, resource_version: str) -> KubeObject | None:
        """The object as it was at ``resource_version``, if this cache still remembers it."""
        with self.lock:
            current = self.objects.get(key)
            if current is not None and current.metadata.resource_version == resource_version:
                return current
            for past in reversed(self._past.get(key, ())):
                if past.metadata.resource_version == resource_version:
                    return past
        return None

    def _remember(self, key: Key, replaced: KubeObject | None) -> None:
        """Keep ``replaced`` (called with the lock held) as one of the key's past versions."""
        if replaced is None or not self._keeps_past:
            return
        past = self._past.setdefault(key, [])
        past.append(replaced)
        if len(past) > PAST_VERSIONS_KEPT:
            del past[0]

    # -- taking in changes -----------------------------------------------------------------------

    def _key_of(self, obj: KubeObject) -> Key:
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
            self._cluster._stage(self.kind, key)
        self._cluster._changed()
        self._cluster.sync()  # a write of this process: the state shows it at once

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
                    self._cluster._stage(self.kind, key)
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
                self._cluster._stage(self.kind, key)
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
            for key in set(self.objects) | set(fresh):
                if self.objects.get(key) is not fresh.get(key):
                    self._cluster._stage(self.kind, key)
            self.objects = fresh
            self._sorted = None
            self._tombstones.clear()
            self.resource_version = resource_version
        if changed:
            self._cluster._changed()

    def _forget_tombstones(self) -> None:
        """Drop the tombstones the watch has passed: no event older than them can come."""
        seen = _version_number(self.resource_version)
        if seen is None or not self._tombstones:
            return
        with self.lock:
            self._tombstones = {k: v for k, v in self._tombstones.items() if v > seen}

    # -- the loop --------------------------------------------------------------------------------

    def _parse(self, data: Mapping[str, Any]) -> KubeObject | None:
        try:
            obj = self.kind.model_validate(slimmed(self.kind, data))
        except ValidationError as error:
            meta = data.get("metadata") or {}
            name = meta.get("name", "?") if isinstance(meta, dict) else "?"
            problems = error.errors()
            field = ".".join(str(p) for p in problems[0]["loc"]) if problems else "?"
            message = problems[0]["msg"] if problems else str(error)
            log.warning("ignoring %s %s: field %s: %s", self.kind.KIND, name, field, message)
            return None
        compact(obj)
        if self._shared is not None:
            obj = self._shared.share(obj)
        return obj

    def _dropped(self, count: int = 1) -> None:
        """Note (on this cache's thread) that objects left the cache."""
        if self._shared is not None:
            self._shared.changed(count)

    def list_now(self) -> None:
        """LIST the whole kind, a page at a time, and replace the cache with it."""
        objects: list[KubeObject] = []
        version = self._list_pages(objects, PAGE_SIZE)
        if version is None:  # the list's snapshot was compacted away between two pages
            log.info(
                "listing %s: the snapshot expired between pages, listing at once",
                plural_of(self.kind.KIND),
            )
            objects.clear()
            version = self._list_pages(objects, None) or ""
        dropped = len(self.objects)
        self._replace(objects, version)
        self._dropped(dropped)
        self.lists += 1
        self.synced.set()

    def _list_pages(self, objects: list[KubeObject], limit: int | None) -> str | None:
        """Append every object to ``objects``; the list's resourceVersion, or None when a
        later page answers 410 Gone. Each page is parsed (and trimmed) before the next is
        asked for, so a list of thousands of objects never holds them all as JSON."""
        token = ""
        while True:
            query = {"limit": str(limit)} if limit else {}
            if token:
                query["continue"] = token
            answer = self._api.call("GET", collection_path(self.kind, None), query)
            if answer.status == 410 and token:
                return None
            raise_for(answer, self.kind, "(list)", "")
            for item in answer.body.get("items") or []:
                if not isinstance(item, dict):
                    continue
                item.setdefault("apiVersion", self.kind.API_VERSION)
                item.setdefault("kind", self.kind.KIND)
                obj = self._parse(item)
                if obj is not None:
                    objects.append(obj)
            metadata = answer.body.get("metadata") or {}
            token = str(metadata.get("continue") or "")
            if not token:
                return str(metadata.get("resourceVersion") or "")

    def _run(self) -> None:
        """List, then watch from the list's resourceVersion; a watch that ends or breaks is
        resumed from the last resourceVersion seen (as client-go's reflector does), and only
        a 410 Gone or the resync period lists again."""
        failures = 0
        stop = self._cluster._stop
        listed = False
        deadline = 0.0
        while not stop.is_set():
            try:
                if not listed or time.monotonic() >= deadline:
                    self.list_now()
                    listed = True
                    failures = 0
                    deadline = time.monotonic() + self._api.settings.resync_period
                while not stop.is_set() and time.monotonic() < deadline:
                    current = self._watch_once(deadline - time.monotonic())
                    failures = 0
                    if not current:
                        listed = False  # 410 Gone: list again
                        break
            except ClusterError as error:  # the server refused the list or the watch
                failures += 1
                listed = False
                if not stop.is_set():
                    log.warning("cache of %s: %s", plural_of(self.kind.KIND), error)
            except (urllib3.exceptions.HTTPError, OSError) as error:
                failures += 1  # a broken connection: resume from the last resourceVersion
                if not stop.is_set():
                    log.warning(
                        "watch of %s broke: %s: %s",
                        plural_of(self.kind.KIND),
                        type(error).__name__,
                        error,
                    )
            except Exception:  # a bug must not leave the cache silently stale
                failures += 1
                listed = False
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
                    "watch of %s expired (410 Gone: resourceVersion %s too old), listing again",
                    plural_of(self.kind.KIND),
                    self.resource_version,
                )
                return False
            if status != 200:
                body = json_object(raw.read())
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
                            "watch of %s expired (410 Gone: %s), listing again",
                            plural_of(self.kind.KIND),
                            data.get("message") or "resourceVersion too old",
                        )
                        return False
                    raise ClusterError(
                        f"watch of {plural_of(self.kind.KIND)}: {data.get('message', data)}"
                    )
                meta = data.get("metadata") or {}
                version = str(meta.get("resourceVersion") or "")
                if kind == "BOOKMARK":
                    self.resource_version = version or self.resource_version
                    self._forget_tombstones()
                    if self._shared is not None:
                        self._shared.settle()
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
                    if kind == "DELETED":
                        self._dropped()
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
