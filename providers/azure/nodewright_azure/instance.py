"""Azure VMs (Karpenter Azure's instance provider): launch (the cheapest available offering
an image boots, NIC first, then the VM, then under ``bootstrappingclient`` its CustomScript
extension), read, list this cluster's, delete (VM, then NIC), and follow creates that outlast
the launch. A failed create is classified (capacity errors make
offerings unavailable) and what it left is deleted."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
)
from azure.core.polling import LROPoller

from nodewright.plugin import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    REGION_LABEL,
    UNAVAILABLE_OFFERING_TTL,
    ZONE_LABEL,
    Instance,
    InstanceNotFoundError,
    InstanceType,
    InsufficientCapacityError,
    LaunchError,
    LaunchRequest,
    LaunchResult,
    NodeClassNotReadyError,
    Offering,
    ProviderError,
    TemporaryProviderError,
)
from nodewright_azure import labels as L
from nodewright_azure import skus
from nodewright_azure.clients import AzureClients, azure_errors, message
from nodewright_azure.drift import drift_annotations
from nodewright_azure.errors import Attempt, classify
from nodewright_azure.images import ImageProvider, NodeImage
from nodewright_azure.instancetype import InstanceTypeProvider
from nodewright_azure.launchtemplate import LaunchTemplateProvider
from nodewright_azure.nodebootstrapping import create_extension
from nodewright_azure.nodeclass import AKSNodeClassSpec
from nodewright_azure.options import BOOTSTRAPPING_CLIENT, Settings
from nodewright_azure.pricing import PricingProvider
from nodewright_azure.unavailable import OfferingKey, UnavailableOfferings

log = logging.getLogger(__name__)

_VM_ID = re.compile(
    r"^azure:///subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/"
    r"virtualMachines/([^/]+)$",
    re.IGNORECASE,
)


def resource_name(node_claim: str) -> str:
    """VM, NIC and OS disk name of a NodeClaim."""
    return f"{L.RESOURCE_NAME_PREFIX}{node_claim}"


def provider_id_of(vm_id: str) -> str:
    """``azure://`` + the VM's resource ID, resource group lower-cased (as AKS writes it)."""
    parts = vm_id.split("/")
    for i, part in enumerate(parts[:-1]):
        if part.lower() == "resourcegroups":
            parts[i + 1] = parts[i + 1].lower()
    return L.PROVIDER_ID_PREFIX + "/".join(parts)


def vm_name(provider_id: str) -> str:
    match = _VM_ID.match(provider_id)
    if match is None:
        raise InstanceNotFoundError(f"{provider_id!r} is not an Azure VM provider ID")
    return match.group(3)


def vm_state(vm: Any) -> str:
    state = (vm.provisioning_state or "").lower()
    if state == "deleting":
        return "terminating"
    if state == "failed":
        return "failed"
    if state in ("creating", "updating", ""):
        return "pending"
    return "running"


@dataclass(frozen=True)
class _Create:
    """A VM create still running after launch returned."""

    poller: LROPoller[Any]
    attempt: Attempt
    request: LaunchRequest
    #: The command its CustomScript extension runs once it exists (``bootstrappingclient``).
    cse: str | None = None
    tags: Mapping[str, str] | None = None


