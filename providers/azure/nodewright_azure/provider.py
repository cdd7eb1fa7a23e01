"""The Azure provider: SKUs from the Resource SKUs API, prices from the Retail Prices API, and
VMs (NIC first, then the VM) through azure-mgmt-network and azure-mgmt-compute.

Nothing talks to Azure before the first hook that needs it; clients and credentials are built
then, so the plugin loads without credentials or network.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from azure.core.credentials import TokenCredential
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
)
from azure.core.polling import LROPoller

from nodewright.api.core import Node
from nodewright.api.karpenter import NodeClaim, NodeClass
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    REGION_LABEL,
    ZONE_LABEL,
)
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    InsufficientCapacityError,
    LaunchError,
    NodeClassNotReadyError,
    ProviderError,
    TemporaryProviderError,
)
from nodewright.plugin.hashes import restamp_hashes
from nodewright.plugin.model import (
    UNAVAILABLE_OFFERING_TTL,
    ClockLike,
    Instance,
    InstanceType,
    LaunchRequest,
    LaunchResult,
    NodeClassKind,
    NodeClassReadiness,
    Offering,
    ProviderCluster,
    ProviderContext,
    ProviderInfo,
    RepairPolicy,
)
from nodewright_azure import auth, bootstrap, images, skus
from nodewright_azure import labels as L
from nodewright_azure.crd import aks_node_class_crd
from nodewright_azure.errors import Attempt, classify
from nodewright_azure.images import ImageDefinition, NodeImage
from nodewright_azure.nodeclass import (
    API_VERSION_V1ALPHA2,
    HASH_ANNOTATION,
    HASH_VERSION,
    HASH_VERSION_ANNOTATION,
    AKSNodeClass,
    AKSNodeClassSpec,
    spec_hash,
)
from nodewright_azure.offline.catalog import load_catalog
from nodewright_azure.offline.cloud import OfflineAzure
from nodewright_azure.offline.transport import OfflineCredential, OfflineTransport
from nodewright_azure.options import Settings, SettingsError, parse_settings
from nodewright_azure.pricing import Pricing, RetailPricesClient

if TYPE_CHECKING:
    from azure.mgmt.compute import ComputeManagementClient
    from azure.mgmt.network import NetworkManagementClient

log = logging.getLogger(__name__)

NAME = "azure"
INSTALL_HINT = 'pip install "nodewright[azure]"'
SKU_REFRESH = timedelta(hours=12)
#: How long a resolved image version is used before the gallery is asked again.
IMAGE_REFRESH = timedelta(minutes=5)
#: How often orphan NICs are looked for.
NIC_GC_PERIOD = timedelta(minutes=5)
#: Drift reasons (Karpenter Azure's).
NODECLASS_DRIFT = "NodeClassDrift"
IMAGE_DRIFT = "ImageDrift"
K8S_VERSION_DRIFT = "K8sVersionDrift"
_VM_ID = re.compile(
    r"^azure:///subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/"
    r"virtualMachines/([^/]+)$",
    re.IGNORECASE,
)

CredentialFactory = Callable[[Settings], TokenCredential]


def provider_info() -> ProviderInfo:
    return ProviderInfo(
        name=NAME,
        node_classes=(
            NodeClassKind(
                group=L.GROUP,
                kind=AKSNodeClass.KIND,
                model=AKSNodeClass,
                extra_versions=(API_VERSION_V1ALPHA2,),
                crd=aks_node_class_crd,
            ),
        ),
        restricted_label_domains=frozenset({L.GROUP}),
        well_known_labels=L.SKU_LABELS,
        install_hint=INSTALL_HINT,
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


#: Karpenter Azure's repair policies: the kubelet's Ready, AKS's node health agent, and a
#: Spot VM told it is about to be evicted (replaced at once, not after Ready's 10 minutes).
REPAIR_POLICIES = (
    RepairPolicy("Ready", "False", timedelta(minutes=10)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=10)),
    RepairPolicy("kubernetes.azure.com/NodeHealthy", "False", timedelta(0)),
    RepairPolicy("PreemptionScheduled", "True", timedelta(0)),
)


@dataclass(frozen=True)
class _Create:
    """A VM create still running after launch returned."""

    poller: LROPoller[Any]
    attempt: Attempt
    request: LaunchRequest


class AzureProvider:
    """One provider object: settings, lazily built clients, SKU and price caches."""

    def __init__(self, credential_factory: CredentialFactory | None = None) -> None:
        self._credential_factory = credential_factory or auth.credential
        self.settings = Settings()
        self._clock: ClockLike | None = None
        self._cluster: ProviderCluster | None = None
        self._compute: ComputeManagementClient | None = None
        self._network: NetworkManagementClient | None = None
        self._skus: list[skus.Sku] | None = None
        self._skus_at: datetime | None = None
        self._pricing: Pricing | None = None
        self._unavailable: dict[tuple[str, str, str], datetime] = {}
        self._deletes: dict[str, LROPoller[Any]] = {}
        self._creates: dict[str, _Create] = {}
        self._image_versions: dict[ImageDefinition, tuple[str | None, datetime]] = {}
        #: NIC name -> when garbage collection first found it without a VM.
        self._orphan_nics: dict[str, datetime] = {}
        self._nic_gc_at: datetime | None = None
        #: The in-process cloud under ``azure.offline=LOCATION`` (None when online).
        self.offline: OfflineAzure | None = None

    # -- set-up -------------------------------------------------------------------------------

    def configure(self, context: ProviderContext) -> None:
        """Parse options; no Azure call and no credential is touched here."""
        self.settings = parse_settings(context.options, context.cluster_name)
        self._clock = context.clock
        self._cluster = context.cluster
        self._compute = self._network = None
        self._skus = self._skus_at = None
        self._pricing = None
        self._unavailable.clear()
        self._deletes.clear()
        self._creates.clear()
        self._image_versions.clear()
        self._orphan_nics.clear()
        self._nic_gc_at = None
        self.offline = None
        if self.settings.offline:
            catalog = load_catalog()
            self.offline = OfflineAzure(
                catalog, self.settings.location, self.settings.subscription_id, context.clock.now
            )
            log.info(
                "azure: offline in %s; VM sizes: %s; prices: %s",
                self.settings.location,
                catalog.sources["skus"],
                catalog.sources["prices"],
            )

    def _credential(self) -> TokenCredential:
        if self.offline is not None:
            return OfflineCredential()
        return self._credential_factory(self.settings)

    def _transport(self) -> dict[str, Any]:
        """The SDK clients' transport: the in-process cloud offline, else the default."""
        return {} if self.offline is None else {"transport": OfflineTransport(self.offline)}

    def report_notes(self) -> list[str]:
        """Offline, where the figures come from and which prices are approximate."""
        if self.offline is None:
            return []
        location = self.settings.location
        listed = self.offline.catalog.listed(location)
        launched = sorted(
            {vm["properties"]["hardwareProfile"]["vmSize"] for vm in self.offline.launched}
        )
        modelled = [name for name in launched if name not in listed]
        lines = [
            f"offline catalog of {location} (no Azure call): {len(self.offline.skus)} VM sizes "
            f"from the provider's test fixture; on-demand prices are bundled list prices for "
            f"{len(listed)} sizes and modelled for the others; every spot price is modelled "
            "(15-30 % of on-demand): approximate figures"
        ]
        if modelled:
            lines.append(f"modelled (approximate) on-demand prices launched: {', '.join(modelled)}")
        return lines

    def configuration_problem(self) -> str | None:
        """A missing setting, or a credential that cannot be made (made, not used)."""
        try:
            self.settings.require()
            self._credential()
        except SettingsError as error:
            return str(error)
        return None

    def close(self) -> None:
        """Let running operations finish (briefly) and close the SDK clients' connections."""
        for poller in [*self._deletes.values(), *(c.poller for c in self._creates.values())]:
            with suppress(HttpResponseError):
                poller.wait(timeout=5)
        for client in (self._compute, self._network):
            if client is not None:
                client.close()
        if self._pricing is not None and self._pricing.client is not None:
            self._pricing.client.close()
        self._compute = self._network = None
        self._pricing = None

    @property
    def clock(self) -> ClockLike:
        if self._clock is None:
            raise RuntimeError("the azure provider is not configured (nodewright_configure)")
        return self._clock

    def _client_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "polling_interval": self.settings.polling_interval,
            "retry_backoff_factor": self.settings.retry_backoff,
            "retry_total": 5,
        }
        if self.settings.ca_bundle:
            options["connection_verify"] = self.settings.ca_bundle
        return options

    def _clients(self) -> tuple[ComputeManagementClient, NetworkManagementClient]:
        if self._compute is None or self._network is None:
            # The management SDKs take seconds to import: only a provider that talks to Azure
            # pays for them, not every `nodewright` command that loads the plugin.
            from azure.mgmt.compute import ComputeManagementClient  # noqa: PLC0415
            from azure.mgmt.network import NetworkManagementClient  # noqa: PLC0415

            try:
                self.settings.require()
                credential = self._credential()
            except SettingsError as error:
                raise NodeClassNotReadyError(str(error)) from None
            endpoint = self.settings.arm_endpoint.rstrip("/")
            scopes = ["https://management.azure.com/.default"]
            self._compute = ComputeManagementClient(
                credential,
                self.settings.subscription_id,
                base_url=endpoint,
                credential_scopes=scopes,
                **self._client_options(),
                **self._transport(),
            )
            self._network = NetworkManagementClient(
                credential,
                self.settings.subscription_id,
                base_url=endpoint,
                credential_scopes=scopes,
                **self._client_options(),
                **self._transport(),
            )
        return self._compute, self._network

    # -- SKUs and prices ----------------------------------------------------------------------

    def region_skus(self) -> list[skus.Sku]:
        """Every VM SKU of the region (cached for 12 hours)."""
        now = self.clock.now()
        if self._skus is None or self._skus_at is None or now - self._skus_at >= SKU_REFRESH:
            compute, _ = self._clients()
            region = self.settings.location
            with _azure_errors("listing resource SKUs"):
                found = [
                    skus.sku_from_model(model, region)
                    for model in compute.resource_skus.list(filter=f"location eq '{region}'")
                    if (model.resource_type or "") == "virtualMachines"
                ]
            self._skus, self._skus_at = found, now
            log.info("azure: %d VM SKUs in %s", len(found), region)
        return self._skus

    def _sku(self, name: str) -> skus.Sku | None:
        return next((s for s in self.region_skus() if s.name == name), None)

    def pricing(self) -> Pricing:
        if self._pricing is None:
            client = None
            if self.settings.pricing == "api":
                options: dict[str, Any] = {
                    "retry_total": 3,
                    "retry_backoff_factor": self.settings.retry_backoff,
                }
                if self.settings.ca_bundle:
                    options["connection_verify"] = self.settings.ca_bundle
                client = RetailPricesClient(
                    self.settings.prices_endpoint, **options, **self._transport()
                )
            self._pricing = Pricing.start(self.settings.location or "eastus", client)
        if self._pricing.due(self.clock.now()):
            self._pricing.refresh(self.clock.now())
        return self._pricing

    # -- images -------------------------------------------------------------------------------

    def node_images(self, spec: AKSNodeClassSpec) -> list[NodeImage]:
        """The images the NodeClass may boot, in priority order (``status.images``)."""
        if self.settings.image_id:
            return [NodeImage(self.settings.image_id)]
        found: list[NodeImage] = []
        for definition in images.definitions(spec.image_family, self.settings.kubernetes_version):
            version = self._latest_version(definition)
            if version:
                found.append(
                    NodeImage(definition.image_id(version), definition.arch, definition.generation)
                )
        return found

    def _latest_version(self, definition: ImageDefinition) -> str | None:
        """The most recently published version of a gallery image (cached a few minutes)."""
        now = self.clock.now()
        cached = self._image_versions.get(definition)
        if cached is not None and now - cached[1] < IMAGE_REFRESH:
            return cached[0]
        compute, _ = self._clients()
        try:
            with _azure_errors(f"listing versions of image {definition.definition}"):
                versions = list(
                    compute.community_gallery_image_versions.list(
                        self.settings.location, definition.gallery, definition.definition
                    )
                )
        except ResourceNotFoundError:
            versions = []
        except TemporaryProviderError:
            if cached is not None:
                return cached[0]  # keep using what resolved before
            raise
        newest = max(
            (v for v in versions if v.name),
            key=_published,
            default=None,
        )
        name = newest.name if newest is not None else None
        if cached is None or cached[0] != name:
            log.info("azure: image %s resolves to version %s", definition.definition, name)
        self._image_versions[definition] = (name, now)
        return name

    def _bootable(self, node_images: list[NodeImage], size: str) -> NodeImage | None:
        sku = self._sku(size)
        if sku is None:
            return node_images[0] if node_images else None
        generations = images.hyperv_generations(sku.capability("HyperVGenerations"))
        return images.first_compatible(node_images, skus.arch(sku), generations)

    # -- NodeClasses and catalog --------------------------------------------------------------

    def node_class_status(self, node_class: NodeClass) -> NodeClassReadiness:
        spec = _spec(node_class)
        missing = self.settings.missing()
        if missing:
            return NodeClassReadiness(
                ready=False,
                reason="ProviderNotConfigured",
                message="set " + ", ".join(f"--provider-option azure.{m}=..." for m in missing),
            )
        if not (spec.vnet_subnet_id or self.settings.vnet_subnet_id):
            return NodeClassReadiness(
                ready=False,
                reason="SubnetsNotReady",
                message="neither spec.vnetSubnetID nor --provider-option "
                "azure.vnet-subnet-id names a subnet",
            )
        try:
            found = self.node_images(spec)
        except TemporaryProviderError as error:
            return NodeClassReadiness(ready=False, reason="ImagesNotReady", message=str(error))
        if not found:
            tried = images.definitions(spec.image_family, self.settings.kubernetes_version)
            return NodeClassReadiness(
                ready=False,
                reason="ImagesNotReady",
                message=f"no image of imageFamily {spec.image_family} resolves: the community "
                f"gallery lists no version of {', '.join(d.definition for d in tried)} in "
                f"{self.settings.location}",
            )
        status: dict[str, Any] = {"images": [image.status() for image in found]}
        if self.settings.kubernetes_version:
            status["kubernetesVersion"] = self.settings.kubernetes_version
        return NodeClassReadiness(ready=True, status=status)

    def instance_types(self, node_class: NodeClass) -> Sequence[InstanceType]:
        spec = _spec(node_class)
        region = self.settings.location
        max_pods = spec.max_pods or self.settings.default_max_pods
        return skus.instance_types(
            self.region_skus(),
            spec,
            region,
            max_pods=max_pods,
            vm_memory_overhead=self.settings.vm_memory_overhead,
        )

    def offerings(
        self, node_class: NodeClass, instance_types: Sequence[InstanceType]
    ) -> Mapping[str, Sequence[Offering]]:
        pricing = self.pricing()
        now = self.clock.now()
        by_name = {s.name: s for s in self.region_skus()}
        result: dict[str, list[Offering]] = {}
        for it in instance_types:
            sku = by_name.get(it.name)
            if sku is None:
                continue
            capacity_types = [CAPACITY_TYPE_ON_DEMAND]
            if sku.flag("LowPriorityCapable"):
                capacity_types.append(CAPACITY_TYPE_SPOT)
            offers: list[Offering] = []
            for zone in skus.zone_values(sku, self.settings.location):
                scope = "regional" if zone == L.REGIONAL_ZONE else "zonal"
                for capacity_type in capacity_types:
                    until = self._unavailable.get((it.name, zone, capacity_type))
                    offers.append(
                        Offering(
                            zone=zone,
                            capacity_type=capacity_type,
                            price=pricing.price(it.name, capacity_type),
                            available=until is None or until <= now,
                            labels={L.PLACEMENT_SCOPE: scope},
                            # Regional VMs come after zonal ones of the same price.
                            fallback=zone == L.REGIONAL_ZONE,
                        )
                    )
            result[it.name] = offers
        return result

    # -- instances ------------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> Instance | LaunchResult:
        compute, network = self._clients()
        spec = _spec(request.node_class)
        name = resource_name(request.node_claim.name)
        existing = self._get_vm(name)
        if existing is not None and _state(existing) not in ("terminating", "failed"):
            found_key = (existing.tags or {}).get(L.TAG_NODECLAIM_UID)
            if found_key in (None, request.idempotency_key):
                log.info("azure: %s already exists; adopting it", name)
                return replace(self._instance(existing), annotations=self.drift_annotations(spec))
            raise LaunchError(
                "NameInUse",
                f"VM {name} belongs to another NodeClaim (uid {found_key}); "
                "it must be deleted before this NodeClaim can launch",
            )
        node_images = self.node_images(spec)
        if not node_images:
            raise NodeClassNotReadyError(
                f"AKSNodeClass {request.node_class.name}: no image of imageFamily "
                f"{spec.image_family} resolves"
            )
        choice, exhausted = self._choose(request, node_images)
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
        image = self._bootable(node_images, instance_type.name) or node_images[0]
        attempt = Attempt(instance_type.name, offering.zone, offering.capacity_type)
        tags = self._tags(request, spec)
        subnet = spec.vnet_subnet_id or self.settings.vnet_subnet_id
        sku = self._sku(instance_type.name)
        accelerated = bool(sku and sku.flag("AcceleratedNetworkingEnabled"))
        # Built before anything is created: a bootstrap that cannot be built leaves nothing.
        custom_data = self._custom_data(
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
            else:
                self._creates[name] = _Create(poller, attempt, request)
                vm = self._get_vm(name)
                if vm is None:
                    raise TemporaryProviderError(f"azure: VM {name} vanished while creating")
        except HttpResponseError as error:
            failure = self._classify(error, attempt, request)
            self._cleanup(name)
            raise failure from None
        except (ClientAuthenticationError, ServiceRequestError) as error:
            raise TemporaryProviderError(f"azure: cannot reach ARM: {_message(error)}") from None
        log.info(
            "azure: launched %s (%s, zone %s, %s)",
            name,
            instance_type.name,
            offering.zone,
            offering.capacity_type,
        )
        instance = replace(self._instance(vm), annotations=self.drift_annotations(spec))
        return LaunchResult(instance, tuple(exhausted), ttl) if exhausted else instance

    def _choose(
        self, request: LaunchRequest, node_images: list[NodeImage]
    ) -> tuple[tuple[InstanceType, Offering] | None, dict[tuple[str, str, str], timedelta]]:
        """The cheapest offering to launch, and the compatible offerings skipped because they
        recently had no capacity (with how long they stay unavailable)."""
        now = self.clock.now()
        best: tuple[tuple[float, bool, str, str], InstanceType, Offering] | None = None
        exhausted: dict[tuple[str, str, str], timedelta] = {}
        for it in request.instance_types:
            if request.requirements.intersects(it.requirements):
                continue
            if self._bootable(node_images, it.name) is None:
                continue  # no image of the family boots this size (e.g. Gen1-only, arm64)
            for offering in it.offerings:
                if not offering.available or not offering.matches(request.requirements):
                    continue
                triple = (it.name, offering.zone, offering.capacity_type)
                until = self._unavailable.get(triple)
                if until is not None and until > now:
                    exhausted[triple] = until - now
                    continue
                key = (offering.price, offering.zone == L.REGIONAL_ZONE, offering.zone, it.name)
                if best is None or key < best[0]:
                    best = (key, it, offering)
        return (None if best is None else (best[1], best[2])), exhausted

    def _tags(self, request: LaunchRequest, spec: AKSNodeClassSpec) -> dict[str, str]:
        node_pool = request.node_claim.metadata.labels.get(NODEPOOL_LABEL, "")
        tags = {k.replace("/", "_"): v for k, v in spec.tags.items()}
        tags.update(
            {
                L.TAG_CLUSTER: self.settings.cluster_name,
                L.TAG_BILLING: "linux",
                L.TAG_NODEPOOL: node_pool,
                L.TAG_NODECLAIM: request.node_claim.name,
                L.TAG_NODECLAIM_UID: request.idempotency_key,
                L.TAG_NODECLASS: request.node_class.name,
            }
        )
        return tags

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

    def _read_option_file(self, path: str, option: str) -> str:
        if not path:
            return ""
        try:
            with open(path, encoding="utf-8") as file:
                return file.read().strip()
        except OSError as error:
            raise NodeClassNotReadyError(
                f"azure.{option}: cannot read {path}: {error.strerror}"
            ) from None

    def _custom_data(
        self,
        name: str,
        *,
        request: LaunchRequest,
        spec: AKSNodeClassSpec,
        instance_type: InstanceType,
        offering: Offering,
        sku: skus.Sku | None,
    ) -> str:
        """The node bootstrap (base64) for this VM: cluster settings from the options, kubelet
        flags from the NodeClass, the NodeClaim's labels and taints."""
        settings = self.settings
        cluster = bootstrap.ClusterBootstrap(
            cluster_name=settings.cluster_name,
            endpoint=settings.cluster_endpoint,
            ca_pem=self._read_option_file(settings.cluster_ca_file, "cluster-ca-file"),
            bootstrap_token=self._read_option_file(
                settings.bootstrap_token_file, "bootstrap-token-file"
            ),
            kubernetes_version=settings.kubernetes_version,
            network_plugin=settings.network_plugin,
            dns_service_ip=settings.dns_service_ip,
            subscription_id=settings.subscription_id,
            resource_group=settings.resource_group,
            location=settings.location,
            tenant_id=settings.tenant_id,
            subnet_id=spec.vnet_subnet_id or settings.vnet_subnet_id,
        )
        claim = request.node_claim
        labels: dict[str, str] = {}
        if sku is not None:
            labels.update(skus.sku_labels(sku, spec))
        labels.update(
            {
                INSTANCE_TYPE_LABEL: instance_type.name,
                ZONE_LABEL: offering.zone,
                CAPACITY_TYPE_LABEL: offering.capacity_type,
                REGION_LABEL: settings.location,
                **L.aks_node_labels(
                    settings.resource_group,
                    settings.network_plugin,
                    spec.vnet_subnet_id or settings.vnet_subnet_id,
                ),
            }
        )
        labels.update(claim.metadata.labels)
        node = bootstrap.NodeBootstrap(
            node_name=name,
            labels=labels,
            taints=bootstrap.register_taints(claim.spec.taints, claim.spec.startup_taints),
            max_pods=spec.max_pods or settings.default_max_pods,
            kube_reserved_cpu_millis=skus.kube_reserved_cpu_millis(sku.cpus) if sku else 0,
            kube_reserved_memory_mib=skus.kube_reserved_memory_mib(sku.memory_gib) if sku else 0,
            kubelet=spec.kubelet,
            arch=skus.arch(sku) if sku else "amd64",
        )
        return bootstrap.custom_data(cluster, node)

    def _classify(
        self, error: HttpResponseError, attempt: Attempt, request: LaunchRequest
    ) -> ProviderError:
        code = (error.error.code if error.error is not None else "") or ""
        message = (error.error.message if error.error is not None else "") or _message(error)
        if not code and error.status_code == 429:
            code = "TooManyRequests"
        by_name = {s.name: s for s in self.region_skus()}

        def family_of(name: str) -> tuple[str, int] | None:
            sku = by_name.get(name)
            return None if sku is None else (sku.family, sku.cpus)

        def zones_of(name: str) -> list[str]:
            sku = by_name.get(name)
            return [] if sku is None else skus.zone_values(sku, self.settings.location)

        failure = classify(
            code,
            message,
            attempt,
            candidates=[t.name for t in request.instance_types],
            family_of=family_of,
            zones_of=zones_of,
        )
        if isinstance(failure, InsufficientCapacityError):
            until = self.clock.now() + failure.ttl
            for offering in failure.offerings:
                self._unavailable[offering] = until
        log.warning("azure: launch of %s failed: %s", attempt.instance_type, failure)
        return failure

    def _cleanup(self, name: str) -> None:
        """Remove what a failed launch left: the VM (when ARM kept it) and the NIC."""
        compute, network = self._clients()
        group = self.settings.resource_group
        try:
            if self._get_vm(name) is not None:
                compute.virtual_machines.begin_delete(group, name, force_deletion=True).result()
            network.network_interfaces.begin_delete(group, name).result()
        except HttpResponseError as error:
            log.warning(
                "azure: cleaning up %s failed (garbage collection retries): %s",
                name,
                _message(error),
            )

    def _get_vm(self, name: str) -> Any | None:
        compute, _ = self._clients()
        try:
            with _azure_errors(f"reading VM {name}"):
                return compute.virtual_machines.get(self.settings.resource_group, name)
        except ResourceNotFoundError:
            return None

    def _instance(self, vm: Any) -> Instance:
        tags: dict[str, str] = dict(vm.tags or {})
        # The SDK gives known sizes as a str enum; the name is its value.
        raw_size = vm.hardware_profile.vm_size if vm.hardware_profile else ""
        size = str(getattr(raw_size, "value", raw_size) or "")
        zones = list(vm.zones or [])
        zone = f"{self.settings.location}-{zones[0]}" if zones else L.REGIONAL_ZONE
        capacity_type = (
            CAPACITY_TYPE_SPOT if (vm.priority or "") == "Spot" else CAPACITY_TYPE_ON_DEMAND
        )
        created = vm.time_created or self.clock.now()
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        labels = {
            ZONE_LABEL: zone,
            CAPACITY_TYPE_LABEL: capacity_type,
            REGION_LABEL: self.settings.location,
            L.PLACEMENT_SCOPE: "regional" if zone == L.REGIONAL_ZONE else "zonal",
            L.AKS_SCALESET_PRIORITY: "spot" if capacity_type == CAPACITY_TYPE_SPOT else "regular",
            # The subnet is the NodeClass's, unknown here: network labels come with the bootstrap.
            **L.aks_node_labels(self.settings.resource_group, self.settings.network_plugin),
        }
        capacity: dict[str, int] = {}
        allocatable: dict[str, int] = {}
        sku = self._sku(size)
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
            price=self.pricing().price(size, capacity_type),
            created_at=created,
            labels=labels,
            capacity=capacity,
            allocatable=allocatable,
            image_id=image,
            state=_state(vm),
            # The VM's computer name is the node's name (aks-<nodeclaim>), as AKS nodes have.
            node_name=vm.name or "",
        )

    def get(self, provider_id: str) -> Instance:
        name = _vm_name(provider_id)
        vm = self._get_vm(name)
        if vm is None:
            raise InstanceNotFoundError(f"VM {name} does not exist")
        return self._instance(vm)

    def list_instances(self) -> Sequence[Instance]:
        if self.settings.missing():
            # Not set up for Azure (e.g. a KWOK-only simulation): it runs no instances.
            return []
        compute, _ = self._clients()
        found: list[Instance] = []
        with _azure_errors("listing VMs"):
            for vm in compute.virtual_machines.list(self.settings.resource_group):
                tags = vm.tags or {}
                if tags.get(L.TAG_CLUSTER) != self.settings.cluster_name:
                    continue
                if L.TAG_NODEPOOL not in tags:
                    continue
                found.append(self._instance(vm))
        return found

    def delete(self, provider_id: str) -> None:
        """Force-delete the VM, then its NIC; InstanceNotFoundError once both are gone."""
        compute, network = self._clients()
        name = _vm_name(provider_id)
        group = self.settings.resource_group
        vm = self._get_vm(name)
        with _azure_errors(f"deleting {name}"):
            if vm is not None:
                if _state(vm) != "terminating":
                    self._deletes[name] = compute.virtual_machines.begin_delete(
                        group, name, force_deletion=True
                    )
                return
            try:
                nic = network.network_interfaces.get(group, name)
            except ResourceNotFoundError:
                self._deletes.pop(name, None)
                raise InstanceNotFoundError(f"VM {name} does not exist") from None
            if (nic.provisioning_state or "") != "Deleting":
                self._deletes[name] = network.network_interfaces.begin_delete(group, name)

    def node_labels(self, node_claim: NodeClaim, instance: Instance) -> Mapping[str, str]:
        if not instance.provider_id.startswith(L.PROVIDER_ID_PREFIX):
            return {}
        return {
            k: v
            for k, v in instance.labels.items()
            if k.startswith((L.AKS_GROUP + "/", L.GROUP + "/"))
        }

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    def is_drifted(self, node_claim: NodeClaim, node_class: NodeClass) -> str | None:
        """Karpenter Azure's drift checks: the NodeClass spec changed since launch (the hash
        annotation, same hash version), the node's image is not one the NodeClass resolves to
        now (a newer node image was published), or the Node's kubelet runs another Kubernetes
        version than the cluster's (``azure.kubernetes-version``)."""
        spec = _spec(node_class)
        annotations = node_claim.metadata.annotations
        launched_hash = annotations.get(HASH_ANNOTATION)
        if (
            launched_hash is not None
            and annotations.get(HASH_VERSION_ANNOTATION) == HASH_VERSION
            and launched_hash != spec_hash(spec)
        ):
            return NODECLASS_DRIFT
        image = node_claim.status.image_id
        if image and not self.settings.missing():
            try:
                current = self.node_images(spec)
            except (TemporaryProviderError, NodeClassNotReadyError):
                return None
            if current and image.lower() not in {i.id.lower() for i in current}:
                return IMAGE_DRIFT
        wanted = self.settings.kubernetes_version
        running = self._kubelet_version(node_claim)
        if wanted and running and _release(running) != _release(wanted):
            return K8S_VERSION_DRIFT
        return None

    def _kubelet_version(self, node_claim: NodeClaim) -> str | None:
        """The kubelet version the claim's Node reports (``status.nodeInfo``), if known."""
        name = node_claim.status.node_name
        if self._cluster is None or not name:
            return None
        node = self._cluster.get(Node, name)
        if node is None:
            return None
        info = (node.status.model_extra or {}).get("nodeInfo") or {}
        version = info.get("kubeletVersion") if isinstance(info, dict) else None
        return version if isinstance(version, str) and version else None

    def restamp_hashes(self) -> list[str]:
        """Re-stamp NodeClaims hashed under another version (Karpenter Azure's ``v3`` on
        takeover) with the class's current hash, so later class changes drift them."""
        if self._cluster is None:
            return []
        return restamp_hashes(
            self._cluster,
            AKSNodeClass,
            HASH_VERSION_ANNOTATION,
            HASH_VERSION,
            lambda node_class: self.drift_annotations(node_class.spec),
        )

    def drift_annotations(self, spec: AKSNodeClassSpec) -> dict[str, str]:
        """The annotations written on a NodeClaim at launch, that drift compares against."""
        return {HASH_ANNOTATION: spec_hash(spec), HASH_VERSION_ANNOTATION: HASH_VERSION}

    def _follow_creates(self) -> None:
        """Finish VM creates that outlasted launch: a failure is classified (capacity errors
        make offerings unavailable) and what it left is deleted, so Get reports the instance
        gone and the core replaces its NodeClaim."""
        for name, create in list(self._creates.items()):
            if not create.poller.done():
                continue
            self._creates.pop(name, None)
            try:
                create.poller.result()
            except HttpResponseError as error:
                self._classify(error, create.attempt, create.request)
                self._cleanup(name)

    def collect_orphan_nics(self, now: datetime) -> list[str]:
        """Delete NICs this cluster tagged that have no VM (a crash between creating the NIC
        and the VM, or a NIC whose delete failed), once they have been seen without a VM for
        ``azure.nic-gc-grace``; NICs of launches in flight are left alone. Returns the NICs
        whose delete was started."""
        if self.settings.missing():
            return []
        compute, network = self._clients()
        group = self.settings.resource_group
        with _azure_errors("listing NICs and VMs for garbage collection"):
            vms = {(vm.name or "").lower() for vm in compute.virtual_machines.list(group)}
            nics = [
                nic
                for nic in network.network_interfaces.list(group)
                if (nic.tags or {}).get(L.TAG_CLUSTER) == self.settings.cluster_name
                and L.TAG_NODEPOOL in (nic.tags or {})
            ]
        orphans = {
            (nic.name or "").lower(): nic
            for nic in nics
            if (nic.name or "").lower() not in vms
            and nic.name not in self._creates
            and (nic.provisioning_state or "") != "Deleting"
        }
        # Forget NICs that got a VM or went away meanwhile.
        self._orphan_nics = {k: v for k, v in self._orphan_nics.items() if k in orphans}
        grace = timedelta(seconds=self.settings.nic_gc_grace)
        started: list[str] = []
        for key, nic in sorted(orphans.items()):
            first_seen = self._orphan_nics.setdefault(key, now)
            if now - first_seen < grace:
                continue
            name = nic.name or key
            try:
                with _azure_errors(f"deleting orphan NIC {name}"):
                    self._deletes[name] = network.network_interfaces.begin_delete(group, name)
            except (ResourceNotFoundError, TemporaryProviderError) as error:
                log.warning("azure: orphan NIC %s not deleted (retried later): %s", name, error)
                continue
            log.info("azure: deleting orphan NIC %s (no VM for %s)", name, now - first_seen)
            self._orphan_nics.pop(key, None)
            started.append(name)
        return started

    def reconcile(self, now: datetime) -> timedelta | None:
        self._follow_creates()
        if self._nic_gc_at is None or now - self._nic_gc_at >= NIC_GC_PERIOD:
            self._nic_gc_at = now
            try:
                self.collect_orphan_nics(now)
            except (TemporaryProviderError, NodeClassNotReadyError) as error:
                log.warning("azure: orphan NIC garbage collection failed: %s", error)
        for name, poller in list(self._deletes.items()):
            if poller.done():
                self._deletes.pop(name, None)
        self._unavailable = {k: v for k, v in self._unavailable.items() if v > now}
        if self._pricing is not None and self._pricing.due(now):
            self._pricing.refresh(now)
        self.restamp_hashes()
        return None


