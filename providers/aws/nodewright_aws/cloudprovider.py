"""The AWS provider: the hooks of the contract over one-concept parts, as Karpenter's
``cloudprovider`` sits over its providers (``discovery``: subnets, security groups, AMIs;
``instancetype``, ``offering``, ``pricing``, ``launchtemplate``, ``instance``, ``drift``,
``interruption``). Every AWS call happens lazily, inside a hook, never in ``configure``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.exceptions

from nodewright.plugin import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    ClockLike,
    Instance,
    InstanceType,
    LaunchRequest,
    LaunchResult,
    Node,
    NodeClaim,
    NodeClass,
    NodeClassKind,
    NodeClassReadiness,
    Offering,
    Poll,
    ProviderContext,
    ProviderError,
    ProviderInfo,
    RepairPolicy,
    TemporaryProviderError,
)
from nodewright_aws import labels as L
from nodewright_aws.capacityreservation import capacity_reservations
from nodewright_aws.clients import AWSClients, MissingConfigurationError, error_text
from nodewright_aws.cluster import EKSCluster
from nodewright_aws.crd import ec2_node_class_crd
from nodewright_aws.discovery import NodeClassDiscovery
from nodewright_aws.drift import drift_reason, restamp
from nodewright_aws.instance import InstanceProvider
from nodewright_aws.instancetype import InstanceTypeProvider
from nodewright_aws.interruption import InterruptionHandler
from nodewright_aws.launchtemplate import LAUNCH_TEMPLATE_TTL, LaunchTemplateProvider
from nodewright_aws.nodeclass import EC2NodeClass
from nodewright_aws.offering import OfferingProvider
from nodewright_aws.offline.catalog import load_catalog
from nodewright_aws.offline.cloud import OfflineAWS
from nodewright_aws.options import Settings, parse_settings
from nodewright_aws.placementgroup import (
    LOOKUP_ERRORS,
    PlacementGroupProvider,
    registered_partition,
    selector_text,
)
from nodewright_aws.pricing import PricingProvider
from nodewright_aws.unavailable import UnavailableOfferings
from nodewright_aws.validation import DryRunValidation
from nodewright_aws.zonalshift import ZonalShiftProvider

log = logging.getLogger(__name__)

NAME = "aws"
INSTALL_HINT = 'pip install "nodewright[aws]"'
#: How often ``reconcile`` wants to run (the interruption queue's poll period).
INTERRUPTION_PERIOD = timedelta(seconds=10)


def provider_info() -> ProviderInfo:
    return ProviderInfo(
        name=NAME,
        node_classes=(
            NodeClassKind(
                group=L.GROUP, kind=EC2NodeClass.KIND, model=EC2NodeClass, crd=ec2_node_class_crd
            ),
        ),
        restricted_label_domains=frozenset({L.GROUP}),
        well_known_labels=L.WELL_KNOWN_LABELS,
        install_hint=INSTALL_HINT,
    )


#: Karpenter AWS's repair policies: the kubelet's Ready, and the conditions the EKS node
#: monitoring agent posts.
REPAIR_POLICIES = (
    RepairPolicy("Ready", "False", timedelta(minutes=30)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=30)),
    RepairPolicy("AcceleratedHardwareReady", "False", timedelta(minutes=10)),
    RepairPolicy("StorageReady", "False", timedelta(minutes=30)),
    RepairPolicy("NetworkingReady", "False", timedelta(minutes=30)),
    RepairPolicy("KernelReady", "False", timedelta(minutes=30)),
    RepairPolicy("ContainerRuntimeReady", "False", timedelta(minutes=30)),
)


class AWSProvider:
    def __init__(self, session_factory: Callable[[str], Any] | None = None) -> None:
        self._session_factory = session_factory
        self.settings = Settings()
        self.clock: ClockLike | None = None
        self.context: ProviderContext | None = None
        self.cluster_name = "nodewright"
        #: The in-process account under ``aws.offline=REGION`` (None when online).
        self.offline: OfflineAWS | None = None
        #: (NodeClass, its status's subnet IDs) the offline account has learnt.
        self._learned: set[tuple[str, tuple[str, ...]]] = set()
        self._assemble(AWSClients(self.settings, session_factory))

    def _assemble(self, clients: AWSClients) -> None:
        """Fresh parts over ``clients``: what was learnt from AWS is dropped, as a new
        configuration may name another account."""
        self.clients = clients
        settings = self.settings
        now = self.now
        self.cluster = EKSCluster(clients, settings, self.cluster_name)
        self.discovery = NodeClassDiscovery(
            clients,
            self.cluster,
            settings.default_instance_profile,
            now,
            subnet_refresh=settings.subnet_refresh_interval,
            ami_refresh=settings.ami_refresh_interval,
        )
        self.unavailable = UnavailableOfferings()
        self.placement_groups = PlacementGroupProvider(clients, now)
        self.zonal_shifts = ZonalShiftProvider(
            clients, self.cluster, now, enabled=settings.enable_zonal_shift
        )
        self.instance_type_provider = InstanceTypeProvider(
            clients, settings, self.discovery.zone_ids, now, self.placement_groups.lookup
        )
        self.pricing = PricingProvider(clients, now, self.instance_type_provider.spot_price_types)
        self.offering_provider = OfferingProvider(
            instance_types=self.instance_type_provider,
            pricing=self.pricing,
            discovery=self.discovery,
            unavailable=self.unavailable,
            reservations=lambda node_class: capacity_reservations(clients, node_class),
            now=now,
            placement_group=self.placement_groups.lookup,
            shifted_zones=self.zonal_shifts.shifted,
            price_modelled=self._price_modelled,
        )
        self.launch_templates = LaunchTemplateProvider(clients, settings, self.cluster, now)
        self.validation = DryRunValidation(
            clients, lambda: self.cluster_name, now, disabled=settings.disable_dry_run
        )
        self.instances = InstanceProvider(
            clients=clients,
            settings=settings,
            cluster_name=self.cluster_name,
            discovery=self.discovery,
            instance_types=self.instance_type_provider,
            pricing=self.pricing,
            launch_templates=self.launch_templates,
            unavailable=self.unavailable,
            now=now,
            placement_groups=self.placement_groups,
            node_classes=self.node_class_named,
        )
        self.interruption = InterruptionHandler(
            clients, settings.interruption_queue or "", self.context, self.unavailable, now
        )

    # -- set-up ------------------------------------------------------------------------

    def configure(self, context: ProviderContext) -> None:
        self.settings = parse_settings(context.options)
        self.offline = None
        self._learned = set()
        self.context = context
        self.clock = context.clock
        self.cluster_name = self.settings.cluster_name or context.cluster_name
        if self.settings.offline:
            # The offline account's clients ignore botocore's configuration: none is made.
            clients = AWSClients(self.settings, self._offline_sessions(), client_config=None)
        else:
            clients = AWSClients(self.settings, self._session_factory)
        self._assemble(clients)

    def _offline_sessions(self) -> Callable[[str], Any]:
        """Sessions of an in-process account answering from the bundled catalog."""
        assert self.settings.region is not None
        self.offline = OfflineAWS(
            load_catalog(), self.settings.region, self.now, self.settings.kubernetes_version
        )
        self.offline.taken = self._cluster_has
        log.info(
            "aws: offline in %s; instance types and offerings: %s; prices: %s",
            self.settings.region,
            self.offline.catalog.sources["instance_types"],
            self.offline.catalog.sources["prices"],
        )
        return self.offline.session

    def _cluster_has(self, provider_id: str, node_name: str) -> bool:
        """Whether a Node or NodeClaim of the cluster already has this provider ID, or a Node
        this name (offline, a snapshot's nodes are instances the account never launched)."""
        cluster = self.context.cluster if self.context is not None else None
        if cluster is None:
            return False
        state = cluster.state
        return (
            state.node_by_provider_id(provider_id) is not None
            or state.claim_by_provider_id(provider_id) is not None
            or cluster.get(Node, node_name) is not None
        )

    def _offline_subnets(self, node_class: NodeClass) -> None:
        """Offline, the subnets an EC2NodeClass's status lists (what the real cluster resolved,
        in a snapshot) are the account's: the class resolves to them, so its nodes launch in
        their zones only, not in every zone of the region."""
        if self.offline is None or not isinstance(node_class, EC2NodeClass):
            return
        subnets = node_class.status.subnets
        key = (node_class.name, tuple(sorted(str(s.get("id")) for s in subnets)))
        if not subnets or key in self._learned:
            return
        self._learned.add(key)
        tags = {
            k: v for term in node_class.spec.subnet_selector_terms for k, v in term.tags.items()
        }
        outside = self.offline.subnets.learn(subnets, tags)
        if outside:
            log.warning(
                "aws: EC2NodeClass %s: subnets %s are in no zone of %s; left out",
                node_class.name,
                ", ".join(outside),
                self.offline.region,
            )

    def node_class_named(self, name: str) -> EC2NodeClass | None:
        """The cluster's EC2NodeClass ``name`` (None without a cluster, or not there)."""
        cluster = self.context.cluster if self.context is not None else None
        if cluster is None or not name:
            return None
        found = cluster.get(EC2NodeClass, name)
        return found if isinstance(found, EC2NodeClass) else None

    def now(self) -> datetime:
        return self.clock.now() if self.clock is not None else datetime.now(UTC)

    def configuration_problem(self) -> str | None:
        """No region, or no credentials boto3 can find (made, not used: no AWS call)."""
        try:
            self.clients.client("ec2")
        except MissingConfigurationError as error:
            return str(error)
        return None

    @property
    def region(self) -> str:
        return self.clients.region

    def report_notes(self) -> list[str]:
        """Offline, where the figures come from and which prices are approximate."""
        if self.offline is None:
            return []
        catalog = self.offline.catalog
        launched = sorted({i["InstanceType"] for i in self.offline.ec2.cloud.instances.values()})
        modelled = [name for name in launched if name not in catalog.listed]
        lines = [
            f"offline catalog of {self.offline.region} (no AWS call): instance types and zones "
            f"from {catalog.sources['instance_types'].split(':')[0]}'s recorded EC2 data; "
            f"on-demand prices are us-east-1 list prices (in every region) for "
            f"{len(catalog.listed)} types and modelled for the others; every spot price is "
            "modelled (30-45 % of on-demand): approximate figures"
        ]
        if modelled:
            lines.append(f"modelled (approximate) on-demand prices launched: {', '.join(modelled)}")
        return lines

    def kubernetes_version(self) -> str | None:
        return self.cluster.kubernetes_version()

    # -- node classes --------------------------------------------------------------------

    def node_class_status(self, node_class: NodeClass) -> NodeClassReadiness:
        assert isinstance(node_class, EC2NodeClass)
        self._offline_subnets(node_class)
        try:
            result = self.discovery.resolution(node_class)
        except MissingConfigurationError as error:
            return NodeClassReadiness(False, "AWSNotConfigured", str(error))
        except TemporaryProviderError as error:
            return NodeClassReadiness(False, "AWSUnavailable", str(error))
        if not result.ready:
            return NodeClassReadiness(False, result.reason, result.problem, result.status())
        problem = self.placement_group_problem(node_class) or self.validation.problem(
            node_class, result, lambda: self._instance_types_or_none(node_class)
        )
        if problem is not None:
            return NodeClassReadiness(False, problem[0], problem[1], result.status())
        status = result.status()
        if node_class.spec.capacity_reservation_selector_terms:
            status["capacity_reservations"] = capacity_reservations(self.clients, node_class)
        return NodeClassReadiness(True, "Ready", "", status)

    def _instance_types_or_none(self, node_class: EC2NodeClass) -> list[InstanceType]:
        try:
            return self.instance_type_provider.list(node_class)
        except ProviderError:
            return []

    def placement_group_problem(self, node_class: EC2NodeClass) -> tuple[str, str] | None:
        """(reason, message) when the class names a placement group EC2 cannot resolve
        (Karpenter's PlacementGroupReady condition)."""
        if node_class.spec.placement_group_selector is None:
            return None
        named = selector_text(node_class)
        try:
            group = self.placement_groups.get(node_class)
        except LOOKUP_ERRORS as error:
            detail = (
                error_text(error) if isinstance(error, botocore.exceptions.ClientError) else error
            )
            return (
                "PlacementGroupResolutionFailed",
                f"spec.placementGroupSelector: resolving placement group {named!r} failed "
                f"({detail})",
            )
        if group is None:
            return (
                "PlacementGroupNotFound",
                f"spec.placementGroupSelector: placement group {named!r} not found (or not "
                "available)",
            )
        return None

    # -- catalog ---------------------------------------------------------------------------

    def instance_types(self, node_class: NodeClass) -> list[InstanceType]:
        assert isinstance(node_class, EC2NodeClass)
        self._offline_subnets(node_class)
        return self.instance_type_provider.list(node_class)

    def offerings(
        self, node_class: NodeClass, instance_types: Sequence[InstanceType]
    ) -> dict[str, list[Offering]]:
        assert isinstance(node_class, EC2NodeClass)
        self._offline_subnets(node_class)
        return self.offering_provider.offerings(node_class, instance_types)

    def _price_modelled(self, instance_type: str, capacity_type: str) -> bool:
        """Offline, every spot price is modelled, and the on-demand prices of unlisted types."""
        if self.offline is None:
            return False
        return capacity_type == CAPACITY_TYPE_SPOT or (
            capacity_type == CAPACITY_TYPE_ON_DEMAND
            and instance_type not in self.offline.catalog.listed
        )

    # -- instances -------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> Instance | LaunchResult:
        self._offline_subnets(request.node_class)
        return self.instances.launch(request)

    def get(self, provider_id: str) -> Instance:
        return self.instances.get(provider_id)

    def list_instances(self) -> list[Instance]:
        return self.instances.list()

    def delete(self, provider_id: str) -> None:
        self.instances.delete(provider_id)

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    def node_labels(self, node_claim: NodeClaim, instance: Instance) -> dict[str, str] | None:
        return registered_partition(node_claim, instance)

    def is_drifted(self, node_claim: NodeClaim, node_class: NodeClass) -> str | None:
        assert isinstance(node_class, EC2NodeClass)
        self._offline_subnets(node_class)
        return drift_reason(
            node_claim, node_class, self.discovery, self.instances, self.placement_groups
        )

    # -- background work -------------------------------------------------------------------

    def reconcile(self, now: datetime) -> timedelta:
        try:
            if self.pricing.due(now):
                self.pricing.refresh()
            if self.zonal_shifts.due(now):
                self.zonal_shifts.refresh()
            if self.launch_templates.templates:  # only once this provider has launched
                self.launch_templates.cleanup()
            if self.settings.interruption_queue:
                self.interruption.handle(self.interruption.poll())
            self.restamp_hashes()
        except (
            ProviderError,
            botocore.exceptions.BotoCoreError,
            botocore.exceptions.ClientError,
        ) as error:
            log.warning(
                "aws background work failed: %s",
                error_text(error) if isinstance(error, botocore.exceptions.ClientError) else error,
            )
        if self.settings.interruption_queue:
            return INTERRUPTION_PERIOD
        # Without a queue to read, only refreshes and stale launch templates fall due by time.
        dues = [
            due
            for due in (
                self.pricing.next_refresh if self.pricing.prices is not None else None,
                self.zonal_shifts.next_refresh if self.zonal_shifts.enabled else None,
                *(used + LAUNCH_TEMPLATE_TTL for used in self.launch_templates.templates.values()),
            )
            if due is not None
        ]
        deadline = max(min(dues) - now, timedelta(0)) if dues else None
        return Poll(INTERRUPTION_PERIOD, deadline)

    def restamp_hashes(self) -> list[str]:
        """Re-stamp NodeClaims hashed under another version (see :func:`drift.restamp`)."""
        cluster = self.context.cluster if self.context is not None else None
        if cluster is None:  # configured without a cluster (provider-level tests)
            return []
        return restamp(cluster)
