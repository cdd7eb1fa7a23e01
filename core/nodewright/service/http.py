"""The probe and metrics endpoints: ``/healthz`` and ``/readyz`` on the health port, and
Prometheus ``/metrics`` (prometheus_client's default registry) on the metrics port."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

Check = Callable[[], tuple[bool, str]]
#: A handler: returns the status, the content type and the body.
Route = Callable[[], tuple[int, str, bytes]]


class Endpoints:
    """Small HTTP servers on background threads; ``port`` 0 picks a free one."""

    def __init__(self) -> None:
        self._servers: list[ThreadingHTTPServer] = []

    def serve(
        self, address: str, port: int, routes: dict[str, Callable[[], tuple[int, str, bytes]]]
    ) -> int:
        class Handler(BaseHTTPRequestHandler):
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

        server = ThreadingHTTPServer((address, port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True, name=f"http-{port}").start()
        self._servers.append(server)
        return int(server.server_address[1])

    def close(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()


def probe(check: Check) -> Callable[[], tuple[int, str, bytes]]:
    def answer() -> tuple[int, str, bytes]:
        ok, detail = check()
        return (200 if ok else 500), "text/plain; charset=utf-8", (detail + "\n").encode()

    return answer


def metrics() -> tuple[int, str, bytes]:
    return 200, CONTENT_TYPE_LATEST, generate_latest(REGISTRY)
