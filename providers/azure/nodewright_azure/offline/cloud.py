"""An in-process Azure for ``azure.offline=LOCATION``: the ARM calls the provider makes
(Resource SKUs, community gallery image versions, NICs and VMs) and the Retail Prices API,
answered from the bundled catalog and an in-memory resource group.

It is reached through :class:`~nodewright_azure.offline.transport.OfflineTransport`, the
Azure SDK clients' HTTP transport, so the provider's SDK calls, paging, long-running
operations and error handling are the ones that run against Azure. What it holds
(docs/providers/azure.md, "Offline catalog"):

* the catalog's VM sizes in zones 1-3 of the location, with no subscription restrictions;
* one version of every AKS community gallery image;
* NICs and VMs: a create finishes at once (the long-running operation answers ``Succeeded``
  in its first response), a delete too; a VM needs its NIC, a size of the location and one of
  its zones, and base64 custom data, as ARM checks. There is never a capacity shortage;
* retail prices: the catalog's on-demand prices and spot prices derived from them.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from nodewright_azure.offline.catalog import OfflineCatalog

JSON = dict[str, Any]
Answer = tuple[int, dict[str, str], JSON | None]

MAX_CUSTOM_DATA = 87380
_RESOURCE = re.compile(
    r"/resourceGroups/([^/]+)/providers/Microsoft\.(Compute/virtualMachines|"
    r"Network/networkInterfaces)(?:/([^/]+))?",
    re.IGNORECASE,
)
_GALLERY_VERSIONS = re.compile(
    r"/providers/Microsoft\.Compute/locations/([^/]+)/communityGalleries/([^/]+)/"
    r"images/([^/]+)/versions",
    re.IGNORECASE,
)


def error(status: int, code: str, message: str) -> Answer:
    return status, {}, {"error": {"code": code, "message": message}}


class OfflineAzure:
    """One subscription's resource groups of one location, in memory."""

    def __init__(
        self,
        catalog: OfflineCatalog,
        location: str,
        subscription: str,
        now: Callable[[], datetime],
    ) -> None:
        self.catalog = catalog
        self.location = location
        self.subscription = subscription
        self.now = now
        self.skus = catalog.skus(location)
        self.zones = set(catalog.zones(location))
        self.vms: dict[str, JSON] = {}
        self.nics: dict[str, JSON] = {}
        #: Every VM created, deleted or not (what the run launched).
        self.launched: list[JSON] = []

    def handle(self, method: str, url: str, body: bytes) -> Answer:
        parts = urlsplit(url)
        path, query = parts.path, parse_qs(parts.query)
        if path.startswith("/api/retail/prices"):
            return self._prices(query)
        prefix = f"/subscriptions/{self.subscription}"
        if not path.lower().startswith(prefix.lower()):
            return error(404, "SubscriptionNotFound", f"no subscription in {path}")
        rest = path[len(prefix) :]
        if rest.lower() == "/providers/microsoft.compute/skus" and method == "GET":
            return 200, {}, {"value": copy.deepcopy(self.skus)}
        match = _GALLERY_VERSIONS.fullmatch(rest)
        if match and method == "GET":
            return self._gallery_versions(*match.groups())
        match = _RESOURCE.fullmatch(rest)
        if not match:
            return error(404, "InvalidResourceType", f"offline Azure has no {path}")
        group, kind, name = match.group(1), match.group(2).lower(), match.group(3)
        store = self.vms if kind.startswith("compute") else self.nics
        if name is None:
            if method != "GET":
                return error(405, "MethodNotAllowed", "only GET lists")
            items = [v for k, v in sorted(store.items()) if k.startswith(group.lower() + "/")]
            return 200, {}, {"value": copy.deepcopy(items)}
        key = f"{group.lower()}/{name.lower()}"
        if method == "GET":
            found = store.get(key)
            if found is None:
                what = "virtualMachines" if store is self.vms else "networkInterfaces"
                return error(
                    404,
                    "ResourceNotFound",
                    f"The Resource '{what}/{name}' under resource group '{group}' was not found.",
                )
            return 200, {}, copy.deepcopy(found)
        if method == "PUT":
            payload: JSON = json.loads(body or b"{}")
            if store is self.vms:
                return self._put_vm(path, key, name, payload)
            return self._put_nic(path, key, name, payload)
        if method == "DELETE":
            return self._delete(store, key)
        return error(405, "MethodNotAllowed", method)

    # -- catalog -------------------------------------------------------------------------

    def _gallery_versions(self, location: str, gallery: str, image: str) -> Answer:
        version = self.catalog.image_version
        return (
            200,
            {},
            {
                "value": [
                    {
                        "name": version["name"],
                        "location": location,
                        "type": "Microsoft.Compute/locations/communityGalleries/images/versions",
                        "identifier": {
                            "uniqueId": f"/CommunityGalleries/{gallery}/Images/{image}/"
                            f"Versions/{version['name']}"
                        },
                        "properties": {
                            "publishedDate": version["publishedDate"],
                            "excludeFromLatest": False,
                        },
                    }
                ]
            },
        )

    def _prices(self, query: dict[str, list[str]]) -> Answer:
        text = query.get("$filter", [""])[0]
        region = re.search(r"armRegionName eq '([^']+)'", text)
        items: list[JSON] = []
        if region is None or region.group(1).lower() == self.location:
            for sku in self.skus:
                name = sku["name"]
                short = name.removeprefix("Standard_").replace("_", " ")
                common = {
                    "currencyCode": "USD",
                    "armRegionName": self.location,
                    "armSkuName": name,
                    "serviceName": "Virtual Machines",
                    "serviceFamily": "Compute",
                    "unitOfMeasure": "1 Hour",
                    "type": "Consumption",
                    "priceType": "Consumption",
                    "productName": f"Virtual Machines {short.split(' ')[0]} Series",
                }
                on_demand = self.catalog.on_demand_price(self.location, name)
                spot = self.catalog.spot_price(self.location, name)
                if on_demand is not None:
                    items.append(
                        {**common, "retailPrice": on_demand, "skuName": short, "meterName": short}
                    )
                if spot is not None:
                    items.append(
                        {
                            **common,
                            "retailPrice": spot,
                            "skuName": f"{short} Spot",
                            "meterName": f"{short} Spot",
                        }
                    )
        return 200, {}, {"BillingCurrency": "USD", "Items": items, "NextPageLink": None}

    # -- resources -------------------------------------------------------------------------

    def _put_nic(self, path: str, key: str, name: str, payload: JSON) -> Answer:
        existed = key in self.nics
        properties = dict(payload.get("properties") or {})
        properties["provisioningState"] = "Succeeded"
        self.nics[key] = {
            "name": name,
            "id": path,
            "type": "Microsoft.Network/networkInterfaces",
            "location": payload.get("location", self.location),
            "tags": payload.get("tags") or {},
            "properties": properties,
        }
        return (200 if existed else 201), {}, copy.deepcopy(self.nics[key])

    def _put_vm(self, path: str, key: str, name: str, payload: JSON) -> Answer:
        properties = copy.deepcopy(payload.get("properties") or {})
        size = (properties.get("hardwareProfile") or {}).get("vmSize", "")
        zones = list(payload.get("zones") or [])
        existing = self.vms.get(key)
        if existing is not None and list(existing.get("zones") or []) != zones:
            return error(
                409, "PropertyChangeNotAllowed", "Changing property 'zones' is not allowed."
            )
        if not any(s["name"] == size for s in self.skus):
            return error(
                400, "InvalidParameter", f"The value {size} provided for the VM size is not valid."
            )
        if set(zones) - self.zones:
            return error(
                400, "InvalidParameter", f"zone {zones[0]} is not a zone of {self.location}"
            )
        for ref in (properties.get("networkProfile") or {}).get("networkInterfaces") or ():
            if not any(n["id"].lower() == ref["id"].lower() for n in self.nics.values()):
                return error(400, "NotFound", f"Resource {ref['id']} not found.")
        os_profile = properties.get("osProfile") or {}
        custom_data = os_profile.pop("customData", None)
        os_profile.pop("adminPassword", None)
        if custom_data is not None:
            try:
                base64.b64decode(custom_data, validate=True)
                valid = len(custom_data) <= MAX_CUSTOM_DATA
            except (binascii.Error, ValueError):
                valid = False
            if not valid:
                return error(
                    400,
                    "InvalidParameter",
                    "Custom data in OSProfile must be in Base64 encoding and with a maximum "
                    f"length of {MAX_CUSTOM_DATA} characters.",
                )
        created = (existing or {}).get("properties", {}).get("timeCreated")
        properties.update(
            {
                "vmId": str(uuid.uuid5(uuid.NAMESPACE_URL, path)),
                "provisioningState": "Succeeded",
                "timeCreated": created or self.now().isoformat(),
            }
        )
        vm: JSON = {
            "name": name,
            "id": path,
            "type": "Microsoft.Compute/virtualMachines",
            "location": payload.get("location", self.location),
            "tags": payload.get("tags") or {},
            "properties": properties,
        }
        if zones:
            vm["zones"] = zones
        self.vms[key] = vm
        if existing is None:
            self.launched.append(vm)
        return (200 if existing else 201), {}, copy.deepcopy(vm)

    def _delete(self, store: dict[str, JSON], key: str) -> Answer:
        resource = store.pop(key, None)
        if resource is None:
            return 204, {}, None
        if store is self.vms:
            # NICs attached with deleteOption Delete go with their VM.
            refs = (resource["properties"].get("networkProfile") or {}).get("networkInterfaces")
            for ref in refs or ():
                if (ref.get("properties") or {}).get("deleteOption") == "Delete":
                    for nic_key, nic in list(self.nics.items()):
                        if nic["id"].lower() == ref["id"].lower():
                            del self.nics[nic_key]
        else:
            for vm in self.vms.values():
                refs = (vm["properties"].get("networkProfile") or {}).get("networkInterfaces")
                if any(r["id"].lower() == resource["id"].lower() for r in refs or ()):
                    store[key] = resource
                    return error(
                        400,
                        "NicInUse",
                        f"Network Interface {resource['id']} is used by existing resource "
                        f"{vm['id']}.",
                    )
        return 200, {}, None
