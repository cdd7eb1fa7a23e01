"""The Azure provider: the hooks of the contract over one-concept parts, as Karpenter Azure's
``cloudprovider`` sits over its providers (``instancetype``: SKUs; ``offering``, ``pricing``,
``images``, ``launchtemplate``: tags and bootstrap; ``instance``: NIC and VM; ``aksmachine``:
AKS machines (the machine API provision modes); ``drift``,
``garbagecollection``: orphan NICs).

Nothing talks to Azure before the first hook that needs it; clients and credentials are built
then, so the plugin loads without credentials or network.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any

from azure.core.exceptions import HttpResponseError

from nodewright.plugin import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    DEFAULT_RECONCILE_PERIOD,
    ClockLike,
    Instance,
    InstanceType,
    LaunchRequest,
    LaunchResult,
    NodeClaim,
    NodeClass,
    NodeClassKind,
    NodeClassNotReadyError,
    NodeClassReadiness,
    Offering,
    Poll,
    ProviderCluster,
    ProviderContext,
    ProviderInfo,
    RepairPolicy,
    TemporaryProviderError,
)
from nodewright_azure import auth, images
from nodewright_azure import labels as L
from nodewright_azure.aksmachine import AKSMachineProvider, machine_of_vm
from nodewright_azure.clients import AzureClients, CredentialFactory
from nodewright_azure.crd import aks_node_class_crd
from nodewright_azure.drift import drift_reason, restamp
from nodewright_azure.garbagecollection import NIC_GC_PERIOD, OrphanNICCollector
from nodewright_azure.images import ImageProvider
from nodewright_azure.instance import InstanceProvider, vm_name
from nodewright_azure.instancetype import InstanceTypeProvider
from nodewright_azure.launchtemplate import LaunchTemplateProvider
from nodewright_azure.nodebootstrapping import NodeBootstrappingClient
from nodewright_azure.nodeclass import API_VERSION_V1ALPHA2, AKSNodeClass, AKSNodeClassSpec
from nodewright_azure.offering import OfferingProvider
from nodewright_azure.offline.catalog import load_catalog
from nodewright_azure.offline.cloud import OfflineAzure
from nodewright_azure.options import (
    BOOTSTRAPPING_CLIENT,
    Settings,
    SettingsError,
    parse_settings,
)
from nodewright_azure.pricing import REFRESH_PERIOD, PricingProvider
from nodewright_azure.unavailable import UnavailableOfferings

log = logging.getLogger(__name__)

NAME = "azure"
INSTALL_HINT = 'pip install "nodewright[azure]"'


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


#: Karpenter Azure's repair policies: the kubelet's Ready, AKS's node health agent, and a
#: Spot VM told it is about to be evicted (replaced at once, not after Ready's 10 minutes).
REPAIR_POLICIES = (
    RepairPolicy("Ready", "False", timedelta(minutes=10)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=10)),
    RepairPolicy("kubernetes.azure.com/NodeHealthy", "False", timedelta(0)),
    RepairPolicy("PreemptionScheduled", "True", timedelta(0)),
)


def node_class_spec(node_class: NodeClass) -> AKSNodeClassSpec:
    spec = getattr(node_class, "spec", None)
    if not isinstance(spec, AKSNodeClassSpec):
        raise NodeClassNotReadyError(
            f"NodeClass {node_class.name!r} is a {node_class.kind}, not an AKSNodeClass"
        )
    return spec


class AzureProvider:
    """One provider object: settings and the parts built over them."""

    def __init__(self, credential_factory: CredentialFactory | None = None) -> None:
        self._credential_factory = credential_factory or auth.credential
        self.settings = Settings()
        self._clock: ClockLike | None = None
        self._cluster: ProviderCluster | None = None
        #: The in-process cloud under ``azure.offline=LOCATION`` (None when online).
        self.offline: OfflineAzure | None = None
        self._assemble()

    def _assemble(self) -> None:
        """Fresh parts for the current settings: nothing learnt before is kept."""
        settings = self.settings
        now = self.now
        #: Offline, the sizes whose on-demand price is the bundled list price.
        self._listed = (
            frozenset() if self.offline is None else self.offline.catalog.listed(settings.location)
        )
        self.clients = AzureClients(settings, self._credential_factory, self.offline)
        self.unavailable = UnavailableOfferings()
        self.instance_type_provider = InstanceTypeProvider(settings, self.clients, now)
        self.pricing = PricingProvider(settings, self.clients.transport, now)
        self.images = ImageProvider(settings, self.clients, self.instance_type_provider, now)
        self.offering_provider = OfferingProvider(
            location=settings.location,
            instance_types=self.instance_type_provider,
            pricing=self.pricing,
            unavailable=self.unavailable,
            now=now,
            price_modelled=self._price_modelled,
        )
        bootstrapping = None
        if settings.provision_mode == BOOTSTRAPPING_CLIENT:
            bootstrapping = NodeBootstrappingClient(settings, self.clients)
        self.launch_templates = LaunchTemplateProvider(settings, bootstrapping)
        self.instances = InstanceProvider(
            settings=settings,
            clients=self.clients,
            instance_types=self.instance_type_provider,
            images=self.images,
            pricing=self.pricing,
            launch_templates=self.launch_templates,
            unavailable=self.unavailable,
            now=now,
        )
        self.nic_gc = OrphanNICCollector(settings, self.clients, self.instances)
        self.machines = AKSMachineProvider(self.instances, now)

    # -- set-up -------------------------------------------------------------------------------

    def configure(self, context: ProviderContext) -> None:
        """Parse options; no Azure call and no credential is touched here."""
        self.settings = parse_settings(context.options, context.cluster_name)
        self._clock = context.clock
        self._cluster = context.cluster
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
        self._assemble()

    def report_notes(self) -> list[str]:
        """Offline, where the figures come from and which prices are approximate."""
        if self.offline is None:
            return []
        location = self.settings.location
        listed = self._listed
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
            self.clients.credential()
        except SettingsError as error:
            return str(error)
        return None

    def close(self) -> None:
        """Let running operations finish (briefly) and close the SDK clients' connections."""
        creates = [c.poller for c in self.instances.creates.values()]
        for poller in [*self.instances.deletes.values(), *creates]:
            with suppress(HttpResponseError):
                poller.wait(timeout=5)
        self.clients.close()
        self.pricing.close()

    @property
    def clock(self) -> ClockLike:
        if self._clock is None:
            raise RuntimeError("the azure provider is not configured (nodewright_configure)")
        return self._clock

    def now(self) -> datetime:
        return self.clock.now()

    # -- NodeClasses and catalog --------------------------------------------------------------

    def node_class_status(self, node_class: NodeClass) -> NodeClassReadiness:
        spec = node_class_spec(node_class)
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
            found = self.images.node_images(spec)
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
        return self.instance_type_provider.list(node_class_spec(node_class))

    def offerings(
        self, node_class: NodeClass, instance_types: Sequence[InstanceType]
    ) -> Mapping[str, Sequence[Offering]]:
        return self.offering_provider.offerings(instance_types)

    def _price_modelled(self, size: str, capacity_type: str) -> bool:
        """Offline, every spot price is modelled, and the on-demand prices of unlisted sizes."""
        if self.offline is None:
            return False
        if capacity_type == CAPACITY_TYPE_SPOT:
            return True
        return capacity_type == CAPACITY_TYPE_ON_DEMAND and size not in self._listed

    # -- instances ------------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> Instance | LaunchResult:
        self.clients.clients()  # not configured: NodeClassNotReadyError before the spec check
        spec = node_class_spec(request.node_class)
        if self.settings.machine_api:
            return self.machines.launch(request, spec)
        return self.instances.launch(request, spec)

    def _is_machine(self, provider_id: str) -> bool:
        """Whether the instance is an AKS machine this provider manages (by its VM's name)."""
        if not self.settings.aks_machines_visible:
            return False
        pool = self.settings.aks_machines_pool_name
        return machine_of_vm(pool, vm_name(provider_id)) is not None

    def get(self, provider_id: str) -> Instance:
        if self._is_machine(provider_id):
            return self.machines.get(provider_id)
        return self.instances.get(provider_id)

    def list_instances(self) -> Sequence[Instance]:
        found = list(self.instances.list())
        if self.settings.aks_machines_visible:
            # AKS tags a machine's VM too: list it once, as the machine.
            found = [i for i in found if not self._is_machine(i.provider_id)]
            found += self.machines.list()
        return found

    def delete(self, provider_id: str) -> None:
        if self._is_machine(provider_id):
            self.machines.delete(provider_id)
        else:
            self.instances.delete(provider_id)

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
        """See :mod:`nodewright_azure.drift`."""
        return drift_reason(
            node_claim, node_class_spec(node_class), self.settings, self.images, self._cluster
        )

    def restamp_hashes(self) -> list[str]:
        """Re-stamp NodeClaims hashed under another version (see :func:`drift.restamp`)."""
        if self._cluster is None:
            return []
        return restamp(self._cluster)

    # -- background work ------------------------------------------------------------------------

    def reconcile(self, now: datetime) -> timedelta | None:
        self.instances.follow_creates()
        if self.settings.machine_api:
            self.machines.follow_creates()
        self.nic_gc.reconcile(now)
        self.instances.forget_finished_deletes()
        self.unavailable.expire(now)
        self.pricing.refresh_if_due(now)
        self.restamp_hashes()
        if self.instances.creates or self.instances.deletes or self.machines.creating:
            return None  # operations in flight: follow them every period
        if self.machines.batches:
            return None  # a batch of machine creates waits to be sent
        # Otherwise only refreshes, collections and capacity errors expiring fall due by time.
        pricing = self.pricing.current
        dues = [
            *self.unavailable.until.values(),
            *([pricing.refreshed_at + REFRESH_PERIOD] if pricing and pricing.refreshed_at else []),
            *(
                [self.nic_gc.last_run + NIC_GC_PERIOD]
                if self.nic_gc.last_run and not self.settings.missing()
                else []
            ),
        ]
        deadline = max(min(dues) - now, timedelta(0)) if dues else None
        return Poll(DEFAULT_RECONCILE_PERIOD, deadline)
