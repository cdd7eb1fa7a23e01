"""The fake API server's HTTP handler: authentication, injected faults, routing, and the
verbs (get, list, watch, create, replace, patch, delete, and the binding and eviction
subresources) over the server's store."""

from __future__ import annotations

import copy
import json
import socket
import ssl
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from tests.kube.apiserver.budgets import disruptions_allowed, selector_matches
from tests.kube.apiserver.patches import apply_json_patch, apply_merge_patch
from tests.kube.apiserver.routing import Resource, discovery, label_query, parse_path
from tests.kube.apiserver.status import Reply, failure, not_found
from tests.kube.apiserver.timestamps import now, store_like_go
from tests.kube.apiserver.validation import validate

if TYPE_CHECKING:
    from tests.kube.fake_apiserver import FakeApiServer

#: Built-in groups: everything else is a CRD (status dropped on create).
BUILTIN_GROUPS = {"", "apps", "policy", "storage.k8s.io", "coordination.k8s.io", "batch"}
#: Kinds whose main resource has no status subresource.
NO_STATUS = {"events", "leases", "namespaces", "storageclasses", "csinodes"}


#: The real server's words for a write whose ``timeout`` passed before it was carried out.
REQUEST_TIMED_OUT = "request did not complete within requested timeout - context deadline exceeded"


def go_duration(text: str) -> float:
    """Seconds in a Go duration as clients write ``timeout`` (``1.5s``, ``500ms``, ``2m``)."""
    for unit, seconds in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(unit) and not (unit == "s" and text.endswith("ms")):
            return float(text[: -len(unit)]) * seconds
    return float(text)


#: The real server's words for a list continued after its snapshot was compacted away.
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


