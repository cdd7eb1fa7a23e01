"""A stateful loopback HTTPS fake of ARM (Compute and Network), Microsoft Entra's token
endpoint and the Retail Prices API, for the real Azure SDK clients.

It speaks the wire protocol the SDKs expect: ``api-version`` on every ARM call, ``nextLink``
/ ``NextPageLink`` paging, long-running operations (``Azure-AsyncOperation`` for PUT,
``Location`` for DELETE) that finish after a configurable number of polls, ``Retry-After``
on throttling, and error bodies shaped ``{"error": {"code", "message"}}``. TLS comes from a
``trustme`` CA; clients trust it through its PEM file.

This module holds the fake's state, its HTTPS server, injected faults and the routing of
requests; the answers are in ``fake_azure_arm`` (errors, paging, long-running operations),
``fake_azure_entra`` (tokens), ``fake_azure_catalog`` (SKUs, gallery images, prices),
``fake_azure_resources`` (VMs, their extensions, and NICs) and ``fake_azure_aks`` (AKS
machines, node image versions, the node bootstrapping server).
"""

from __future__ import annotations

import itertools
import json
import re
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import trustme

from providers.azure.tests import (
    fake_azure_aks,
    fake_azure_catalog,
    fake_azure_entra,
    fake_azure_resources,
)
from providers.azure.tests.fake_azure_arm import JSON, Operation, error, operation_status
from providers.azure.tests.sku_data import REGION, price_items, sku_payloads


@dataclass
class Fault:
    """An injected answer for the next ``times`` requests matching ``method`` and ``path``
    (a regular expression searched in the path)."""

    method: str
    path: str
    status: int
    code: str = ""
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    times: int = 1


