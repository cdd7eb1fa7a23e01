"""A stateful loopback HTTPS fake of ARM (Compute and Network), Microsoft Entra's token
endpoint and the Retail Prices API, for the real Azure SDK clients.

It speaks the wire protocol the SDKs expect: ``api-version`` on every ARM call, ``nextLink``
/ ``NextPageLink`` paging, long-running operations (``Azure-AsyncOperation`` for PUT,
``Location`` for DELETE) that finish after a configurable number of polls, ``Retry-After``
on throttling, and error bodies shaped ``{"error": {"code", "message"}}``. TLS comes from a
``trustme`` CA; clients trust it through its PEM file.
"""

from __future__ import annotations

import base64
import binascii
import copy
import itertools
import json
import re
import ssl
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import trustme

from providers.azure.tests.sku_data import REGION, price_items, sku_payloads

JSON = dict[str, Any]


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


@dataclass
class Operation:
    """A long-running operation: ``InProgress`` for ``polls`` status reads, then done."""

    id: str
    polls: int
    on_done: Callable[[], None]
    error: tuple[str, str] | None = None
    done: bool = False

    def poll(self) -> str:
        if not self.done:
            if self.polls > 0:
                self.polls -= 1
                return "InProgress"
            self.done = True
            self.on_done()
        return "Failed" if self.error else "Succeeded"


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
        #: (public gallery name, image definition) -> its versions, as the Community Gallery
        #: image-versions API lists them (name, publishedDate).
        self.gallery_images: dict[tuple[str, str], list[JSON]] = default_gallery_images()
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
        self._ids = itertools.count(1)
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
                return self._managed_identity(query, headers)
            if "/oauth2/" in path or "/.well-known/" in path or "/discovery/" in path:
                return self._entra(method, path, body)
            if path.startswith("/api/retail/prices"):
                return self._prices(query)
            if not path.startswith("/subscriptions/"):
                return _error(404, "NotFound", f"no route for {path}")
            auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
            if self.require_auth and auth.removeprefix("Bearer ") not in self.tokens:
                return _error(
                    401,
                    "AuthenticationFailed",
                    "Authentication failed. The 'Authorization' header is missing or invalid.",
                )
            if "api-version" not in query:
                return _error(
                    400,
                    "MissingApiVersionParameter",
                    "The api-version query parameter (?api-version=) is required for all requests.",
                )
            return self._arm(method, path, query, body)

    # -- Entra ----------------------------------------------------------------------------

    def _entra(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, str], JSON]:
        tenant = path.strip("/").split("/")[0]
        if path.endswith("/.well-known/openid-configuration"):
            base = f"{self.url}/{tenant}"
            return (
                200,
                {},
                {
                    "token_endpoint": f"{base}/oauth2/v2.0/token",
                    "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                    "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
                    "issuer": f"{base}/v2.0",
                    "token_endpoint_auth_methods_supported": ["client_secret_post"],
                },
            )
        if method == "POST" and path.endswith("/oauth2/v2.0/token"):
            form = parse_qs(body.decode())
            self.token_requests.append(form)
            client = form.get("client_id", [""])[0]
            secret = form.get("client_secret", [None])[0]
            assertion = form.get("client_assertion", [None])[0]
            expected = self.clients.get(client)
            if expected is None or (expected not in (secret, assertion)):
                return (
                    401,
                    {},
                    {
                        "error": "invalid_client",
                        "error_description": "AADSTS7000215: Invalid client secret provided. "
                        "Ensure the secret being sent in the request is the client secret "
                        "value, not the client secret ID.",
                        "error_codes": [7000215],
                    },
                )
            token = f"fake-aad-token-{next(self._ids)}"
            self.tokens.add(token)
            return (
                200,
                {},
                {
                    "token_type": "Bearer",
                    "expires_in": 3599,
                    "ext_expires_in": 3599,
                    "access_token": token,
                },
            )
        return 404, {}, {"error": "not_found"}

    def _managed_identity(
        self, query: dict[str, list[str]], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], JSON]:
        """App Service-style managed identity endpoint (``IDENTITY_ENDPOINT``)."""
        header = {k.lower(): v for k, v in headers.items()}.get("x-identity-header")
        self.token_requests.append({**query, "x-identity-header": [header or ""]})
        if header != self.identity_header:
            return 401, {}, {"error": "unauthorized", "error_description": "bad identity header"}
        token = self.issue_token()
        expires = int(self.now().timestamp()) + 86400 * 365 * 10
        return (
            200,
            {},
            {
                "access_token": token,
                "expires_on": str(expires),
                "resource": query.get("resource", [""])[0],
                "token_type": "Bearer",
                "client_id": query.get("client_id", ["system-assigned"])[0],
            },
        )

    def issue_token(self) -> str:
        """A token ARM accepts, for clients built with a static credential."""
        token = f"fake-aad-token-{next(self._ids)}"
        self.tokens.add(token)
        return token

    # -- Retail Prices --------------------------------------------------------------------

    def _prices(self, query: dict[str, list[str]]) -> tuple[int, dict[str, str], JSON]:
        text = query.get("$filter", [""])[0]
        region = re.search(r"armRegionName eq '([^']+)'", text)
        items = [
            i for i in self.price_items if region is None or i["armRegionName"] == region.group(1)
        ]
        skip = int(query.get("$skip", ["0"])[0])
        page = items[skip : skip + self.price_page_size]
        more = skip + self.price_page_size < len(items)
        next_link = None
        if more:
            params = {k: v[0] for k, v in query.items()}
            params["$skip"] = str(skip + self.price_page_size)
            next_link = f"{self.url}/api/retail/prices?{urlencode(params)}"
        return (
            200,
            {},
            {
                "BillingCurrency": "USD",
                "CustomerEntityId": "Default",
                "CustomerEntityType": "Retail",
                "Items": page,
                "NextPageLink": next_link,
                "Count": len(page),
            },
        )

    # -- ARM --------------------------------------------------------------------------------

    def _arm(
        self, method: str, path: str, query: dict[str, list[str]], body: bytes
    ) -> tuple[int, dict[str, str], JSON | None]:
        sub = f"/subscriptions/{self.subscription}"
        if not path.startswith(sub):
            return _error(
                404,
                "SubscriptionNotFound",
                f"The subscription '{path.split('/')[2]}' could not be found.",
            )
        rest = path[len(sub) :]
        if rest.lower() == "/providers/microsoft.compute/skus" and method == "GET":
            return self._skus(path, query)
        match = re.fullmatch(
            r"/providers/Microsoft\.Compute/locations/([^/]+)/communityGalleries/([^/]+)/"
            r"images/([^/]+)/versions",
            rest,
            re.IGNORECASE,
        )
        if match and method == "GET":
            return self._gallery_versions(path, query, *match.groups())
        match = re.fullmatch(
            r"/providers/Microsoft\.(Compute|Network)/locations/([^/]+)/(operations|operationResults)/([^/]+)",
            rest,
            re.IGNORECASE,
        )
        if match:
            return self._operation(match.group(3), match.group(4))
        match = re.fullmatch(
            r"/resourceGroups/([^/]+)/providers/Microsoft\.(Compute/virtualMachines|Network/networkInterfaces)(?:/([^/]+))?",
            rest,
            re.IGNORECASE,
        )
        if not match:
            return _error(404, "InvalidResourceType", f"no fake for {path}")
        group, kind, name = match.group(1), match.group(2).lower(), match.group(3)
        store = self.vms if kind.startswith("compute") else self.nics
        if name is None:
            if method != "GET":
                return _error(405, "MethodNotAllowed", "only GET lists")
            return self._list(path, query, group, store)
        key = f"{group.lower()}/{name.lower()}"
        if method == "GET":
            resource = store.get(key)
            if resource is None:
                what = (
                    "Microsoft.Compute/virtualMachines"
                    if store is self.vms
                    else "Microsoft.Network/networkInterfaces"
                )
                return _error(
                    404,
                    "ResourceNotFound",
                    f"The Resource '{what}/{name}' under resource group '{group}' was not found. "
                    "For more details please go to https://aka.ms/ARMResourceNotFoundFix",
                )
            return 200, {}, resource
        if method == "PUT":
            payload = json.loads(body or b"{}")
            if store is self.vms:
                return self._put_vm(path, group, name, key, payload)
            return self._put_nic(path, group, name, key, payload)
        if method == "DELETE":
            return self._delete(store, key, path)
        return _error(405, "MethodNotAllowed", method)

    def _skus(self, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], JSON]:
        text = query.get("$filter", [""])[0]
        location = re.search(r"location eq '([^']+)'", text)
        skus = [
            s
            for s in self.skus
            if location is None or location.group(1).lower() in [x.lower() for x in s["locations"]]
        ]
        return self._page(path, query, skus, self.sku_page_size)

    def _gallery_versions(
        self, path: str, query: dict[str, list[str]], location: str, gallery: str, image: str
    ) -> tuple[int, dict[str, str], JSON]:
        versions = self.gallery_images.get((gallery, image))
        if versions is None:
            return _error(
                404,
                "GalleryImageNotFound",
                f"The gallery image {image} is not found in community gallery {gallery}.",
            )
        items = [
            {
                "name": v["name"],
                "location": location,
                "type": "Microsoft.Compute/locations/communityGalleries/images/versions",
                "identifier": {
                    "uniqueId": f"/CommunityGalleries/{gallery}/Images/{image}/Versions/{v['name']}"
                },
                "properties": {
                    "publishedDate": v["publishedDate"],
                    "excludeFromLatest": False,
                    "storageProfile": {
                        "osDiskImage": {"diskSizeGB": 30, "hostCaching": "ReadOnly"}
                    },
                },
            }
            for v in versions
        ]
        return self._page(path, query, items, self.gallery_page_size)

    def publish_image(self, gallery: str, image: str, version: str, published: str) -> None:
        """A new version of a gallery image (as AKS publishes node images weekly)."""
        with self.lock:
            self.gallery_images.setdefault((gallery, image), []).append(
                {"name": version, "publishedDate": published}
            )

    def _list(
        self, path: str, query: dict[str, list[str]], group: str, store: dict[str, JSON]
    ) -> tuple[int, dict[str, str], JSON]:
        items = [v for k, v in sorted(store.items()) if k.startswith(group.lower() + "/")]
        return self._page(path, query, items, self.vm_page_size)

    def _page(
        self, path: str, query: dict[str, list[str]], items: list[JSON], size: int
    ) -> tuple[int, dict[str, str], JSON]:
        skip = int(query.get("$skiptoken", ["0"])[0])
        page: JSON = {"value": items[skip : skip + size]}
        if skip + size < len(items):
            params = {k: v[0] for k, v in query.items()}
            params["$skiptoken"] = str(skip + size)
            page["nextLink"] = f"{self.url}{path}?{urlencode(params)}"
        return 200, {}, page

    def _new_operation(
        self, provider: str, on_done: Callable[[], None], error: tuple[str, str] | None = None
    ) -> Operation:
        op = Operation(str(uuid.uuid4()), self.lro_polls, on_done, error)
        self.operations[op.id] = op
        return op

    def _operation_url(self, provider: str, op: Operation, kind: str) -> str:
        return (
            f"{self.url}/subscriptions/{self.subscription}/providers/Microsoft.{provider}/"
            f"locations/{self.region}/{kind}/{op.id}?api-version=2024-07-01"
        )

    def _operation(self, kind: str, op_id: str) -> tuple[int, dict[str, str], JSON | None]:
        op = self.operations.get(op_id)
        if op is None:
            return _error(404, "NotFound", f"operation {op_id} not found")
        status = op.poll()
        if kind.lower() == "operationresults":
            if status == "InProgress":
                return 202, {"Retry-After": "0"}, None
            return 200, {}, None
        payload: JSON = {"name": op.id, "status": status, "startTime": self.now().isoformat()}
        if status == "InProgress":
            return 200, {"Retry-After": "0"}, payload
        payload["endTime"] = self.now().isoformat()
        if op.error:
            payload["error"] = {"code": op.error[0], "message": op.error[1]}
        return 200, {}, payload

    def _put_nic(
        self, path: str, group: str, name: str, key: str, payload: JSON
    ) -> tuple[int, dict[str, str], JSON]:
        existed = key in self.nics
        props = payload.get("properties") or {}
        nic: JSON = {
            "name": name,
            "id": path,
            "type": "Microsoft.Network/networkInterfaces",
            "location": payload.get("location", self.region),
            "tags": payload.get("tags") or {},
            "properties": {**props, "provisioningState": "Updating"},
        }
        self.nics[key] = nic

        def done() -> None:
            nic["properties"]["provisioningState"] = "Succeeded"

        op = self._new_operation("Network", done)
        return (
            200 if existed else 201,
            {
                "Azure-AsyncOperation": self._operation_url("Network", op, "operations"),
                "Retry-After": "0",
            },
            nic,
        )

    def _put_vm(
        self, path: str, group: str, name: str, key: str, payload: JSON
    ) -> tuple[int, dict[str, str], JSON | None]:
        props = payload.get("properties") or {}
        size = (props.get("hardwareProfile") or {}).get("vmSize", "")
        zones = payload.get("zones") or []
        existing = self.vms.get(key)
        if existing is not None and (existing.get("zones") or []) != zones:
            return _error(
                409,
                "PropertyChangeNotAllowed",
                "Changing property 'zones' is not allowed.",
            )
        sku = next((s for s in self.skus if s["name"] == size), None)
        if sku is None:
            return _error(
                400,
                "InvalidParameter",
                f"The value {size} provided for the VM size is not valid.",
            )
        blocked_zones = set()
        for restriction in sku.get("restrictions") or ():
            if restriction["type"] == "Location":
                blocked_zones = {"*"}
            else:
                blocked_zones |= set(restriction["restrictionInfo"].get("zones") or ())
        if "*" in blocked_zones or set(zones) & blocked_zones:
            where = f"zone '{zones[0]}' of " if zones else ""
            return _error(
                409,
                "SkuNotAvailable",
                f"The requested VM size for resource 'Following SKUs have failed for Capacity "
                f"Restrictions: {size}' is currently not available in {where}location "
                f"'{self.region}'. Please try another size or deploy to a different location "
                "or different zone. See https://aka.ms/azureskunotavailable for details.",
            )
        for nic_ref in (props.get("networkProfile") or {}).get("networkInterfaces") or ():
            nic_key = nic_ref["id"].split("/resourceGroups/")[1]
            nic_key = f"{nic_key.split('/')[0].lower()}/{nic_key.split('/')[-1].lower()}"
            if nic_key not in self.nics:
                return _error(
                    400,
                    "NotFound",
                    f"Resource {nic_ref['id']} not found.",
                )
        custom_data = (props.get("osProfile") or {}).get("customData")
        if custom_data is not None:
            try:
                base64.b64decode(custom_data, validate=True)
                valid = len(custom_data) <= 87380
            except (binascii.Error, ValueError):
                valid = False
            if not valid:
                return _error(
                    400,
                    "InvalidParameter",
                    "Custom data in OSProfile must be in Base64 encoding and with a maximum "
                    "length of 87380 characters.",
                )
        # What the client sent (customData included); ARM never returns customData.
        self.vm_bodies[key] = copy.deepcopy(payload)
        vm: JSON = {
            "name": name,
            "id": path,
            "type": "Microsoft.Compute/virtualMachines",
            "location": payload.get("location", self.region),
            "tags": payload.get("tags") or {},
            "zones": zones,
            "properties": {
                **props,
                "vmId": str(uuid.uuid4()),
                "provisioningState": "Creating",
                "timeCreated": (existing or {}).get("properties", {}).get("timeCreated")
                or self.now().isoformat(),
            },
        }
        if vm["properties"].get("osProfile"):
            vm["properties"]["osProfile"].pop("customData", None)
            vm["properties"]["osProfile"].pop("adminPassword", None)
        if not zones:
            vm.pop("zones")
        self.vms[key] = vm
        failure = self.async_failures.pop(name, None)

        def done() -> None:
            vm["properties"]["provisioningState"] = "Failed" if failure else "Succeeded"

        op = self._new_operation("Compute", done, failure)
        return (
            200 if existing else 201,
            {
                "Azure-AsyncOperation": self._operation_url("Compute", op, "operations"),
                "Retry-After": "0",
            },
            vm,
        )

    def _delete(
        self, store: dict[str, JSON], key: str, path: str
    ) -> tuple[int, dict[str, str], JSON | None]:
        resource = store.get(key)
        if resource is None:
            return 204, {}, None
        if store is self.nics:
            for vm in self.vms.values():
                for ref in (vm["properties"].get("networkProfile") or {}).get(
                    "networkInterfaces"
                ) or ():
                    if ref["id"].lower() == resource["id"].lower():
                        return _error(
                            400,
                            "NicInUse",
                            f"Network Interface {resource['id']} is used by existing resource "
                            f"{vm['id']}. In order to delete the network interface, it must be "
                            "dissociated from the resource.",
                        )
        resource["properties"]["provisioningState"] = "Deleting"

        def done() -> None:
            store.pop(key, None)
            # NICs attached with deleteOption Delete go with their VM.
            refs = (resource["properties"].get("networkProfile") or {}).get("networkInterfaces")
            for ref in refs or () if store is self.vms else ():
                if (ref.get("properties") or {}).get("deleteOption") == "Delete":
                    nic_id = ref["id"].lower()
                    for nic_key, nic in list(self.nics.items()):
                        if nic["id"].lower() == nic_id:
                            self.nics.pop(nic_key)

        provider = "Compute" if store is self.vms else "Network"
        op = self._new_operation(provider, done)
        return (
            202,
            {
                "Location": self._operation_url(provider, op, "operationResults"),
                "Azure-AsyncOperation": self._operation_url(provider, op, "operations"),
                "Retry-After": "0",
            },
            None,
        )


UBUNTU_GALLERY = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
AZURE_LINUX_GALLERY = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"


def default_gallery_images() -> dict[tuple[str, str], list[JSON]]:
    """AKS's node images, three versions each; the newest is not listed last (the API lists in
    no particular order, the newest is found by publishedDate)."""
    versions = [
        {"name": "202405.20.0", "publishedDate": "2024-05-21T08:00:00+00:00"},
        {"name": "202406.07.0", "publishedDate": "2024-06-08T08:00:00+00:00"},
        {"name": "202404.16.0", "publishedDate": "2024-04-17T08:00:00+00:00"},
    ]
    definitions = [
        (UBUNTU_GALLERY, d)
        for d in (
            "2204gen2containerd",
            "2204containerd",
            "2204gen2arm64containerd",
            "2404gen2containerd",
            "2404containerd",
            "2404gen2arm64containerd",
        )
    ] + [
        (AZURE_LINUX_GALLERY, d)
        for d in ("V2gen2", "V2", "V2gen2arm64", "V3gen2", "V3", "V3gen2arm64")
    ]
    return {key: [dict(v) for v in versions] for key in definitions}


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], JSON]:
    return status, {"x-ms-failure-cause": "gateway"}, {"error": {"code": code, "message": message}}
