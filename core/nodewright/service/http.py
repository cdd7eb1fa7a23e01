"""The probe and metrics endpoints: ``/healthz`` and ``/readyz`` on the health port, and
Prometheus ``/metrics`` (prometheus_client's default registry) on the metrics port.

Each connection is served on its own thread, so a client that connects and then says nothing
(a half-open connection, a stalled scraper) must not keep its thread: every read and write on
a connection times out after ``CONNECTION_TIMEOUT`` seconds, and at most
``MAX_CONNECTIONS`` are served at once; more are closed at once, unanswered.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from nodewright.metrics import exposition as metrics_exposition

Check = Callable[[], tuple[bool, str]]
#: A handler: returns the status, the content type and the body.
Route = Callable[[], tuple[int, str, bytes]]

#: Seconds a connection may stay silent (or not read what it is sent) before it is closed:
#: longer than any kubelet probe or Prometheus scrape takes to send its request.
CONNECTION_TIMEOUT = 10.0
#: Connections served at once per port; kubelet probes and a few scrapers need a handful.
MAX_CONNECTIONS = 64


#: How often a listener checks whether it should stop (bounds how long closing it takes).
POLL_INTERVAL = 0.05


class _Server(ThreadingHTTPServer):
    """A threading server that refuses connections beyond its limit instead of queueing a
    thread for each."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class Endpoints:
    """Small HTTP servers on background threads; ``port`` 0 picks a free one."""

    def __init__(self, timeout: float = CONNECTION_TIMEOUT) -> None:
        self._servers: list[ThreadingHTTPServer] = []
        self._timeout = timeout

    def serve(self, address: str, port: int, routes: dict[str, Route]) -> int:
        class Handler(BaseHTTPRequestHandler):
            timeout = self._timeout

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                route = routes.get(self.path.split("?", 1)[0])
                if route is None:
                    status, content_type, body = 404, "text/plain", b"not found\n"
                else:
                    status, content_type, body = route()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = _Server((address, port), Handler)
        threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": POLL_INTERVAL},
            daemon=True,
            name=f"http-{port}",
        ).start()
        self._servers.append(server)
        return int(server.server_address[1])

    def close(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()


def probe(check: Check) -> Route:
    def answer() -> tuple[int, str, bytes]:
        ok, detail = check()
        return (200 if ok else 500), "text/plain; charset=utf-8", (detail + "\n").encode()

    return answer


def metrics() -> tuple[int, str, bytes]:
    return 200, CONTENT_TYPE_LATEST, metrics_exposition()