class InstanceProvider:
    """This cluster's VMs and NICs, with the creates and deletes still running."""

    def __init__(
        self,
        *,
        settings: Settings,
        clients: AzureClients,
        instance_types: InstanceTypeProvider,
        images: ImageProvider,
        pricing: PricingProvider,
        launch_templates: LaunchTemplateProvider,
        unavailable: UnavailableOfferings,
        now: Callable[[], datetime],
    ) -> None:
        self.settings = settings
        self.clients = clients
        self.instance_types = instance_types
        self.images = images
        self.pricing = pricing
        self.launch_templates = launch_templates
        self.unavailable = unavailable
        self.now = now
        #: Deletes started (VM or NIC name -> poller), forgotten once done.
        self.deletes: dict[str, LROPoller[Any]] = {}
        #: VM creates that outlasted their launch, by VM name.
        self.creates: dict[str, _Create] = {}

    # -- launching ------------------------------------------------------------------------------

    def launch(self, request: LaunchRequest, spec: AKSNodeClassSpec) -> Instance | LaunchResult:
        compute, network = self.clients.clients()
        name = resource_name(request.node_claim.name)
        existing = self.get_vm(name)
        if existing is not None and vm_state(existing) not in ("terminating", "failed"):
            found_key = (existing.tags or {}).get(L.TAG_NODECLAIM_UID)
            if found_key in (None, request.idempotency_key):
                log.info("azure: %s already exists; adopting it", name)
                return replace(self.to_instance(existing), annotations=drift_annotations(spec))
            raise LaunchError(
                "NameInUse",
                f"VM {name} belongs to another NodeClaim (uid {found_key}); "
                "it must be deleted before this NodeClaim can launch",
            )
        node_images = self.images.node_images(spec)
        if not node_images:
            raise NodeClassNotReadyError(
                f"AKSNodeClass {request.node_class.name}: no image of imageFamily "
                f"{spec.image_family} resolves"
            )
        choice, exhausted = self.choose(request, node_images)
        # Offerings this provider saw fail recently (a create that failed after the launch
        # returned, say) are skipped; the core's catalog must stop offering them too.
        ttl = min(exhausted.values(), default=UNAVAILABLE_OFFERING_TTL)
        if choice is None:
            raise InsufficientCapacityError(
                f"no available offering of {len(request.instance_types)} instance type(s) "
                f"satisfies NodeClaim {request.node_claim.name}",
                tuple(exhausted),
                ttl,
            )
        instance_type, offering = choice
        image = self.images.bootable(node_images, instance_type.name) or node_images[0]
        attempt = Attempt(instance_type.name, offering.zone, offering.capacity_type)
        tags = self.launch_templates.tags(request, spec)
        subnet = spec.vnet_subnet_id or self.settings.vnet_subnet_id
        sku = self.instance_types.sku(instance_type.name)
        accelerated = bool(sku and sku.flag("AcceleratedNetworkingEnabled"))
        # Built before anything is created: a bootstrap that cannot be built leaves nothing.
        cse: str | None = None
        if self.settings.provision_mode == BOOTSTRAPPING_CLIENT:
            custom_data, cse = self.launch_templates.custom_scripts(
                request=request,
                spec=spec,
                instance_type=instance_type,
                offering=offering,
                sku=sku,
                image_id=image.id,
            )
        else:
            custom_data = self.launch_templates.custom_data(
                name,
                request=request,
                spec=spec,
                instance_type=instance_type,
                offering=offering,
                sku=sku,
            )
        from azure.mgmt.compute.models import VirtualMachine  # noqa: PLC0415
        from azure.mgmt.network.models import NetworkInterface  # noqa: PLC0415

        try:
            nic = network.network_interfaces.begin_create_or_update(
                self.settings.resource_group,
                name,
                NetworkInterface(
                    {
                        "location": self.settings.location,
                        "tags": tags,
                        "properties": {
                            "enableAcceleratedNetworking": accelerated,
                            "ipConfigurations": [
                                {
                                    "name": name,
                                    "properties": {
                                        "primary": True,
                                        "privateIPAllocationMethod": "Dynamic",
                                        "subnet": {"id": subnet},
                                    },
                                }
                            ],
                        },
                    }
                ),
            ).result()
            vm_body = self._vm_body(
                name,
                custom_data=custom_data,
                nic_id=nic.id or "",
                instance_type=instance_type,
                offering=offering,
                spec=spec,
                tags=tags,
                sku=sku,
                image=image,
            )
            poller = compute.virtual_machines.begin_create_or_update(
                self.settings.resource_group, name, VirtualMachine(vm_body)
            )
            # Wait a while so most failures are reported here; a slower create is followed
            # by reconcile, and the instance is returned as pending meanwhile.
            poller.wait(timeout=self.settings.launch_wait)
            vm: Any
            if poller.done():
                vm = poller.result()
                if cse is not None:
                    create_extension(compute, self.settings, name, cse, tags)
            else:
                self.creates[name] = _Create(poller, attempt, request, cse, tags)
                vm = self.get_vm(name)
                if vm is None:
                    raise TemporaryProviderError(f"azure: VM {name} vanished while creating")
        except HttpResponseError as error:
            failure = self.classify_failure(error, attempt, request)
            self._cleanup(name)
            raise failure from None
        except (ClientAuthenticationError, ServiceRequestError) as error:
            raise TemporaryProviderError(f"azure: cannot reach ARM: {message(error)}") from None
        log.info(
            "azure: launched %s (%s, zone %s, %s)",
            name,
            instance_type.name,
            offering.zone,
            offering.capacity_type,
        )
        instance = replace(self.to_instance(vm), annotations=drift_annotations(spec))
        return LaunchResult(instance, tuple(exhausted), ttl) if exhausted else instance

    def choose(
        self, request: LaunchRequest, node_images: list[NodeImage]
    ) -> tuple[tuple[InstanceType, Offering] | None, dict[OfferingKey, timedelta]]:
        """The cheapest offering to launch, and the compatible offerings skipped because they
        recently had no capacity (with how long they stay unavailable)."""
        now = self.now()
        best: tuple[tuple[float, bool, str, str], InstanceType, Offering] | None = None
        exhausted: dict[OfferingKey, timedelta] = {}
        for it in request.instance_types:
            if request.requirements.intersects(it.requirements):
                continue
            if self.images.bootable(node_images, it.name) is None:
                continue  # no image of the family boots this size (e.g. Gen1-only, arm64)
            for offering in it.offerings:
                if not offering.available or not offering.matches(request.requirements):
                    continue
                triple = (it.name, offering.zone, offering.capacity_type)
                until = self.unavailable.unavailable_until(triple, now)
                if until is not None:
                    exhausted[triple] = until - now
                    continue
                key = (offering.price, offering.zone == L.REGIONAL_ZONE, offering.zone, it.name)
                if best is None or key < best[0]:
                    best = (key, it, offering)
        return (None if best is None else (best[1], best[2])), exhausted

    def _vm_body(
        self,
        name: str,
        *,
        nic_id: str,
        instance_type: InstanceType,
        offering: Offering,
        spec: AKSNodeClassSpec,
        tags: Mapping[str, str],
        sku: skus.Sku | None,
        image: NodeImage,
        custom_data: str,
    ) -> dict[str, Any]:
        os_disk: dict[str, Any] = {
            "name": name,
            "createOption": "FromImage",
            "deleteOption": "Delete",
            "diskSizeGB": spec.os_disk_size_gb,
        }
        ephemeral = skus.ephemeral_os_max_gb(sku) if sku else None
        if ephemeral is not None and ephemeral >= spec.os_disk_size_gb:
            os_disk["caching"] = "ReadOnly"
            os_disk["diffDiskSettings"] = {"option": "Local", "placement": "ResourceDisk"}
        user = self.settings.admin_username
        properties: dict[str, Any] = {
            "hardwareProfile": {"vmSize": instance_type.name},
            "storageProfile": {
                "imageReference": (
                    {"communityGalleryImageId": image.id}
                    if image.id.lower().startswith("/communitygalleries/")
                    else {"id": image.id}
                ),
                "osDisk": os_disk,
            },
            "osProfile": {
                "computerName": name,
                "adminUsername": self.settings.admin_username,
                "customData": custom_data,
                "linuxConfiguration": {
                    "disablePasswordAuthentication": True,
                    "ssh": {
                        "publicKeys": [
                            {
                                "path": f"/home/{user}/.ssh/authorized_keys",
                                "keyData": self.settings.ssh_public_key,
                            }
                        ]
                        if self.settings.ssh_public_key
                        else []
                    },
                },
            },
            "networkProfile": {
                "networkInterfaces": [
                    {"id": nic_id, "properties": {"primary": True, "deleteOption": "Delete"}}
                ]
            },
            "priority": "Regular",
        }
        if offering.capacity_type == CAPACITY_TYPE_SPOT:
            properties["priority"] = "Spot"
            properties["evictionPolicy"] = "Delete"
            properties["billingProfile"] = {"maxPrice": -1}
        if spec.security is not None and spec.security.encryption_at_host:
            properties["securityProfile"] = {"encryptionAtHost": True}
        body: dict[str, Any] = {
            "location": self.settings.location,
            "tags": dict(tags),
            "properties": properties,
        }
        if offering.zone != L.REGIONAL_ZONE:
            body["zones"] = [offering.zone.rsplit("-", 1)[1]]
        return body

    def classify_failure(
        self, error: HttpResponseError, attempt: Attempt, request: LaunchRequest
    ) -> ProviderError:
        code = (error.error.code if error.error is not None else "") or ""
        text = (error.error.message if error.error is not None else "") or message(error)
        if not code and error.status_code == 429:
            code = "TooManyRequests"
        return self.classify_text(code, text, attempt, request)

    def classify_text(
        self, code: str, text: str, attempt: Attempt, request: LaunchRequest
    ) -> ProviderError:
        """The error of a failed create from ARM's code and message; capacity errors make
        the offerings they name unavailable."""
        by_name = self.instance_types.by_name()

        def family_of(name: str) -> tuple[str, int] | None:
            sku = by_name.get(name)
            return None if sku is None else (sku.family, sku.cpus)

        def zones_of(name: str) -> list[str]:
            sku = by_name.get(name)
            return [] if sku is None else skus.zone_values(sku, self.settings.location)

        failure = classify(
            code,
            text,
            attempt,
            candidates=[t.name for t in request.instance_types],
            family_of=family_of,
            zones_of=zones_of,
        )
        if isinstance(failure, InsufficientCapacityError):
            until = self.now() + failure.ttl
            for offering in failure.offerings:
                self.unavailable.mark(offering, until)
        log.warning("azure: launch of %s failed: %s", attempt.instance_type, failure)
        return failure

    def _cleanup(self, name: str) -> None:
        """Remove what a failed launch left: the VM (when ARM kept it) and the NIC."""
        compute, network = self.clients.clients()
        group = self.settings.resource_group
        try:
            if self.get_vm(name) is not None:
                compute.virtual_machines.begin_delete(group, name, force_deletion=True).result()
            network.network_interfaces.begin_delete(group, name).result()
        except HttpResponseError as error:
            log.warning(
                "azure: cleaning up %s failed (garbage collection retries): %s",
                name,
                message(error),
            )

    def follow_creates(self) -> None:
        """Finish VM creates that outlasted launch: a failure is classified (capacity errors
        make offerings unavailable) and what it left is deleted, so Get reports the instance
        gone and the core replaces its NodeClaim."""
        for name, create in list(self.creates.items()):
            if not create.poller.done():
                continue
            self.creates.pop(name, None)
            try:
                create.poller.result()
                if create.cse is not None:
                    compute, _ = self.clients.clients()
                    create_extension(compute, self.settings, name, create.cse, create.tags or {})
            except HttpResponseError as error:
                self.classify_failure(error, create.attempt, create.request)
                self._cleanup(name)

    def forget_finished_deletes(self) -> None:
        for name, poller in list(self.deletes.items()):
            if poller.done():
                self.deletes.pop(name, None)

    # -- reading --------------------------------------------------------------------------------

    def get_vm(self, name: str) -> Any | None:
        compute, _ = self.clients.clients()
        try:
            with azure_errors(f"reading VM {name}"):
                return compute.virtual_machines.get(self.settings.resource_group, name)
        except ResourceNotFoundError:
            return None

    def to_instance(self, vm: Any) -> Instance:
        tags: dict[str, str] = dict(vm.tags or {})
        # The SDK gives known sizes as a str enum; the name is its value.
        raw_size = vm.hardware_profile.vm_size if vm.hardware_profile else ""
        size = str(getattr(raw_size, "value", raw_size) or "")
        zones = list(vm.zones or [])
        zone = f"{self.settings.location}-{zones[0]}" if zones else L.REGIONAL_ZONE
        capacity_type = (
            CAPACITY_TYPE_SPOT if (vm.priority or "") == "Spot" else CAPACITY_TYPE_ON_DEMAND
        )
        created = vm.time_created or self.now()
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        labels = {
            ZONE_LABEL: zone,
            CAPACITY_TYPE_LABEL: capacity_type,
            REGION_LABEL: self.settings.location,
            L.PLACEMENT_SCOPE: "regional" if zone == L.REGIONAL_ZONE else "zonal",
            L.AKS_SCALESET_PRIORITY: "spot" if capacity_type == CAPACITY_TYPE_SPOT else "regular",
            # The subnet is the NodeClass's, unknown here: network labels come with the bootstrap.
            **L.aks_node_labels(
                self.settings.resource_group,
                self.settings.network_plugin,
                dataplane=self.settings.network_dataplane,
                kubelet_identity=self.settings.kubelet_identity_client_id,
            ),
        }
        capacity: dict[str, int] = {}
        allocatable: dict[str, int] = {}
        sku = self.instance_types.sku(size)
        if sku is not None and skus.rejection(sku) is None:
            spec = AKSNodeClassSpec()
            labels.update(skus.sku_labels(sku, spec))
            it = skus.instance_type(
                sku,
                spec,
                self.settings.location,
                max_pods=self.settings.default_max_pods,
                vm_memory_overhead=self.settings.vm_memory_overhead,
            )
            capacity, allocatable = dict(it.capacity), it.allocatable()
        image = ""
        storage = getattr(vm, "storage_profile", None)
        if storage is not None and storage.image_reference is not None:
            ref = storage.image_reference
            image = ref.community_gallery_image_id or ref.id or ""
        return Instance(
            provider_id=provider_id_of(vm.id or ""),
            node_claim=tags.get(L.TAG_NODECLAIM)
            or (vm.name or "").removeprefix(L.RESOURCE_NAME_PREFIX),
            node_pool=tags.get(L.TAG_NODEPOOL, ""),
            node_class=tags.get(L.TAG_NODECLASS, ""),
            instance_type=size,
            zone=zone,
            capacity_type=capacity_type,
            price=self.pricing.book().price(size, capacity_type),
            created_at=created,
            labels=labels,
            capacity=capacity,
            allocatable=allocatable,
            image_id=image,
            state=vm_state(vm),
            # The VM's computer name is the node's name (aks-<nodeclaim>), as AKS nodes have.
            node_name=vm.name or "",
        )

    def get(self, provider_id: str) -> Instance:
        name = vm_name(provider_id)
        vm = self.get_vm(name)
        if vm is None:
            raise InstanceNotFoundError(f"VM {name} does not exist")
        return self.to_instance(vm)

    def list(self) -> Sequence[Instance]:
        if self.settings.missing():
            # Not set up for Azure (e.g. a KWOK-only simulation): it runs no instances.
            return []
        compute, _ = self.clients.clients()
        found: list[Instance] = []
        with azure_errors("listing VMs"):
            for vm in compute.virtual_machines.list(self.settings.resource_group):
                tags = vm.tags or {}
                if tags.get(L.TAG_CLUSTER) != self.settings.cluster_name:
                    continue
                if L.TAG_NODEPOOL not in tags:
                    continue
                found.append(self.to_instance(vm))
        return found

    def delete(self, provider_id: str) -> None:
        """Force-delete the VM, then its NIC; InstanceNotFoundError once both are gone."""
        compute, network = self.clients.clients()
        name = vm_name(provider_id)
        group = self.settings.resource_group
        vm = self.get_vm(name)
        with azure_errors(f"deleting {name}"):
            if vm is not None:
                if vm_state(vm) != "terminating":
                    self.deletes[name] = compute.virtual_machines.begin_delete(
                        group, name, force_deletion=True
                    )
                return
            try:
                nic = network.network_interfaces.get(group, name)
            except ResourceNotFoundError:
                self.deletes.pop(name, None)
                raise InstanceNotFoundError(f"VM {name} does not exist") from None
            if (nic.provisioning_state or "") != "Deleting":
                self.deletes[name] = network.network_interfaces.begin_delete(group, name)
