"""The resources the provider creates in the fake, as ARM answers for them: virtual machines and
network interfaces, read, listed (paged), created or updated (``Azure-AsyncOperation``) and
deleted (``Location``), with ARM's refusals (``PropertyChangeNotAllowed``,
``SkuNotAvailable``, a missing NIC, bad custom data, ``NicInUse``). NICs attached with
``deleteOption: Delete`` go with their VM."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import uuid
from typing import TYPE_CHECKING

from providers.azure.tests.fake_azure_arm import (
    JSON,
    error,
    new_operation,
    operation_url,
    page,
)

if TYPE_CHECKING:
    from providers.azure.tests.fake_azure import FakeAzure


def resource(
    fake: FakeAzure,
    method: str,
    path: str,
    query: dict[str, list[str]],
    body: bytes,
    *,
    group: str,
    kind: str,
    name: str | None,
) -> tuple[int, dict[str, str], JSON | None]:
    """A request for the VMs (``kind`` ``compute/...``) or NICs of a resource group: all of
    them (``name`` None) or one."""
    store = fake.vms if kind.startswith("compute") else fake.nics
    if name is None:
        if method != "GET":
            return error(405, "MethodNotAllowed", "only GET lists")
        return _list(fake, path, query, group, store)
    key = f"{group.lower()}/{name.lower()}"
    if method == "GET":
        found = store.get(key)
        if found is None:
            what = (
                "Microsoft.Compute/virtualMachines"
                if store is fake.vms
                else "Microsoft.Network/networkInterfaces"
            )
            return error(
                404,
                "ResourceNotFound",
                f"The Resource '{what}/{name}' under resource group '{group}' was not found. "
                "For more details please go to https://aka.ms/ARMResourceNotFoundFix",
            )
        return 200, {}, found
    if method == "PUT":
        payload = json.loads(body or b"{}")
        if store is fake.vms:
            return _put_vm(fake, path, name, key, payload)
        return _put_nic(fake, path, name, key, payload)
    if method == "DELETE":
        return _delete(fake, store, key)
    return error(405, "MethodNotAllowed", method)


def _list(
    fake: FakeAzure, path: str, query: dict[str, list[str]], group: str, store: dict[str, JSON]
) -> tuple[int, dict[str, str], JSON]:
    items = [v for k, v in sorted(store.items()) if k.startswith(group.lower() + "/")]
    return page(fake, path, query, items, fake.vm_page_size)


def _put_nic(
    fake: FakeAzure, path: str, name: str, key: str, payload: JSON
) -> tuple[int, dict[str, str], JSON]:
    existed = key in fake.nics
    props = payload.get("properties") or {}
    nic: JSON = {
        "name": name,
        "id": path,
        "type": "Microsoft.Network/networkInterfaces",
        "location": payload.get("location", fake.region),
        "tags": payload.get("tags") or {},
        "properties": {**props, "provisioningState": "Updating"},
    }
    fake.nics[key] = nic

    def done() -> None:
        nic["properties"]["provisioningState"] = "Succeeded"

    op = new_operation(fake, done)
    return (
        200 if existed else 201,
        {
            "Azure-AsyncOperation": operation_url(fake, "Network", op, "operations"),
            "Retry-After": "0",
        },
        nic,
    )


def _put_vm(
    fake: FakeAzure, path: str, name: str, key: str, payload: JSON
) -> tuple[int, dict[str, str], JSON | None]:
    props = payload.get("properties") or {}
    size = (props.get("hardwareProfile") or {}).get("vmSize", "")
    zones = payload.get("zones") or []
    existing = fake.vms.get(key)
    if existing is not None and (existing.get("zones") or []) != zones:
        return error(
            409,
            "PropertyChangeNotAllowed",
            "Changing property 'zones' is not allowed.",
        )
    sku = next((s for s in fake.skus if s["name"] == size), None)
    if sku is None:
        return error(
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
        return error(
            409,
            "SkuNotAvailable",
            f"The requested VM size for resource 'Following SKUs have failed for Capacity "
            f"Restrictions: {size}' is currently not available in {where}location "
            f"'{fake.region}'. Please try another size or deploy to a different location "
            "or different zone. See https://aka.ms/azureskunotavailable for details.",
        )
    for nic_ref in (props.get("networkProfile") or {}).get("networkInterfaces") or ():
        nic_key = nic_ref["id"].split("/resourceGroups/")[1]
        nic_key = f"{nic_key.split('/')[0].lower()}/{nic_key.split('/')[-1].lower()}"
        if nic_key not in fake.nics:
            return error(
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
            return error(
                400,
                "InvalidParameter",
                "Custom data in OSProfile must be in Base64 encoding and with a maximum "
                "length of 87380 characters.",
            )
    # What the client sent (customData included); ARM never returns customData.
    fake.vm_bodies[key] = copy.deepcopy(payload)
    vm: JSON = {
        "name": name,
        "id": path,
        "type": "Microsoft.Compute/virtualMachines",
        "location": payload.get("location", fake.region),
        "tags": payload.get("tags") or {},
        "zones": zones,
        "properties": {
            **props,
            "vmId": str(uuid.uuid4()),
            "provisioningState": "Creating",
            "timeCreated": (existing or {}).get("properties", {}).get("timeCreated")
            or fake.now().isoformat(),
        },
    }
    if vm["properties"].get("osProfile"):
        vm["properties"]["osProfile"].pop("customData", None)
        vm["properties"]["osProfile"].pop("adminPassword", None)
    if not zones:
        vm.pop("zones")
    fake.vms[key] = vm
    failure = fake.async_failures.pop(name, None)

    def done() -> None:
        vm["properties"]["provisioningState"] = "Failed" if failure else "Succeeded"

    op = new_operation(fake, done, failure)
    return (
        200 if existing else 201,
        {
            "Azure-AsyncOperation": operation_url(fake, "Compute", op, "operations"),
            "Retry-After": "0",
        },
        vm,
    )


def _delete(
    fake: FakeAzure, store: dict[str, JSON], key: str
) -> tuple[int, dict[str, str], JSON | None]:
    found = store.get(key)
    if found is None:
        return 204, {}, None
    if store is fake.nics:
        for vm in fake.vms.values():
            for ref in (vm["properties"].get("networkProfile") or {}).get(
                "networkInterfaces"
            ) or ():
                if ref["id"].lower() == found["id"].lower():
                    return error(
                        400,
                        "NicInUse",
                        f"Network Interface {found['id']} is used by existing resource "
                        f"{vm['id']}. In order to delete the network interface, it must be "
                        "dissociated from the resource.",
                    )
    found["properties"]["provisioningState"] = "Deleting"

    def done() -> None:
        store.pop(key, None)
        # NICs attached with deleteOption Delete go with their VM.
        refs = (found["properties"].get("networkProfile") or {}).get("networkInterfaces")
        for ref in refs or () if store is fake.vms else ():
            if (ref.get("properties") or {}).get("deleteOption") == "Delete":
                nic_id = ref["id"].lower()
                for nic_key, nic in list(fake.nics.items()):
                    if nic["id"].lower() == nic_id:
                        fake.nics.pop(nic_key)

    provider = "Compute" if store is fake.vms else "Network"
    op = new_operation(fake, done)
    return (
        202,
        {
            "Location": operation_url(fake, provider, op, "operationResults"),
            "Azure-AsyncOperation": operation_url(fake, provider, op, "operations"),
            "Retry-After": "0",
        },
        None,
    )


def extension(
    fake: FakeAzure, method: str, path: str, body: bytes, *, group: str, vm: str, name: str
) -> tuple[int, dict[str, str], JSON | None]:
    """A VM extension: PUT stores it as received (its VM must exist) and answers it
    provisioned, without its protected settings, as ARM does."""
    key = f"{group.lower()}/{vm.lower()}"
    if method != "PUT":
        return error(405, "MethodNotAllowed", method)
    if key not in fake.vms:
        return error(404, "ResourceNotFound", f"The Resource 'virtualMachines/{vm}' was not found.")
    payload: JSON = json.loads(body or b"{}")
    fake.vm_extensions.setdefault(key, {})[name] = payload
    answer = copy.deepcopy(payload)
    answer["id"] = path
    answer["name"] = name
    properties = answer.setdefault("properties", {})
    properties.pop("protectedSettings", None)
    properties["provisioningState"] = "Succeeded"
    return 200, {}, answer
