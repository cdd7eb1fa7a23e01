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
(``NOT_APPLIED`` in ``apiserver/patches.py``) and stores unset Go timestamps as ``null``
(``NULL_TIMESTAMPS`` in ``apiserver/timestamps.py``);
``tests/kube/test_server_contract.py`` checks both against a real control plane. Faults can be
injected per request (any status, ``Retry-After``, delays), and every request is recorded.
Bearer-token auth is required.

This module holds the server's store and lifecycle; its HTTP handler and the rules it keeps
live in ``tests/kube/apiserver/``, one concept per module (``handler``, ``routing``,
``status``, ``patches``, ``validation``, ``timestamps``, ``budgets``).
"""

from __future__ import annotations

import copy
import ssl
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trustme
import yaml

from tests.kube.apiserver.handler import handler_for
from tests.kube.apiserver.timestamps import now

TOKEN = "s3cr3t-fake-token"


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
        #: continue token -> (the list's resourceVersion, the items still to serve)
        self.list_snapshots: dict[str, tuple[int, list[dict[str, Any]]]] = {}
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
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(self, TOKEN))
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
                obj["metadata"]["deletionTimestamp"] = now()
                self._bump(gvr, "MODIFIED", obj)
            return copy.deepcopy(obj)
        return self._remove(gvr, ns, name)


__all__ = ["TOKEN", "FakeApiServer", "Fault"]
