"""The AKS resource provider in the fake: node image versions, and AKS machines in an agent pool
(PUT, with the ``BatchPutMachine`` header creating every machine it lists; GET; list;
``deleteMachines``). A created machine gets a VM resource ID in the node resource group and is
``Creating`` for ``lro_polls`` reads, then ``Succeeded``, or ``Failed`` with a provisioning
error when ``async_failures`` names it; a deleted one is ``Deleting`` for a read, then gone."""

from __future__ import annotations

import base64
import copy
import json
import re
from typing import TYPE_CHECKING

from providers.azure.tests.fake_azure_arm import JSON, error

if TYPE_CHECKING:
    from providers.azure.tests.fake_azure import FakeAzure

_POOL = (
    r"/resourceGroups/([^/]+)/providers/Microsoft\.ContainerService/managedClusters/([^/]+)/"
    r"agentPools/([^/]+)"
)


def aks(
    fake: FakeAzure, method: str, rest: str, headers: dict[str, str], body: bytes
) -> tuple[int, dict[str, str], JSON | None]:
    """A request under ``/subscriptions/<id>`` for Microsoft.ContainerService."""
    if re.fullmatch(
        r"/providers/Microsoft\.ContainerService/locations/[^/]+/nodeImageVersions",
        rest,
        re.IGNORECASE,
    ):
        return 200, {}, {"value": list(fake.node_image_versions)}
    match = re.fullmatch(_POOL + r"/machines(?:/([^/]+))?", rest, re.IGNORECASE)
    if match:
        pool, name = match.group(3), match.group(4)
        pool_id = f"/subscriptions/{fake.subscription}{rest[: match.end(3)]}"
        if name is None:
            listed = [_read(fake, n) for n in sorted(fake.machines)]
            return 200, {}, {"value": [m for m in listed if m is not None]}
        if method == "GET":
            found = _read(fake, name) if name in fake.machines else None
            if found is None:
                return error(404, "NotFound", f"machine {name} not found")
            return 200, {}, found
        if method == "PUT":
            payload = json.loads(body or b"{}")
            batch = {k.lower(): v for k, v in headers.items()}.get("batchputmachine")
            fake.machine_requests.append((name, payload, batch))
            entries = (
                json.loads(batch)["batchMachines"]
                if batch
                else [
                    {
                        "machineName": name,
                        "zones": payload.get("zones", []),
                        "tags": payload.get("properties", {}).get("tags", {}),
                    }
                ]
            )
            for entry in entries:
                _create(fake, pool, pool_id, entry, payload)
            return 200, {}, copy.deepcopy(fake.machines[name])
    match = re.fullmatch(_POOL + r"/deleteMachines", rest, re.IGNORECASE)
    if match and method == "POST":
        for name in json.loads(body or b"{}").get("machineNames", []):
            if name in fake.machines:
                fake.machines[name]["properties"]["provisioningState"] = "Deleting"
                fake.machine_polls[name] = 1
        return 202, {}, None
    return error(404, "InvalidResourceType", f"no fake for {rest}")


def _create(fake: FakeAzure, pool: str, pool_id: str, entry: JSON, template: JSON) -> None:
    name = entry["machineName"]
    machine = copy.deepcopy(template)
    machine["zones"] = entry.get("zones", [])
    properties = machine.setdefault("properties", {})
    properties["tags"] = entry.get("tags", {})
    vm = f"aks-{pool}-{name}-{abs(hash(name)) % 10**8:08d}-vm"
    properties["resourceId"] = (
        f"/subscriptions/{fake.subscription}/resourceGroups/{fake.node_resource_group}/"
        f"providers/Microsoft.Compute/virtualMachines/{vm}"
    )
    properties["provisioningState"] = "Creating"
    properties["status"] = {"creationTimestamp": fake.now().isoformat()}
    machine["id"] = f"{pool_id}/machines/{name}"
    machine["name"] = name
    fake.machines[name] = machine
    fake.machine_polls[name] = fake.lro_polls


def _read(fake: FakeAzure, name: str) -> JSON | None:
    """The machine as a GET sees it, moving its provisioning on by one read (None once a
    deleted machine is gone)."""
    machine = fake.machines[name]
    properties = machine["properties"]
    left = fake.machine_polls.get(name, 0)
    if left > 0:
        fake.machine_polls[name] = left - 1
    elif properties["provisioningState"] == "Creating":
        failure = fake.async_failures.get(name)
        properties["provisioningState"] = "Failed" if failure else "Succeeded"
        if failure:
            properties["status"]["provisioningError"] = {"code": failure[0], "message": failure[1]}
    elif properties["provisioningState"] == "Deleting":
        del fake.machines[name]
        return None
    return copy.deepcopy(machine)


#: The TLS bootstrap token's placeholder in the node bootstrapping server's answers.
TOKEN_PLACEHOLDER = "{{.TokenID}}.{{.TokenSecret}}"


def default_bootstrapping_answer() -> JSON:
    """What the fake node bootstrapping server gives: a command and cloud-init custom data,
    each with the token's placeholder."""
    cloud_init = (
        "#cloud-config\nwrite_files:\n- path: /var/lib/kubelet/token\n"
        f"  content: {TOKEN_PLACEHOLDER}\n"
    )
    command = "/opt/azure/containers/provision_start.sh"
    return {
        "cse": f"{command} TLS_BOOTSTRAP_TOKEN={TOKEN_PLACEHOLDER}",
        "customData": base64.b64encode(cloud_init.encode()).decode(),
    }


def node_bootstrapping(
    fake: FakeAzure, method: str, path: str, body: bytes
) -> tuple[int, dict[str, str], JSON | None]:
    """The node bootstrapping server: GET with the provision values as its body."""
    if method != "GET":
        return error(405, "MethodNotAllowed", method)
    fake.bootstrapping_requests.append(json.loads(body or b"{}"))
    return 200, {}, copy.deepcopy(fake.bootstrapping_answer)
