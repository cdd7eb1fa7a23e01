"""A loopback fake Kubernetes API server speaking the real HTTPS + JSON protocol.

It serves any ``/api/v1/...`` or ``/apis/GROUP/VERSION/...`` resource from one store with a
cluster-wide resourceVersion, and keeps the rules clients depend on: list with
``metadata.resourceVersion``; watch streams (chunked JSON lines, ``timeoutSeconds``, an
``ERROR`` event with code 410 when the asked-for resourceVersion was compacted away);
409 on a stale resourceVersion or an existing name; ``generateName``; finalizers and
``deletionTimestamp``; the status subresource (status dropped on create for CRDs, reset for
pods; ignored by a main-resource PUT); ``generation`` bumps on spec changes; no-op writes
keep the resourceVersion; the Binding and Eviction subresources with a PodDisruptionBudget
check (429). Like a real server it answers every JSON patch it cannot apply with a bare 422
(:data:`NOT_APPLIED`) and stores unset Go timestamps as ``null`` (:data:`NULL_TIMESTAMPS`);
``tests/kube/test_server_contract.py`` checks both against a real control plane. Faults can be
injected per request (any status, ``Retry-After``, delays), and every request is recorded.
Bearer-token auth is required.
"""

from __future__ import annotations

import copy
import json
import re
import socket
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import trustme
import yaml

TOKEN = "s3cr3t-fake-token"

#: What a real API server answers to any JSON patch it cannot apply (a failed ``test``, a
#: missing path, an unknown operation): 422 with this message and empty ``details``.
NOT_APPLIED: dict[str, Any] = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server rejected our request due to an error in our request",
    "reason": "Invalid",
    "details": {},
    "code": 422,
}

#: Timestamps a real API server stores as ``null`` when a writer leaves them out (Go's
#: ``metav1.Time`` is a struct, so omitempty never drops it): by resource, the item lists
#: under ``status`` and, in each item, the timestamp fields (dotted for nested structs).
NULL_TIMESTAMPS: dict[str, dict[str, tuple[str, ...]]] = {
    "pods": {
        "conditions": ("lastProbeTime", "lastTransitionTime"),
        **{
            statuses: tuple(
                f"{state}.{phase}.{stamp}"
                for state in ("state", "lastState")
                for phase, stamp in (
                    ("running", "startedAt"),
                    ("terminated", "startedAt"),
                    ("terminated", "finishedAt"),
                )
            )
            for statuses in (
                "containerStatuses",
                "initContainerStatuses",
                "ephemeralContainerStatuses",
            )
        },
    },
    "nodes": {"conditions": ("lastHeartbeatTime", "lastTransitionTime")},
    "persistentvolumeclaims": {"conditions": ("lastProbeTime", "lastTransitionTime")},
}

#: Built-in groups: everything else is a CRD (status dropped on create).
BUILTIN_GROUPS = {"", "apps", "policy", "storage.k8s.io", "coordination.k8s.io", "batch"}
#: Kinds whose main resource has no status subresource.
NO_STATUS = {"events", "leases", "namespaces", "storageclasses", "csinodes"}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


@dataclass
class Fault:
    """Answer matching requests with ``status`` (``times`` times) or delay them."""

    method: str
    path_contains: str
    status: int = 0
    times: int = 1
    retry_after: float | None = None
    delay: float = 0.0
    body: dict[str, Any] | None = None


@dataclass
class _Resource:
    group: str
    version: str
    plural: str
    namespace: str | None
    name: str | None
    sub: str | None

    @property
    def gvr(self) -> tuple[str, str, str]:
        return (self.group, self.version, self.plural)


