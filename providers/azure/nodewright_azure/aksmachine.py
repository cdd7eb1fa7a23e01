"""AKS machines (Karpenter Azure's ``aksmachineapi`` and ``aksmachineapiheaderbatch`` provision
modes): instead of a NIC and a VM, a NodeClaim becomes an AKS machine in the agent pool
``aks-machines-pool-name`` of the cluster, and AKS makes and bootstraps its VM.

The machine is named after the NodeClaim (at most 34 characters, the tail of a longer name
hashed), carries the node image version (from the shared gallery image, ``use-sig``), the
size, zone and priority of the chosen offering, the class's OS disk, FIPS, kubelet settings,
``linuxOSConfig`` (sysctls included) and encryption at host, the NodeClaim's labels and
taints (all as initialization taints) and the tags. Its VM's resource ID is the node's
providerID (``aks-<pool>-<machine>-<8 characters>-vm``). A machine that already exists is
adopted; one whose provisioning failed is classified (capacity errors make the offering
unavailable) and deleted. Deletes go through the agent pool's ``deleteMachines``.

In ``aksmachineapiheaderbatch`` creates of one template (the machine without its tags and
zones) are queued and sent as one PUT whose ``BatchPutMachine`` header lists every machine's
name, zones and tags: after ``provider-batch-idle-duration`` without a new one, at most
``provider-batch-max-duration`` after the first, or at ``provider-batch-max-size``. A queued
NodeClaim's launch answers "try again" until its batch was sent, then adopts its machine.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from nodewright.plugin import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    REGION_LABEL,
    ZONE_LABEL,
    Instance,
    InstanceNotFoundError,
    InsufficientCapacityError,
    LaunchError,
    LaunchRequest,
    NodeClassNotReadyError,
    Offering,
    ProviderError,
    TemporaryProviderError,
)
from nodewright_azure import aksapi, skus
from nodewright_azure import labels as L
from nodewright_azure.bootstrap import kubelet_labels, register_taints
from nodewright_azure.clients import azure_errors, message
from nodewright_azure.drift import drift_annotations
from nodewright_azure.errors import Attempt
from nodewright_azure.instance import InstanceProvider, provider_id_of, vm_name
from nodewright_azure.linuxosconfig import kubelet_config, machine_linux_os_config
from nodewright_azure.nodeclass import AKSNodeClassSpec

log = logging.getLogger(__name__)

#: The AKS machine API's longest machine name.
MAX_NAME = 34
BATCH_HEADER = "BatchPutMachine"
#: Tag naming the NodeClaim on an AKS machine.
TAG_MACHINE_NODECLAIM = "karpenter.azure.com_aksmachine_nodeclaim"
_ALPHANUMERIC = string.ascii_lowercase + string.digits


def machine_name(node_claim: str) -> str:
    """The AKS machine of a NodeClaim: its name, or, past 34 characters, the name with the
    part of its prefix that does not fit replaced by a 6-character hash of it."""
    if len(node_claim) <= MAX_NAME:
        return node_claim
    prefix, dash, suffix = node_claim.rpartition("-")
    if not dash:
        raise LaunchError("InvalidName", f"NodeClaim name {node_claim!r} has no '-<suffix>'")
    keep = MAX_NAME - len(suffix) - 1 - 6
    digest = int.from_bytes(hashlib.sha256(prefix[keep:].encode()).digest()[:8], "big")
    hashed = "".join(_ALPHANUMERIC[(digest >> (6 * i)) % 36] for i in range(6))
    return f"{prefix[:keep]}{hashed}-{suffix}"


def machine_of_vm(pool: str, vm: str) -> str | None:
    """The AKS machine behind a VM name ``aks-<pool>-<machine>-<id>-vm`` (None otherwise)."""
    match = re.fullmatch(rf"aks-{re.escape(pool)}-(.+)-[^-]+-vm", vm)
    return match.group(1) if match else None


def node_image_version(image_id: str) -> str:
    """``AKSUbuntu-2204gen2containerd-2025.01.01`` from a shared gallery image version ID
    (AKS machines take no community gallery image)."""
    match = re.search(
        r"/galleries/([^/]+)/images/([^/]+)/versions/([^/]+)$", image_id, re.IGNORECASE
    )
    if match is None:
        raise NodeClassNotReadyError(
            f"image {image_id} is not a shared gallery image; AKS machines need "
            "--provider-option azure.use-sig=true"
        )
    return "-".join(match.groups())


@dataclass
class _Batch:
    """Machine creates of one template waiting to go out together."""

    template: dict[str, Any]
    first: datetime
    last: datetime
    #: Machine name -> (zones, tags, the launch's attempt and request).
    entries: dict[str, tuple[list[str], dict[str, str], Attempt, LaunchRequest]] = field(
        default_factory=dict
    )


class AKSMachineProvider:
    """The cluster's AKS machines in one agent pool, and the batches being gathered."""

    def __init__(self, vms: InstanceProvider, now: Callable[[], datetime]) -> None:
        self.vms = vms
        self.settings = vms.settings
        self.now = now
        self.batches: dict[str, _Batch] = {}
        #: Machine name -> the error its batched create ended with.
        self.failed: dict[str, ProviderError] = {}
        #: Machines created but not yet provisioned: their attempt and request.
        self.creating: dict[str, tuple[Attempt, LaunchRequest]] = {}

    # -- where the machines are ------------------------------------------------------------

    def _pool_path(self) -> str:
        s = self.settings
        return (
            f"/subscriptions/{s.subscription_id}/resourceGroups/"
            f"{s.cluster_resource_group or s.resource_group}/providers/"
            f"Microsoft.ContainerService/managedClusters/{s.cluster_name}/agentPools/"
            f"{s.aks_machines_pool_name}"
        )

    def _client(self) -> Any:
        compute, _ = self.vms.clients.clients()
        return compute

    def get_machine(self, name: str) -> dict[str, Any] | None:
        try:
            with azure_errors(f"reading AKS machine {name}"):
                _, machine, _ = aksapi.request(
                    self._client(), "GET", f"{self._pool_path()}/machines/{name}"
                )
        except ResourceNotFoundError:
            return None
        return machine

    # -- launching ---------------------------------------------------------------------------

    def launch(self, request: LaunchRequest, spec: AKSNodeClassSpec) -> Instance:
        name = machine_name(request.node_claim.name)
        self.flush_due()
        if name in self.failed:
            raise self.failed.pop(name)
        if any(name in batch.entries for batch in self.batches.values()):
            raise TemporaryProviderError(
                f"azure: AKS machine {name} waits in a batched create", self._wait()
            )
        existing = self.get_machine(name)
        if existing is not None and _state(existing) not in ("terminating", "failed"):
            return self._launched(existing, spec)
        node_images = self.vms.images.node_images(spec)
        if not node_images:
            raise NodeClassNotReadyError(
                f"AKSNodeClass {request.node_class.name}: no image of imageFamily "
                f"{spec.image_family} resolves"
            )
        choice, exhausted = self.vms.choose(request, node_images)
        if choice is None:
            raise InsufficientCapacityError(
                f"no available offering of {len(request.instance_types)} instance type(s) "
                f"satisfies NodeClaim {request.node_claim.name}",
                tuple(exhausted),
            )
        instance_type, offering = choice
        image = self.vms.images.bootable(node_images, instance_type.name) or node_images[0]
        attempt = Attempt(instance_type.name, offering.zone, offering.capacity_type)
        body = self.machine_body(request, spec, instance_type.name, offering, image.id)
        if self.settings.provision_mode == "aksmachineapiheaderbatch":
            self._enqueue(name, body, attempt, request)
            self.flush_due()
            if name in self.failed:
                raise self.failed.pop(name)
            if any(name in batch.entries for batch in self.batches.values()):
                raise TemporaryProviderError(
                    f"azure: AKS machine {name} queued for a batched create", self._wait()
                )
        else:
            self._put(name, body, attempt, request)
        created = self.get_machine(name)
        if created is None:
            raise TemporaryProviderError(f"azure: AKS machine {name} not visible yet")
        if _state(created) == "failed":
            raise self._provisioning_failed(name, created, attempt, request)
        if _state(created) == "pending":
            self.creating[name] = (attempt, request)
        return self._launched(created, spec)

    def machine_body(
        self,
        request: LaunchRequest,
        spec: AKSNodeClassSpec,
        size: str,
        offering: Offering,
        image_id: str,
    ) -> dict[str, Any]:
        """The AKS machine to create (Karpenter Azure's ``buildAKSMachineTemplate``)."""
        claim = request.node_claim
        labels = kubelet_labels(
            {
                **claim.metadata.labels,
                CAPACITY_TYPE_LABEL: offering.capacity_type,
                L.PLACEMENT_SCOPE: "regional" if offering.zone == L.REGIONAL_ZONE else "zonal",
            }
        )
        labels = {k: v for k, v in labels.items() if not k.startswith(L.AKS_GROUP + "/")}
        taints = register_taints(claim.spec.taints, claim.spec.startup_taints)
        sku = self.vms.instance_types.sku(size)
        ephemeral = skus.ephemeral_os_max_gb(sku) if sku else None
        operating_system: dict[str, Any] = {
            "osType": "Linux",
            "osSKU": _os_sku(spec),
            "osDiskSizeGB": spec.os_disk_size_gb,
            "osDiskType": "Ephemeral"
            if ephemeral is not None and ephemeral >= spec.os_disk_size_gb
            else "Managed",
            "enableFIPS": spec.fips_mode == "FIPS",
        }
        linux = machine_linux_os_config(spec.linux_os_config)
        if linux is not None:
            operating_system["linuxProfile"] = {"linuxOSConfig": linux}
        kubernetes: dict[str, Any] = {
            "nodeLabels": labels,
            "orchestratorVersion": self.settings.kubernetes_version,
            "nodeInitializationTaints": [_taint(t) for t in taints],
            "nodeTaints": [],
        }
        kubelet = kubelet_config(spec.kubelet)
        if kubelet is not None:
            kubernetes["kubeletConfig"] = kubelet
        if spec.max_pods is not None:
            kubernetes["maxPods"] = spec.max_pods
        tags = self.vms.launch_templates.tags(request, spec)
        tags[TAG_MACHINE_NODECLAIM] = claim.name
        properties: dict[str, Any] = {
            "nodeImageVersion": node_image_version(image_id),
            "network": {"vnetSubnetID": spec.vnet_subnet_id} if spec.vnet_subnet_id else {},
            "hardware": {"vmSize": size},
            "operatingSystem": operating_system,
            "kubernetes": kubernetes,
            "mode": "System" if labels.get(L.AKS_MODE) == "system" else "User",
            "security": {
                "sshAccess": "LocalUser",
                "enableEncryptionAtHost": bool(spec.security and spec.security.encryption_at_host),
            },
            "priority": "Spot" if offering.capacity_type == CAPACITY_TYPE_SPOT else "Regular",
            "tags": tags,
        }
        zones = [] if offering.zone == L.REGIONAL_ZONE else [offering.zone.rsplit("-", 1)[1]]
        return {"zones": zones, "properties": properties}

    def _put(
        self,
        name: str,
        body: Mapping[str, Any],
        attempt: Attempt,
        request: LaunchRequest,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        try:
            with azure_errors(f"creating AKS machine {name}"):
                aksapi.request(
                    self._client(),
                    "PUT",
                    f"{self._pool_path()}/machines/{name}",
                    body=body,
                    headers=headers,
                )
        except HttpResponseError as error:
            raise self.vms.classify_failure(error, attempt, request) from None

    # -- batching -----------------------------------------------------------------------------

    def _enqueue(
        self, name: str, body: Mapping[str, Any], attempt: Attempt, request: LaunchRequest
    ) -> None:
        properties = dict(body["properties"])
        tags = properties.pop("tags")
        template = {"properties": properties}
        key = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
        now = self.now()
        batch = self.batches.setdefault(key, _Batch(template, now, now))
        batch.last = now
        batch.entries[name] = (list(body["zones"]), tags, attempt, request)
        log.info("azure: AKS machine %s queued (%d in its batch)", name, len(batch.entries))

    def _wait(self) -> timedelta:
        return timedelta(seconds=self.settings.batch_idle)

    def flush_due(self) -> list[str]:
        """Send every batch that is full, idle long enough, or old enough; the machines sent."""
        now = self.now()
        idle = timedelta(seconds=self.settings.batch_idle)
        longest = timedelta(seconds=self.settings.batch_max)
        sent: list[str] = []
        for key, batch in list(self.batches.items()):
            if (
                len(batch.entries) >= self.settings.batch_size
                or now - batch.last >= idle
                or now - batch.first >= longest
            ):
                del self.batches[key]
                sent += self._send(batch)
        return sent

    def _send(self, batch: _Batch) -> list[str]:
        names = list(batch.entries)
        header = {
            "batchMachines": [
                {"machineName": name, "zones": zones, "tags": tags}
                for name, (zones, tags, _, _) in batch.entries.items()
            ]
        }
        first = names[0]
        _, _, attempt, request = batch.entries[first]
        log.info("azure: creating %d AKS machine(s) in one batched PUT", len(names))
        try:
            self._put(first, batch.template, attempt, request, {BATCH_HEADER: json.dumps(header)})
        except ProviderError as error:
            for name in names:
                self.failed[name] = error
        return names

    # -- reading -------------------------------------------------------------------------------

    def _launched(self, machine: Mapping[str, Any], spec: AKSNodeClassSpec) -> Instance:
        return replace(
            self.to_instance(machine),
            annotations={
                **drift_annotations(spec),
                L.AKS_MACHINE_ANNOTATION: str(machine.get("id", "")),
            },
        )

    def to_instance(self, machine: Mapping[str, Any]) -> Instance:
        properties = machine.get("properties") or {}
        size = str((properties.get("hardware") or {}).get("vmSize", ""))
        zones = list(machine.get("zones") or [])
        location = self.settings.location
        zone = f"{location}-{zones[0]}" if zones else L.REGIONAL_ZONE
        spot = properties.get("priority") == "Spot"
        capacity_type = CAPACITY_TYPE_SPOT if spot else CAPACITY_TYPE_ON_DEMAND
        tags: dict[str, str] = dict(properties.get("tags") or {})
        vm_id = str(properties.get("resourceId", ""))
        status = properties.get("status") or {}
        created = _timestamp(status.get("creationTimestamp")) or self.now()
        labels = {
            ZONE_LABEL: zone,
            CAPACITY_TYPE_LABEL: capacity_type,
            REGION_LABEL: location,
            L.PLACEMENT_SCOPE: "regional" if zone == L.REGIONAL_ZONE else "zonal",
            L.AKS_SCALESET_PRIORITY: "spot" if spot else "regular",
        }
        capacity: dict[str, int] = {}
        allocatable: dict[str, int] = {}
        sku = self.vms.instance_types.sku(size)
        if sku is not None and skus.rejection(sku) is None:
            labels.update(skus.sku_labels(sku, AKSNodeClassSpec()))
            it = skus.instance_type(
                sku,
                AKSNodeClassSpec(),
                location,
                max_pods=self.settings.default_max_pods,
                vm_memory_overhead=self.settings.vm_memory_overhead,
            )
            capacity, allocatable = dict(it.capacity), it.allocatable()
        return Instance(
            provider_id=provider_id_of(vm_id) if vm_id else "",
            node_claim=tags.get(TAG_MACHINE_NODECLAIM) or str(machine.get("name", "")),
            node_pool=tags.get(L.TAG_NODEPOOL, ""),
            node_class=tags.get(L.TAG_NODECLASS, ""),
            instance_type=size,
            zone=zone,
            capacity_type=capacity_type,
            price=self.vms.pricing.book().price(size, capacity_type),
            created_at=created,
            labels=labels,
            capacity=capacity,
            allocatable=allocatable,
            image_id=str(properties.get("nodeImageVersion", "")),
            state=_state(machine),
            node_name=vm_id.rsplit("/", 1)[-1] if vm_id else "",
        )

    def get(self, provider_id: str) -> Instance:
        name = machine_of_vm(self.settings.aks_machines_pool_name, vm_name(provider_id))
        machine = self.get_machine(name) if name else None
        if machine is None:
            raise InstanceNotFoundError(f"AKS machine of {provider_id} does not exist")
        return self.to_instance(machine)

    def list(self) -> list[Instance]:
        with azure_errors("listing AKS machines"):
            try:
                machines = list(aksapi.pages(self._client(), f"{self._pool_path()}/machines"))
            except ResourceNotFoundError:
                return []  # no such agent pool (yet): no machines
        return [
            self.to_instance(m)
            for m in machines
            if L.TAG_NODEPOOL in ((m.get("properties") or {}).get("tags") or {})
        ]

    def delete(self, provider_id: str) -> None:
        name = machine_of_vm(self.settings.aks_machines_pool_name, vm_name(provider_id))
        machine = self.get_machine(name) if name else None
        if name is None or machine is None:
            raise InstanceNotFoundError(f"AKS machine of {provider_id} does not exist")
        if _state(machine) == "terminating":
            return
        self._delete(name)

    def _delete(self, name: str) -> None:
        with azure_errors(f"deleting AKS machine {name}"):
            try:
                aksapi.request(
                    self._client(),
                    "POST",
                    f"{self._pool_path()}/deleteMachines",
                    body={"machineNames": [name]},
                )
            except ResourceNotFoundError:
                return

    def follow_creates(self) -> None:
        """Creates that were still provisioning: a failed one is classified and deleted."""
        self.flush_due()
        for name, (attempt, request) in list(self.creating.items()):
            machine = self.get_machine(name)
            state = _state(machine) if machine is not None else "terminated"
            if state == "pending":
                continue
            del self.creating[name]
            if state == "failed" and machine is not None:
                self._provisioning_failed(name, machine, attempt, request)

    def _provisioning_failed(
        self,
        name: str,
        machine: Mapping[str, Any],
        attempt: Attempt,
        request: LaunchRequest,
    ) -> ProviderError:
        error = ((machine.get("properties") or {}).get("status") or {}).get(
            "provisioningError"
        ) or {}
        failure = self.vms.classify_text(
            str(error.get("code", "")), str(error.get("message", "")), attempt, request
        )
        try:
            self._delete(name)
        except ProviderError as cleanup:
            log.warning("azure: deleting failed AKS machine %s: %s", name, message(cleanup))
        return failure


def _state(machine: Mapping[str, Any]) -> str:
    state = str((machine.get("properties") or {}).get("provisioningState") or "").lower()
    if state == "deleting":
        return "terminating"
    if state == "failed":
        return "failed"
    if state in ("creating", "updating", ""):
        return "pending"
    return "running"


def _os_sku(spec: AKSNodeClassSpec) -> str:
    """The AKS ``osSKU`` of the class's image family (``Ubuntu`` is 22.04 here, as the images
    :mod:`nodewright_azure.images` resolves; FIPS keeps AKS's ``Ubuntu``)."""
    if spec.image_family == "Ubuntu2204":
        return "Ubuntu2204"
    if spec.image_family == "Ubuntu2404":
        return "Ubuntu2404"
    if spec.image_family == "AzureLinux":
        return "AzureLinux"
    return "Ubuntu" if spec.fips_mode == "FIPS" else "Ubuntu2204"


def _taint(taint: Any) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def _timestamp(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