class FakeAzure:
    """The fake cloud. ``start()`` serves it; ``url`` is the base for ARM, Entra and prices."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        subscription: str = "00000000-0000-0000-0000-000000000001",
        region: str = REGION,
    ) -> None:
        self.now = now
        self.subscription = subscription
        self.region = region
        self.skus: list[JSON] = sku_payloads(region)
        self.price_items: list[JSON] = price_items(region, factor=1.5)
        self.sku_page_size = 10
        self.price_page_size = 40
        self.vm_page_size = 2
        #: Status reads an operation stays InProgress for.
        self.lro_polls = 1
        self.vms: dict[str, JSON] = {}
        #: The last PUT body of each VM, as received (the stored VM drops customData).
        self.vm_bodies: dict[str, JSON] = {}
        self.nics: dict[str, JSON] = {}
        #: AKS machines by name, the reads each stays in its state, and every machine PUT
        #: as received: (machine name, body, BatchPutMachine header or None).
        self.machines: dict[str, JSON] = {}
        self.machine_polls: dict[str, int] = {}
        self.machine_requests: list[tuple[str, JSON, str | None]] = []
        #: The node bootstrapping server: every request's body, and its answer.
        self.bootstrapping_requests: list[JSON] = []
        self.bootstrapping_answer: JSON = fake_azure_aks.default_bootstrapping_answer()
        #: VM extensions as received, by ``<resource group>/<vm>`` and extension name.
        self.vm_extensions: dict[str, dict[str, JSON]] = {}
        #: Where AKS puts machines' VMs, and the node image versions AKS lists (use-sig).
        self.node_resource_group = "MC_rg_cluster_japaneast"
        self.node_image_versions: list[JSON] = fake_azure_catalog.default_node_image_versions()
        #: (public gallery name, image definition) -> its versions, as the Community Gallery
        #: image-versions API lists them (name, publishedDate).
        self.gallery_images: dict[tuple[str, str], list[JSON]] = (
            fake_azure_catalog.default_gallery_images()
        )
        self.gallery_page_size = 2
        self.operations: dict[str, Operation] = {}
        self.faults: list[Fault] = []
        #: VM name -> (code, message) its create operation fails with.
        self.async_failures: dict[str, tuple[str, str]] = {}
        #: Every request: (method, path with query).
        self.requests: list[tuple[str, str]] = []
        #: client id -> secret the token endpoint accepts; tokens it issued.
        self.clients: dict[str, str] = {}
        self.tokens: set[str] = set()
        self.token_requests: list[dict[str, list[str]]] = []
        self.require_auth = True
        #: The header secret the managed-identity endpoint expects.
        self.identity_header = "identity-header-secret"
        self.lock = threading.RLock()
        #: Numbers the issued tokens.
        self.ids = itertools.count(1)
        ca = trustme.CA()
        self.ca_file = tmp_path / "fake-azure-ca.pem"
        ca.cert_pem.write_to_path(str(self.ca_file))
        server_cert = ca.issue_cert("127.0.0.1", "localhost")
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_cert.configure_cert(self._context)
        self._server: ThreadingHTTPServer | None = None

    # -- serving -------------------------------------------------------------------------

    def start(self) -> FakeAzure:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = fake.handle(
                    self.command, self.path, dict(self.headers), body
                )
                data = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                if payload is not None:
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _handle

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.socket = self._context.wrap_socket(server.socket, server_side=True)
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    # -- test helpers -------------------------------------------------------------------

    def fail(
        self,
        method: str,
        path: str,
        status: int,
        code: str = "",
        message: str = "",
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
    ) -> None:
        with self.lock:
            self.faults.append(Fault(method, path, status, code, message, headers or {}, times))

    def rg_path(self, resource_group: str) -> str:
        return f"/subscriptions/{self.subscription}/resourceGroups/{resource_group}"

    def issue_token(self) -> str:
        """A token ARM accepts, for clients built with a static credential."""
        return fake_azure_entra.issue_token(self)

    def publish_image(self, gallery: str, image: str, version: str, published: str) -> None:
        """A new version of a gallery image (as AKS publishes node images weekly)."""
        with self.lock:
            self.gallery_images.setdefault((gallery, image), []).append(
                {"name": version, "publishedDate": published}
            )

    # -- dispatch -----------------------------------------------------------------------

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], JSON | None]:
        parts = urlsplit(raw_path)
        path, query = parts.path, parse_qs(parts.query)
        with self.lock:
            self.requests.append((method, raw_path))
            for fault in self.faults:
                if fault.times > 0 and fault.method == method and re.search(fault.path, path):
                    fault.times -= 1
                    payload = (
                        {"error": {"code": fault.code, "message": fault.message}}
                        if fault.code
                        else None
                    )
                    return fault.status, dict(fault.headers), payload
            if path == "/msi/token":
                return fake_azure_entra.managed_identity(self, query, headers)
            if "/oauth2/" in path or "/.well-known/" in path or "/discovery/" in path:
                return fake_azure_entra.entra(self, method, path, body)
            if path.startswith("/api/retail/prices"):
                return fake_azure_catalog.prices(self, query)
            if not path.startswith("/subscriptions/"):
                return error(404, "NotFound", f"no route for {path}")
            auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
            if self.require_auth and auth.removeprefix("Bearer ") not in self.tokens:
                return error(
                    401,
                    "AuthenticationFailed",
                    "Authentication failed. The 'Authorization' header is missing or invalid.",
                )
            if path.lower().endswith("/nodebootstrapping"):
                return fake_azure_aks.node_bootstrapping(self, method, path, body)
            if "api-version" not in query:
                return error(
                    400,
                    "MissingApiVersionParameter",
                    "The api-version query parameter (?api-version=) is required for all requests.",
                )
            return self._arm(method, path, query, body, headers)

    def _arm(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: bytes,
        headers: dict[str, str],
    ) -> tuple[int, dict[str, str], JSON | None]:
        sub = f"/subscriptions/{self.subscription}"
        if not path.startswith(sub):
            return error(
                404,
                "SubscriptionNotFound",
                f"The subscription '{path.split('/')[2]}' could not be found.",
            )
        rest = path[len(sub) :]
        if "/microsoft.containerservice/" in rest.lower():
            return fake_azure_aks.aks(self, method, rest, headers, body)
        if rest.lower() == "/providers/microsoft.compute/skus" and method == "GET":
            return fake_azure_catalog.skus(self, path, query)
        match = re.fullmatch(
            r"/providers/Microsoft\.Compute/locations/([^/]+)/communityGalleries/([^/]+)/"
            r"images/([^/]+)/versions",
            rest,
            re.IGNORECASE,
        )
        if match and method == "GET":
            location, gallery, image = match.groups()
            return fake_azure_catalog.gallery_versions(
                self, path, query, location=location, gallery=gallery, image=image
            )
        match = re.fullmatch(
            r"/providers/Microsoft\.(Compute|Network)/locations/([^/]+)/(operations|operationResults)/([^/]+)",
            rest,
            re.IGNORECASE,
        )
        if match:
            return operation_status(self, match.group(3), match.group(4))
        match = re.fullmatch(
            r"/resourceGroups/([^/]+)/providers/Microsoft\.Compute/virtualMachines/([^/]+)/"
            r"extensions/([^/]+)",
            rest,
            re.IGNORECASE,
        )
        if match:
            group, vm, name = match.groups()
            return fake_azure_resources.extension(
                self, method, path, body, group=group, vm=vm, name=name
            )
        match = re.fullmatch(
            r"/resourceGroups/([^/]+)/providers/Microsoft\.(Compute/virtualMachines|Network/networkInterfaces)(?:/([^/]+))?",
            rest,
            re.IGNORECASE,
        )
        if not match:
            return error(404, "InvalidResourceType", f"no fake for {path}")
        group, kind, name = match.group(1), match.group(2).lower(), match.group(3)
        return fake_azure_resources.resource(
            self, method, path, query, body, group=group, kind=kind, name=name
        )