def _spec(node_class: NodeClass) -> AKSNodeClassSpec:
    spec = getattr(node_class, "spec", None)
    if not isinstance(spec, AKSNodeClassSpec):
        raise NodeClassNotReadyError(
            f"NodeClass {node_class.name!r} is a {node_class.kind}, not an AKSNodeClass"
        )
    return spec


def _release(version: str) -> tuple[int, ...]:
    """``v1.30.3`` / ``1.30.3-hotfix.1`` / ``v1.30.3+aks`` as (1, 30, 3)."""
    core = version.strip().removeprefix("v").split("+")[0].split("-")[0]
    try:
        return tuple(int(part) for part in core.split("."))
    except ValueError:
        return ()


def _published(version: Any) -> datetime:
    properties = getattr(version, "properties", None)
    published = getattr(properties, "published_date", None)
    if not isinstance(published, datetime):
        return datetime.min.replace(tzinfo=UTC)
    return published if published.tzinfo else published.replace(tzinfo=UTC)


def _vm_name(provider_id: str) -> str:
    match = _VM_ID.match(provider_id)
    if match is None:
        raise InstanceNotFoundError(f"{provider_id!r} is not an Azure VM provider ID")
    return match.group(3)


def _state(vm: Any) -> str:
    state = (vm.provisioning_state or "").lower()
    if state == "deleting":
        return "terminating"
    if state == "failed":
        return "failed"
    if state in ("creating", "updating", ""):
        return "pending"
    return "running"


def _message(error: BaseException) -> str:
    text = getattr(error, "message", None) or str(error)
    return str(text).splitlines()[0] if text else type(error).__name__


@contextmanager
def _azure_errors(what: str) -> Iterator[None]:
    """Turns transport, auth and unexpected ARM failures into TemporaryProviderError."""
    try:
        yield
    except (ResourceNotFoundError, ProviderError):
        raise
    except ClientAuthenticationError as error:
        raise TemporaryProviderError(
            f"azure: authentication failed {what}: {_message(error)}"
        ) from None
    except ServiceRequestError as error:
        raise TemporaryProviderError(f"azure: cannot reach ARM {what}: {_message(error)}") from None
    except HttpResponseError as error:
        code = error.error.code if error.error is not None else error.status_code
        raise TemporaryProviderError(f"azure: {what}: {code}: {_message(error)}") from None