def handler_for(api: FakeApiServer, token: str) -> type[BaseHTTPRequestHandler]:
    """The request handler of ``api``: it answers only requests bearing ``token``."""

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
                fault.body or failure(fault.status, "Injected", f"injected {fault.status}"),
                headers,
            )
            return True

        def _handle(self, verb: str) -> None:
            api.seen_headers.append({k.lower(): v for k, v in self.headers.items()})
            if self.headers.get("Authorization") != f"Bearer {token}":
                self._send(401, failure(401, "Unauthorized", "Unauthorized"))
                return
            received = time.monotonic()
            body: Any = self._body() if verb in ("POST", "PUT", "DELETE", "PATCH") else {}
            if self._fault():
                return
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            # The real server's request deadline runs from when it read the request; a write
            # still waiting past it is given up, not carried out.
            if (
                verb != "GET"
                and "timeout" in query
                and time.monotonic() > received + go_duration(query["timeout"])
            ):
                self._send(504, failure(504, "Timeout", REQUEST_TIMED_OUT))
                return
            parts = [p for p in url.path.split("/") if p]
            group = parts[1] if len(parts) > 1 and parts[0] == "apis" else ""
            if group in api.unserved_groups:
                self._send(
                    404,
                    failure(404, "NotFound", "the server could not find the requested resource"),
                )
                return
            if verb == "GET" and (
                (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis")
            ):
                self._send(200, discovery(parts))
                return
            resource = parse_path(url.path)
            if resource is None:
                self._send(404, failure(404, "NotFound", f"no route {url.path}"))
                return
            try:
                getattr(self, f"_{verb.lower()}")(resource, query, body)
            except Reply as reply:
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

        def _get(self, r: Resource, query: dict[str, str], _: dict[str, Any]) -> None:
            if r.name is None and query.get("watch") in ("true", "1"):
                self._watch(r, query)
                return
            with api.lock:
                if r.name is not None:
                    obj = api.objects.get((r.gvr, r.namespace or "", r.name))
                    if obj is None:
                        raise Reply(404, not_found(r))
                    self._send(200, copy.deepcopy(obj))
                    return
                token = query.get("continue")
                if token:
                    # later pages come from the first page's snapshot, until it is compacted
                    snapshot = api.list_snapshots.pop(token, None)
                    if snapshot is None or snapshot[0] < api.compacted:
                        raise Reply(410, failure(410, "Expired", CONTINUE_EXPIRED))
                    version, items = snapshot
                else:
                    selector = label_query(query.get("labelSelector", ""))
                    version = api.rv
                    items = [
                        copy.deepcopy(o)
                        for (gvr, ns, _), o in sorted(api.objects.items(), key=lambda i: i[0][1:])
                        if gvr == r.gvr
                        and (r.namespace is None or ns == r.namespace)
                        and all(o["metadata"].get("labels", {}).get(k) == v for k, v in selector)
                    ]
                metadata: dict[str, Any] = {"resourceVersion": str(version)}
                limit = int(query.get("limit") or 0)
                if 0 < limit < len(items):
                    items, rest = items[:limit], items[limit:]
                    token = f"page-{len(api.list_snapshots)}-{version}-{len(rest)}"
                    api.list_snapshots[token] = (version, rest)
                    metadata["continue"] = token
                    metadata["remainingItemCount"] = len(rest)
                self._send(
                    200, {"kind": "List", "apiVersion": "v1", "metadata": metadata, "items": items}
                )

        def _watch(self, r: Resource, query: dict[str, str]) -> None:
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
                                "object": failure(
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

        def _post(self, r: Resource, _: dict[str, str], body: dict[str, Any]) -> None:
            if r.sub == "binding":
                self._bind(r, body)
                return
            if r.sub == "eviction":
                self._evict(r)
                return
            if r.name is not None:
                raise Reply(405, failure(405, "MethodNotAllowed", "POST on an object"))
            meta = body.setdefault("metadata", {})
            with api.lock:
                if not meta.get("name"):
                    prefix = meta.get("generateName")
                    if not prefix:
                        raise Reply(422, failure(422, "Invalid", "metadata.name: Required value"))
                    meta["name"] = prefix + uuid.uuid4().hex[:5]
                key = (r.gvr, r.namespace or "", meta["name"])
                if key in api.objects:
                    raise Reply(
                        409,
                        failure(
                            409,
                            "AlreadyExists",
                            f'{r.plural} "{meta["name"]}" already exists',
                            name=meta["name"],
                            kind=r.plural,
                        ),
                    )
                if r.namespace:
                    meta["namespace"] = r.namespace
                validate(r, body)
                meta["uid"] = str(uuid.uuid4())
                meta["creationTimestamp"] = now()
                meta["generation"] = 1
                meta.pop("deletionTimestamp", None)
                if r.group not in BUILTIN_GROUPS:
                    body.pop("status", None)
                if r.plural == "pods":
                    body["status"] = {"phase": "Pending"}
                store_like_go(r, body)
                api.objects[key] = body
                api._bump(r.gvr, "ADDED", body)
                self._send(201, copy.deepcopy(body))

        def _patch(self, r: Resource, _: dict[str, str], body: Any) -> None:
            """JSON patch and JSON merge patch (strategic merge patch is not served: it
            needs Go struct tags, and CRDs do not take it either)."""
            if r.name is None:
                raise Reply(405, failure(405, "MethodNotAllowed", "PATCH on a collection"))
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            with api.lock:
                api.patches.append((content_type, r.plural, r.sub, copy.deepcopy(body)))
                current = api.objects.get((r.gvr, r.namespace or "", r.name))
                if current is None:
                    raise Reply(404, not_found(r))
                if content_type == "application/json-patch+json":
                    if not isinstance(body, list):
                        raise Reply(400, failure(400, "BadRequest", "a JSON patch is a list"))
                    patched = apply_json_patch(current, body)
                elif content_type == "application/merge-patch+json":
                    if not isinstance(body, dict):
                        raise Reply(400, failure(400, "BadRequest", "a merge patch is an object"))
                    patched = apply_merge_patch(current, body)
                else:
                    raise Reply(
                        415,
                        failure(415, "UnsupportedMediaType", f"unsupported patch {content_type}"),
                    )
                if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                    raise Reply(422, failure(422, "Invalid", "the patch removed metadata"))
                self._write(r, patched)

        def _put(self, r: Resource, _: dict[str, str], body: dict[str, Any]) -> None:
            if r.name is None:
                raise Reply(405, failure(405, "MethodNotAllowed", "PUT on a collection"))
            with api.lock:
                self._write(r, body)

        def _write(self, r: Resource, body: dict[str, Any]) -> None:
            """Replace an object (or its status) with ``body``, under ``api.lock``."""
            key = (r.gvr, r.namespace or "", r.name or "")
            current = api.objects.get(key)
            if current is None:
                raise Reply(404, not_found(r))
            meta = body.get("metadata") or {}
            given = meta.get("resourceVersion")
            if given and given != current["metadata"]["resourceVersion"]:
                raise Reply(
                    409,
                    failure(
                        409,
                        "Conflict",
                        f'Operation cannot be fulfilled on {r.plural} "{r.name}": the object '
                        "has been modified; please apply your changes to the latest version "
                        "and try again",
                    ),
                )
            validate(r, body)
            new = copy.deepcopy(current)
            if r.sub == "status":
                new["status"] = body.get("status", {})
            elif r.sub is None:
                old_meta = current["metadata"]
                if old_meta.get("deletionTimestamp") and set(meta.get("finalizers") or []) - set(
                    old_meta.get("finalizers") or []
                ):
                    raise Reply(
                        422,
                        failure(
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
                raise Reply(404, failure(404, "NotFound", f"no subresource {r.sub}"))
            store_like_go(r, new)
            if new == current:
                self._send(200, copy.deepcopy(current))
                return
            api.objects[key] = new
            if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
                api._remove(r.gvr, key[1], key[2])
            else:
                api._bump(r.gvr, "MODIFIED", new)
            self._send(200, copy.deepcopy(new))

        def _delete(self, r: Resource, _: dict[str, str], __: dict[str, Any]) -> None:
            with api.lock:
                key = (r.gvr, r.namespace or "", r.name or "")
                if key not in api.objects:
                    raise Reply(404, not_found(r))
                self._send(200, api._delete(r.gvr, key[1], key[2]))

        def _bind(self, r: Resource, body: dict[str, Any]) -> None:
            with api.lock:
                key = (r.gvr, r.namespace or "", r.name or "")
                pod = api.objects.get(key)
                if pod is None:
                    raise Reply(404, not_found(r))
                if pod.get("spec", {}).get("nodeName"):
                    raise Reply(
                        409,
                        failure(
                            409,
                            "Conflict",
                            f"pod {r.name} is already assigned to node {pod['spec']['nodeName']!r}",
                        ),
                    )
                if pod["metadata"].get("deletionTimestamp"):
                    raise Reply(422, failure(422, "Invalid", f"pod {r.name} is being deleted"))
                pod.setdefault("spec", {})["nodeName"] = body["target"]["name"]
                conditions = pod.setdefault("status", {}).setdefault("conditions", [])
                conditions[:] = [c for c in conditions if c.get("type") != "PodScheduled"]
                conditions.append(
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": now()}
                )
                api._bump(r.gvr, "MODIFIED", pod)
                self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success"})

        def _evict(self, r: Resource) -> None:
            with api.lock:
                ns = r.namespace or ""
                key = (r.gvr, ns, r.name or "")
                pod = api.objects.get(key)
                if pod is None:
                    raise Reply(404, not_found(r))
                phase = pod.get("status", {}).get("phase")
                labels = pod["metadata"].get("labels") or {}
                if phase == "Running" and not pod["metadata"].get("deletionTimestamp"):
                    budgets = [
                        o
                        for (g, n, _), o in api.objects.items()
                        if g[2] == "poddisruptionbudgets"
                        and n == ns
                        and selector_matches(o.get("spec", {}).get("selector"), labels)
                    ]
                    if len(budgets) > 1:
                        raise Reply(
                            500,
                            failure(
                                500,
                                "InternalError",
                                "This pod has more than one "
                                "PodDisruptionBudget, which the eviction subresource does "
                                "not support.",
                            ),
                        )
                    if budgets and disruptions_allowed(api.objects, budgets[0], ns) <= 0:
                        raise Reply(
                            429,
                            failure(
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