@dataclass
class FakeApiServer:
    """Start with :meth:`start`; ``kubeconfig`` then points a client at it."""

    tmp: Path
    #: How many watch events are kept; older resourceVersions get 410 Gone.
    history_limit: int = 10_000
    objects: dict[tuple[tuple[str, str, str], str, str], dict[str, Any]] = field(
        default_factory=dict
    )
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    #: every PATCH: (content type, plural, subresource, body)
    patches: list[tuple[str, str, str | None, Any]] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)

    def __post_init__(self) -> None:
        #: API groups this server does not serve (404 on discovery and on every request).
        self.unserved_groups: set[str] = set()
        self.rv = 100
        self.history: list[tuple[int, str, tuple[str, str, str], dict[str, Any]]] = []
        self.compacted = 0
        self.lock = threading.Condition()
        self.stopping = False
        self.seen_headers: list[dict[str, str]] = []
        self.paused = False
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> FakeApiServer:
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        server.socket = context.wrap_socket(server.socket, server_side=True)
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True, name="fake-apiserver").start()
        host = f"https://127.0.0.1:{server.server_address[1]}"
        ca_file = self.tmp / "ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        self.kubeconfig = self.tmp / "kubeconfig"
        self.kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "fake",
                            "cluster": {"server": host, "certificate-authority": str(ca_file)},
                        }
                    ],
                    "users": [{"name": "fake", "user": {"token": TOKEN}}],
                    "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
                    "current-context": "fake",
                }
            ),
            encoding="utf-8",
        )
        self.host = host
        return self

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # -- test helpers ----------------------------------------------------------------------------

    def inject(self, fault: Fault) -> None:
        with self.lock:
            self.faults.append(fault)

    def compact(self) -> None:
        """Forget the watch history: a watch from before the latest write gets 410 Gone."""
        with self.lock:
            self.history.clear()
            self.compacted = self.rv

    def pause_watches(self) -> None:
        """End open watches; new ones wait until :meth:`resume_watches`."""
        with self.lock:
            self.paused = True
        self.drop_watches()

    def resume_watches(self) -> None:
        with self.lock:
            self.paused = False
            self.lock.notify_all()

    def drop_watches(self) -> None:
        """End every open watch stream (as an API server restart would)."""
        with self.lock:
            self._generation_of_watches = getattr(self, "_generation_of_watches", 0) + 1
            self.lock.notify_all()

    def count(self, method: str, contains: str) -> int:
        return sum(1 for m, p, _ in self.requests if m == method and contains in p)

    def stored(self, plural: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        with self.lock:
            for (gvr, ns, n), obj in self.objects.items():
                if gvr[2] == plural and n == name and ns == namespace:
                    return copy.deepcopy(obj)
        return None

    def all(self, plural: str) -> list[dict[str, Any]]:
        with self.lock:
            return [copy.deepcopy(o) for (g, _, _), o in self.objects.items() if g[2] == plural]

    # -- the store -------------------------------------------------------------------------------

    def _bump(self, gvr: tuple[str, str, str], kind: str, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.history.append((self.rv, kind, gvr, copy.deepcopy(obj)))
        if len(self.history) > self.history_limit:
            dropped = self.history.pop(0)
            self.compacted = dropped[0]
        self.lock.notify_all()

    def _remove(self, gvr: tuple[str, str, str], ns: str, name: str) -> dict[str, Any]:
        obj = self.objects.pop((gvr, ns, name))
        self._bump(gvr, "DELETED", obj)
        return obj

    def _delete(self, gvr: tuple[str, str, str], ns: str, name: str) -> dict[str, Any]:
        obj = self.objects[(gvr, ns, name)]
        if obj["metadata"].get("finalizers"):
            if not obj["metadata"].get("deletionTimestamp"):
                obj["metadata"]["deletionTimestamp"] = _now()
                self._bump(gvr, "MODIFIED", obj)
            return copy.deepcopy(obj)
        return self._remove(gvr, ns, name)


def _parse_path(path: str) -> _Resource | None:
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    return _Resource(
        group,
        version,
        rest[0],
        namespace,
        rest[1] if len(rest) > 1 else None,
        rest[2] if len(rest) > 2 else None,
    )


def _selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if not selector:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        has = expression["key"] in labels
        values = expression.get("values") or []
        op = expression["operator"]
        if (
            (op == "In" and labels.get(expression["key"]) not in values)
            or (op == "NotIn" and labels.get(expression["key"]) in values)
            or (op == "Exists" and not has)
            or (op == "DoesNotExist" and has)
        ):
            return False
    return True


def _handler_for(api: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def setup(self) -> None:
            super().setup()
            # Like Go's net/http: no Nagle delay between a response's header and body.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        # -- plumbing ----------------------------------------------------------------------

        def _send(self, code: int, body: object, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            with api.lock:
                api.requests.append((self.command, self.path, code))
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            if not length:
                return {}
            value = json.loads(self.rfile.read(length))
            if self.command == "PATCH":
                return value  # type: ignore[no-any-return]
            return value if isinstance(value, dict) else {}

        def _fault(self) -> bool:
            with api.lock:
                for fault in api.faults:
                    if fault.method == self.command and fault.path_contains in self.path:
                        fault.times -= 1
                        if fault.times <= 0:
                            api.faults.remove(fault)
                        break
                else:
                    return False
            if fault.delay:
                time.sleep(fault.delay)
            if not fault.status:
                return False
            headers = {}
            if fault.retry_after is not None:
                headers["Retry-After"] = f"{fault.retry_after:g}"
            self._send(
                fault.status,
                fault.body or _status(fault.status, "Injected", f"injected {fault.status}"),
                headers,
            )
            return True

        def _handle(self, verb: str) -> None:
            api.seen_headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send(401, _status(401, "Unauthorized", "Unauthorized"))
                return
            body: Any = self._body() if verb in ("POST", "PUT", "DELETE", "PATCH") else {}
            if self._fault():
                return
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            parts = [p for p in url.path.split("/") if p]
            group = parts[1] if len(parts) > 1 and parts[0] == "apis" else ""
            if group in api.unserved_groups:
                self._send(
                    404,
                    _status(404, "NotFound", "the server could not find the requested resource"),
                )
                return
            if verb == "GET" and (
                (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis")
            ):
                self._send(200, _discovery(parts))
                return
            resource = _parse_path(url.path)
            if resource is None:
                self._send(404, _status(404, "NotFound", f"no route {url.path}"))
                return
            try:
                getattr(self, f"_{verb.lower()}")(resource, query, body)
            except _Reply as reply:
                self._send(reply.code, reply.body)

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PUT(self) -> None:
            self._handle("PUT")

        def do_DELETE(self) -> None:
            self._handle("DELETE")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

        # -- verbs -------------------------------------------------------------------------

        def _get(self, r: _Resource, query: dict[str, str], _: dict[str, Any]) -> None:
            if r.name is None and query.get("watch") in ("true", "1"):
                self._watch(r, query)
                return
            with api.lock:
                if r.name is not None:
                    obj = api.objects.get((r.gvr, r.namespace or "", r.name))
                    if obj is None:
                        raise _Reply(404, _not_found(r))
                    self._send(200, copy.deepcopy(obj))
                    return
                selector = _label_query(query.get("labelSelector", ""))
                items = [
                    copy.deepcopy(o)
                    for (gvr, ns, _), o in sorted(api.objects.items(), key=lambda i: i[0][1:])
                    if gvr == r.gvr
                    and (r.namespace is None or ns == r.namespace)
                    and all(o["metadata"].get("labels", {}).get(k) == v for k, v in selector)
                ]
                self._send(
                    200,
                    {
                        "kind": "List",
                        "apiVersion": "v1",
                        "metadata": {"resourceVersion": str(api.rv)},
                        "items": items,
                    },
                )

        def _watch(self, r: _Resource, query: dict[str, str]) -> None:
            with api.lock:
                api.lock.wait_for(lambda: not api.paused or api.stopping, timeout=30)
            since = int(query.get("resourceVersion") or api.rv)
            deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with api.lock:
                api.requests.append(("GET", self.path, 200))
                generation = getattr(api, "_generation_of_watches", 0)

            def emit(event: dict[str, Any]) -> None:
                data = json.dumps(event).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            try:
                with api.lock:
                    if since < api.compacted:
                        emit(
                            {
                                "type": "ERROR",
                                "object": _status(
                                    410, "Expired", f"too old resource version: {since}"
                                ),
                            }
                        )
                        self.wfile.write(b"0\r\n\r\n")
                        return
                last = since
                while True:
                    with api.lock:
                        if api.paused:
                            # A stream that slipped past the pause (a reconnect in flight
                            # when it began) must not deliver events either.
                            break
                        pending = [
                            (rv, kind, obj)
                            for rv, kind, gvr, obj in api.history
                            if rv > last
                            and gvr == r.gvr
                            and (
                                r.namespace is None
                                or obj["metadata"].get("namespace") == r.namespace
                            )
                        ]
                        if not pending:
                            remaining = deadline - time.monotonic()
                            ended = (
                                api.stopping
                                or remaining <= 0
                                or generation != getattr(api, "_generation_of_watches", 0)
                            )
                            if ended:
                                break
                            api.lock.wait(min(remaining, 0.5))
                            continue
                    for rv, kind, obj in pending:
                        emit({"type": kind, "object": obj})
                        last = rv
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                return

        def _post(self, r: _Resource, _: dict[str, str], body: dict[str, Any]) -> None:
            if r.sub == "binding":
                self._bind(r, body)
                return
            if r.sub == "eviction":
                self._evict(r)
                return
            if r.name is not None:
                raise _Reply(405, _status(405, "MethodNotAllowed", "POST on an object"))
            meta = body.setdefault("metadata", {})
            with api.lock:
                if not meta.get("name"):
                    prefix = meta.get("generateName")
                    if not prefix:
                        raise _Reply(422, _status(422, "Invalid", "metadata.name: Required value"))
                    meta["name"] = prefix + uuid.uuid4().hex[:5]
                key = (r.gvr, r.namespace or "", meta["name"])
                if key in api.objects:
                    raise _Reply(
                        409,
                        _status(
                            409,
                            "AlreadyExists",
                            f'{r.plural} "{meta["name"]}" already exists',
                            name=meta["name"],
                            kind=r.plural,
                        ),
                    )
                if r.namespace:
                    meta["namespace"] = r.namespace
                _validate(r, body)
                meta["uid"] = str(uuid.uuid4())
                meta["creationTimestamp"] = _now()
                meta["generation"] = 1
                meta.pop("deletionTimestamp", None)
                if r.group not in BUILTIN_GROUPS:
                    body.pop("status", None)
                if r.plural == "pods":
                    body["status"] = {"phase": "Pending"}
                _store_like_go(r, body)
                api.objects[key] = body
                api._bump(r.gvr, "ADDED", body)
                self._send(201, copy.deepcopy(body))

        def _patch(self, r: _Resource, _: dict[str, str], body: Any) -> None:
            """JSON patch and JSON merge patch (strategic merge patch is not served: it
            needs Go struct tags, and CRDs do not take it either)."""
            if r.name is None:
                raise _Reply(405, _status(405, "MethodNotAllowed", "PATCH on a collection"))
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            with api.lock:
                api.patches.append((content_type, r.plural, r.sub, copy.deepcopy(body)))
                current = api.objects.get((r.gvr, r.namespace or "", r.name))
                if current is None:
                    raise _Reply(404, _not_found(r))
                if content_type == "application/json-patch+json":
                    if not isinstance(body, list):
                        raise _Reply(400, _status(400, "BadRequest", "a JSON patch is a list"))
                    patched = apply_json_patch(current, body)
                elif content_type == "application/merge-patch+json":
                    if not isinstance(body, dict):
                        raise _Reply(400, _status(400, "BadRequest", "a merge patch is an object"))
                    patched = apply_merge_patch(current, body)
                else:
                    raise _Reply(
                        415,
                        _status(415, "UnsupportedMediaType", f"unsupported patch {content_type}"),
                    )
                if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                    raise _Reply(422, _status(422, "Invalid", "the patch removed metadata"))
                self._write(r, patched)

        def _put(self, r: _Resource, _: dict[str, str], body: dict[str, Any]) -> None:
            if r.name is None:
                raise _Reply(405, _status(405, "MethodNotAllowed", "PUT on a collection"))
            with api.lock:
                self._write(r, body)

        def _write(self, r: _Resource, body: dict[str, Any]) -> None:
            """Replace an object (or its status) with ``body``, under ``api.lock``."""
            key = (r.gvr, r.namespace or "", r.name or "")
            current = api.objects.get(key)
            if current is None:
                raise _Reply(404, _not_found(r))
            meta = body.get("metadata") or {}
            given = meta.get("resourceVersion")
            if given and given != current["metadata"]["resourceVersion"]:
                raise _Reply(
                    409,
                    _status(
                        409,
                        "Conflict",
                        f'Operation cannot be fulfilled on {r.plural} "{r.name}": the object '
                        "has been modified; please apply your changes to the latest version "
                        "and try again",
                    ),
                )
            _validate(r, body)
            new = copy.deepcopy(current)
            if r.sub == "status":
                new["status"] = body.get("status", {})
            elif r.sub is None:
                old_meta = current["metadata"]
                if old_meta.get("deletionTimestamp") and set(meta.get("finalizers") or []) - set(
                    old_meta.get("finalizers") or []
                ):
                    raise _Reply(
                        422,
                        _status(
                            422,
                            "Invalid",
                            "no new finalizers can be added if the object is being deleted",
                        ),
                    )
                new = {k: v for k, v in body.items() if k != "status"}
                if r.plural in NO_STATUS:
                    if "status" in body:
                        new["status"] = body["status"]
                elif "status" in current:
                    new["status"] = current["status"]
                kept = {
                    k: old_meta[k]
                    for k in (
                        "uid",
                        "creationTimestamp",
                        "deletionTimestamp",
                        "generation",
                        "resourceVersion",
                        "namespace",
                    )
                    if k in old_meta
                }
                new["metadata"] = {**meta, **kept}
                ignored = {"metadata": None, "status": None}  # a spec change bumps generation
                if {**new, **ignored} != {**current, **ignored}:
                    new["metadata"]["generation"] = old_meta.get("generation", 1) + 1
            else:
                raise _Reply(404, _status(404, "NotFound", f"no subresource {r.sub}"))
            _store_like_go(r, new)
            if new == current:
                self._send(200, copy.deepcopy(current))
                return
            api.objects[key] = new
            if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
                api._remove(r.gvr, key[1], key[2])
            else:
                api._bump(r.gvr, "MODIFIED", new)
            self._send(200, copy.deepcopy(new))

        def _delete(self, r: _Resource, _: dict[str, str], __: dict[str, Any]) -> None:
            with api.lock:
                key = (r.gvr, r.namespace or "", r.name or "")
                if key not in api.objects:
                    raise _Reply(404, _not_found(r))
                self._send(200, api._delete(r.gvr, key[1], key[2]))

        def _bind(self, r: _Resource, body: dict[str, Any]) -> None:
            with api.lock:
                key = (r.gvr, r.namespace or "", r.name or "")
                pod = api.objects.get(key)
                if pod is None:
                    raise _Reply(404, _not_found(r))
                if pod.get("spec", {}).get("nodeName"):
                    raise _Reply(
                        409,
                        _status(
                            409,
                            "Conflict",
                            f"pod {r.name} is already assigned to node {pod['spec']['nodeName']!r}",
                        ),
                    )
                if pod["metadata"].get("deletionTimestamp"):
                    raise _Reply(422, _status(422, "Invalid", f"pod {r.name} is being deleted"))
                pod.setdefault("spec", {})["nodeName"] = body["target"]["name"]
                conditions = pod.setdefault("status", {}).setdefault("conditions", [])
                conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
                conditions.append(
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": _now()}
                )
                api._bump(r.gvr, "MODIFIED", pod)
                self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

        def _evict(self, r: _Resource) -> None:
            with api.lock:
                ns = r.namespace or ""
                key = (r.gvr, ns, r.name or "")
                pod = api.objects.get(key)
                if pod is None:
                    raise _Reply(404, _not_found(r))
                phase = pod.get("status", {}).get("phase")
                labels = pod["metadata"].get("labels") or {}
                if phase == "Running" and not pod["metadata"].get("deletionTimestamp"):
                    budgets = [
                        o
                        for (g, n, _), o in api.objects.items()
                        if g[2] == "poddisruptionbudgets"
                        and n == ns
                        and _selector_matches(o.get("spec", {}).get("selector"), labels)
                    ]
                    if len(budgets) > 1:
                        raise _Reply(
                            500,
                            _status(
                                500,
                                "InternalError",
                                "This pod has more than one "
                                "PodDisruptionBudget, which the eviction subresource does "
                                "not support.",
                            ),
                        )
                    if budgets and _allowed(api, budgets[0], ns) <= 0:
                        raise _Reply(
                            429,
                            _status(
                                429,
                                "TooManyRequests",
                                f"Cannot evict pod as it would violate the pod's disruption "
                                f"budget {budgets[0]['metadata']['name']}.",
                                causes=[{"reason": "DisruptionBudget"}],
                            ),
                        )
                api._delete(r.gvr, ns, r.name or "")
                self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

    return Handler


def _allowed(api: FakeApiServer, pdb: dict[str, Any], ns: str) -> int:
    selector = pdb.get("spec", {}).get("selector")
    pods = [
        o
        for (g, n, _), o in api.objects.items()
        if g[2] == "pods"
        and n == ns
        and _selector_matches(selector, o["metadata"].get("labels") or {})
        and o.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    ]
    healthy = sum(
        1
        for o in pods
        if o.get("status", {}).get("phase") == "Running"
        and not o["metadata"].get("deletionTimestamp")
    )
    spec = pdb.get("spec", {})
    if spec.get("maxUnavailable") is not None:
        return healthy - max(0, len(pods) - int(spec["maxUnavailable"]))
    if spec.get("minAvailable") is not None:
        return healthy - int(spec["minAvailable"])
    return healthy - len(pods)


def _discovery(parts: list[str]) -> dict[str, Any]:
    group_version = "/".join(parts[1:])
    resources = []
    if group_version == "events.k8s.io/v1":
        resources.append(
            {
                "name": "events",
                "namespaced": True,
                "kind": "Event",
                "verbs": ["create", "get", "list", "patch", "update", "delete", "watch"],
            }
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _store_like_go(r: _Resource, obj: dict[str, Any]) -> None:
    """Fill the timestamps a real server stores as null (:data:`NULL_TIMESTAMPS`)."""
    if r.group != "":
        return
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    for list_name, fields in NULL_TIMESTAMPS.get(r.plural, {}).items():
        for item in status.get(list_name) or []:
            for dotted in fields:
                *parents, last = dotted.split(".")
                node = item
                for part in parents:
                    node = node.get(part) if isinstance(node, dict) else None
                if isinstance(node, dict):
                    node.setdefault(last, None)


_MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


#: A label value: empty, or at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends.
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


def _validate(r: _Resource, body: dict[str, Any]) -> None:
    """The API server's validation of the fields clients get wrong: label values on every
    object, and events.k8s.io/v1 Events. A failure names the object and lists its causes."""
    problems: list[tuple[str, str]] = []
    for value in ((body.get("metadata") or {}).get("labels") or {}).values():
        if not isinstance(value, str) or not _LABEL_VALUE.match(value):
            problems.append(("metadata.labels", f"Invalid value: {value!r}: not a label value"))
    if (r.group, r.plural) == ("events.k8s.io", "events"):
        problems += _event_problems(body)
    if problems:
        name = (body.get("metadata") or {}).get("name", "")
        kind = str(body.get("kind") or r.plural)
        group = f".{r.group}" if r.group else ""
        summary = "; ".join(f"{field}: {message}" for field, message in problems)
        raise _Reply(
            422,
            _status(
                422,
                "Invalid",
                f'{kind}{group} "{name}" is invalid: {summary}',
                name=name,
                group=r.group,
                kind=kind,
                causes=[
                    {"reason": "FieldValueInvalid", "message": message, "field": field}
                    for field, message in problems
                ],
            ),
        )


def _event_problems(body: dict[str, Any]) -> list[tuple[str, str]]:
    problems = []
    if not _MICRO_TIME.match(str(body.get("eventTime") or "")):
        problems.append(("eventTime", "Required value (a MicroTime)"))
    for name in ("reportingController", "reportingInstance", "action", "reason"):
        value = body.get(name)
        if not value:
            problems.append((name, "Required value"))
        elif len(value) > 128:
            problems.append((name, "Too long: must have at most 128 bytes"))
    if len((body.get("note") or "").encode()) > 1024:
        problems.append(("note", "Too long: must have at most 1024 bytes"))
    if body.get("type") not in ("Normal", "Warning"):
        problems.append(("type", f"Unsupported value: {body.get('type')!r}"))
    if not (body.get("regarding") or {}).get("kind"):
        problems.append(("regarding.kind", "Required value"))
    series = body.get("series")
    if series is not None and (
        int(series.get("count") or 0) < 2
        or not _MICRO_TIME.match(str(series.get("lastObservedTime") or ""))
    ):
        problems.append(("series", "count must be >= 2 with a lastObservedTime"))
    return problems


def _unpointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _Reply(422, NOT_APPLIED)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _Reply(422, NOT_APPLIED)
    return node


def apply_json_patch(document: dict[str, Any], ops: list[Any]) -> Any:
    """RFC 6902 as the API server applies it (evanphx/json-patch): a ``test`` of null passes
    on a missing member, a ``replace`` of a missing member adds it, and every operation that
    does not apply is the same bare 422 (:data:`NOT_APPLIED`), whatever went wrong."""
    doc = copy.deepcopy(document)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise _Reply(400, _status(400, "BadRequest", f"malformed patch operation {op!r}"))
        kind, path = op["op"], op["path"]
        parts = _unpointer(path)
        if not parts:
            raise _Reply(422, NOT_APPLIED)
        parent = _parent(doc, parts)
        last = parts[-1]
        if isinstance(parent, list):
            index = len(parent) if last == "-" else int(last) if last.isdigit() else -1
            present = 0 <= index < len(parent)
            current = parent[index] if present else None
        elif isinstance(parent, dict):
            present = last in parent
            current = parent.get(last)
        else:
            raise _Reply(422, NOT_APPLIED)
        if kind == "test":
            if current != op.get("value") or (isinstance(parent, list) and not present):
                raise _Reply(422, NOT_APPLIED)
        elif kind == "remove":
            if not present:
                raise _Reply(422, NOT_APPLIED)
            del parent[index if isinstance(parent, list) else last]
        elif kind == "replace":
            if isinstance(parent, list) and not present:
                raise _Reply(422, NOT_APPLIED)
            parent[index if isinstance(parent, list) else last] = op.get("value")
        elif kind == "add":
            if isinstance(parent, list):
                if not 0 <= index <= len(parent):
                    raise _Reply(422, NOT_APPLIED)
                parent.insert(index, op.get("value"))
            else:
                parent[last] = op.get("value")
        else:
            raise _Reply(422, NOT_APPLIED)
    return doc


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge key by key, null removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def _label_query(text: str) -> list[tuple[str, str]]:
    pairs = []
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        pairs.append((key, value))
    return pairs


def _not_found(r: _Resource) -> dict[str, Any]:
    return _status(404, "NotFound", f'{r.plural} "{r.name}" not found', name=r.name, kind=r.plural)


class _Reply(Exception):
    def __init__(self, code: int, body: dict[str, Any]) -> None:
        super().__init__(code)
        self.code = code
        self.body = body


__all__ = ["NOT_APPLIED", "NULL_TIMESTAMPS", "TOKEN", "FakeApiServer", "Fault"]
