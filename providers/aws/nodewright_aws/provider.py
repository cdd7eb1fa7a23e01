"""The AWS provider: EC2NodeClass resolution, discovery, pricing, fleet launch, drift and
interruption. Every AWS call happens lazily, inside a hook, never in ``configure``."""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.exceptions

from nodewright.api.karpenter import NodeClaim, NodeClass
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
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
    ClockLike,
    Instance,
    InstanceType,
    LaunchRequest,
    LaunchResult,
    NodeClassKind,
    NodeClassReadiness,
    Offering,
    ProviderContext,
    ProviderInfo,
    RepairPolicy,
    Reservation,
)
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright_aws import labels as L
from nodewright_aws.clients import (
    UNAUTHORIZED_CODES,
    AWSClients,
    MissingConfigurationError,
    aws_errors,
    error_code,
    error_text,
)
from nodewright_aws.crd import ec2_node_class_crd
from nodewright_aws.instancetypes import (
    CapacitySettings,
    build_instance_type,
    capacity_types,
    usable,
)
from nodewright_aws.interruption import ACTIONABLE, SPOT_INTERRUPTION, Interruption, parse_message
from nodewright_aws.launch import (
    MAX_INSTANCE_TYPES,
    UNFULFILLABLE_CODES,
    Override,
    create_fleet_input,
    fleet_errors,
    instance_tags,
    launch_template_data,
    launch_template_name,
    static_hash,
    tag_list,
)
from nodewright_aws.nodeclass import EC2NodeClass
from nodewright_aws.offline.catalog import load_catalog
from nodewright_aws.offline.cloud import OfflineAWS
from nodewright_aws.options import Settings, parse_settings
from nodewright_aws.pricing import PriceBook, fetch_on_demand, fetch_spot
from nodewright_aws.resolve import AMI, Resolution, resolve
from nodewright_aws.userdata import BootstrapOptions, UserDataError, claim_taints
from nodewright_aws.userdata import generate as generate_user_data

log = logging.getLogger(__name__)

NAME = "aws"
INSTALL_HINT = 'pip install "nodewright[aws]"'
#: Launch-time stamp from the core's clock (LaunchTime is the cloud's wall clock).
LAUNCHED_AT_TAG = "nodewright.sh/launched-at"
LAUNCHABLE_CAPACITY_TYPES = (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND)
LIVE_STATES = ["pending", "running", "stopping", "stopped", "shutting-down"]
RESOLUTION_TTL = timedelta(minutes=1)
DISCOVERY_REFRESH = timedelta(hours=12)
PRICING_REFRESH = timedelta(hours=12)
UNAVAILABLE_TTL = timedelta(minutes=3)
LAUNCH_TEMPLATE_TTL = timedelta(minutes=1)
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


def static_fields_drifted(node_claim: NodeClaim, node_class: EC2NodeClass) -> bool:
    """Karpenter's static drift: the NodeClaim's ``ec2nodeclass-hash`` annotation differs
    from the class's hash. A missing annotation, or one written under another hash version
    (the hashing changed, not the class), is not drift."""
    annotations = node_claim.metadata.annotations
    stored = annotations.get(L.NODECLASS_HASH_ANNOTATION)
    version = annotations.get(L.NODECLASS_HASH_VERSION_ANNOTATION)
    if not stored or version != L.NODECLASS_HASH_VERSION:
        return False
    return stored != static_hash(node_class)


def parse_provider_id(provider_id: str) -> str:
    """The instance ID of ``aws:///<zone>/<id>``; InstanceNotFoundError if malformed."""
    if not provider_id.startswith(L.PROVIDER_ID_PREFIX):
        raise InstanceNotFoundError(f"{provider_id!r} is not an AWS provider ID")
    instance_id = provider_id.rsplit("/", 1)[-1]
    if not instance_id.startswith("i-"):
        raise InstanceNotFoundError(f"{provider_id!r} names no EC2 instance")
    return instance_id


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


@dataclass
class Discovery:
    """Raw DescribeInstanceTypes / DescribeInstanceTypeOfferings data."""

    infos: dict[str, dict[str, Any]] = field(default_factory=dict)
    zones: dict[str, frozenset[str]] = field(default_factory=dict)
    refreshed_at: datetime | None = None


class AWSProvider:
    def __init__(self, session_factory: Callable[[str], Any] | None = None) -> None:
        self._session_factory = session_factory
        self.settings = Settings()
        self.clients = AWSClients(self.settings, session_factory)
        self.clock: ClockLike | None = None
        self.context: ProviderContext | None = None
        self.cluster_name = "nodewright"
        self._forget()

    def _forget(self) -> None:
        """Drop what was learnt from AWS: a new configuration may name another account."""
        self.discovery = Discovery()
        self.prices: PriceBook | None = None
        self.resolutions: dict[tuple[str, int], tuple[datetime, Resolution]] = {}
        self.unavailable: dict[tuple[str, str, str], datetime] = {}
        self.templates: dict[str, datetime] = {}
        self.templates_loaded = False
        self.interruptions: list[Interruption] = []
        self._eks: dict[str, Any] | None = None
        self._queue_url: str | None = None
        self._next_pricing: datetime | None = None
        #: The in-process account under ``aws.offline=REGION`` (None when online).
        self.offline: OfflineAWS | None = None

    # -- set-up ------------------------------------------------------------------------

    def configure(self, context: ProviderContext) -> None:
        self.settings = parse_settings(context.options)
        self._forget()
        session_factory = self._session_factory
        if self.settings.offline:
            session_factory = self._offline_sessions()
        self.clients = AWSClients(self.settings, session_factory)
        self.context = context
        self.clock = context.clock
        self.cluster_name = self.settings.cluster_name or context.cluster_name

    def _offline_sessions(self) -> Callable[[str], Any]:
        """Sessions of an in-process account answering from the bundled catalog."""
        assert self.settings.region is not None
        self.offline = OfflineAWS(
            load_catalog(), self.settings.region, self.now, self.settings.kubernetes_version
        )
        log.info(
            "aws: offline in %s; instance types and offerings: %s; prices: %s",
            self.settings.region,
            self.offline.catalog.sources["instance_types"],
            self.offline.catalog.sources["prices"],
        )
        return self.offline.session

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

    # -- node classes --------------------------------------------------------------------

    def _eks_cluster(self) -> Mapping[str, Any]:
        """EKS DescribeCluster, once; empty when the cluster is not EKS (or not reachable)."""
        if self._eks is None:
            try:
                self._eks = dict(
                    self.clients.eks.describe_cluster(name=self.cluster_name)["cluster"]
                )
            except botocore.exceptions.ClientError as error:
                log.info("EKS DescribeCluster %s: %s", self.cluster_name, error_text(error))
                if error_code(error) == "ResourceNotFoundException":
                    self._eks = {}  # not an EKS cluster: the options are the only source
                return {}
        return self._eks

    def kubernetes_version(self) -> str | None:
        if self.settings.kubernetes_version:
            return self.settings.kubernetes_version
        return str(self._eks_cluster().get("version") or "") or None

    def bootstrap_options(
        self, request: LaunchRequest, node_class: EC2NodeClass, capacity_type: str, max_pods: int
    ) -> BootstrapOptions:
        """Cluster endpoint/CA/CIDR (options, else EKS), the class's kubelet settings, the
        NodeClaim's labels (with its capacity type) and taints, the class's user data."""
        settings = self.settings
        needs_eks = not (
            settings.cluster_endpoint and settings.cluster_ca_bundle and settings.cluster_cidr
        )
        eks = self._eks_cluster() if needs_eks else {}
        network = eks.get("kubernetesNetworkConfig") or {}
        claim = request.node_claim
        return BootstrapOptions(
            cluster_name=self.cluster_name,
            cluster_endpoint=settings.cluster_endpoint or str(eks.get("endpoint") or ""),
            ca_bundle=settings.cluster_ca_bundle
            or str((eks.get("certificateAuthority") or {}).get("data") or ""),
            cluster_cidr=settings.cluster_cidr
            or str(network.get("serviceIpv4Cidr") or network.get("serviceIpv6Cidr") or ""),
            max_pods=max_pods,
            kubelet=node_class.spec.kubelet,
            labels={**claim.metadata.labels, CAPACITY_TYPE_LABEL: capacity_type},
            taints=claim_taints(claim.spec.taints, claim.spec.startup_taints),
            custom=node_class.spec.user_data or "",
            instance_store_policy=node_class.spec.instance_store_policy,
        )

    def resolution(self, node_class: EC2NodeClass) -> Resolution:
        key = (node_class.name, node_class.metadata.generation or 0)
        now = self.now()
        cached = self.resolutions.get(key)
        if cached is not None and now - cached[0] < RESOLUTION_TTL:
            return cached[1]
        with aws_errors(f"resolving EC2NodeClass {node_class.name!r}"):
            result = resolve(
                self.clients,
                node_class,
                self.cluster_name,
                self.kubernetes_version(),
                self.settings.default_instance_profile,
            )
        self.resolutions = {k: v for k, v in self.resolutions.items() if k[0] != node_class.name}
        self.resolutions[key] = (now, result)
        return result

    def node_class_status(self, node_class: NodeClass) -> NodeClassReadiness:
        assert isinstance(node_class, EC2NodeClass)
        try:
            result = self.resolution(node_class)
        except MissingConfigurationError as error:
            return NodeClassReadiness(False, "AWSNotConfigured", str(error))
        except TemporaryProviderError as error:
            return NodeClassReadiness(False, "AWSUnavailable", str(error))
        if not result.ready:
            return NodeClassReadiness(False, result.reason, result.problem, result.status())
        status = result.status()
        if node_class.spec.capacity_reservation_selector_terms:
            status["capacity_reservations"] = self.capacity_reservations(node_class)
        return NodeClassReadiness(True, "Ready", "", status)

    def _ready(self, node_class: EC2NodeClass) -> Resolution:
        try:
            result = self.resolution(node_class)
        except MissingConfigurationError as error:
            raise NodeClassNotReadyError(str(error)) from None
        if not result.ready:
            raise NodeClassNotReadyError(
                f"EC2NodeClass {node_class.name!r} is not ready: {result.problem}"
            )
        return result

    # -- discovery and pricing ------------------------------------------------------------

    def refresh_discovery(self, force: bool = False) -> Discovery:
        now = self.now()
        last = self.discovery.refreshed_at
        if not force and last is not None and now - last < DISCOVERY_REFRESH:
            return self.discovery
        ec2 = self.clients.ec2
        filters: list[dict[str, Any]] = [
            {"Name": "supported-virtualization-type", "Values": ["hvm"]},
            {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
        ]
        if self.settings.instance_types:
            filters.append({"Name": "instance-type", "Values": list(self.settings.instance_types)})
        infos: dict[str, dict[str, Any]] = {}
        zones: dict[str, set[str]] = {}
        with aws_errors("discovering instance types"):
            for page in ec2.get_paginator("describe_instance_types").paginate(
                Filters=filters,
                PaginationConfig={"PageSize": 100},
            ):
                for info in page.get("InstanceTypes", []):
                    if usable(info) and self._wanted(info["InstanceType"]):
                        infos[info["InstanceType"]] = dict(info)
            # All offerings, narrowed here: not every EC2 implementation (moto) honours
            # wildcards in the instance-type filter of this call.
            for page in ec2.get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone",
                PaginationConfig={"PageSize": 1000},
            ):
                for offering in page.get("InstanceTypeOfferings", []):
                    if offering["InstanceType"] not in infos:
                        continue
                    zones.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        self.discovery = Discovery(infos, {k: frozenset(v) for k, v in zones.items()}, now)
        return self.discovery

    def _wanted(self, name: str) -> bool:
        patterns = self.settings.instance_types
        return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)

    def price_book(self) -> PriceBook:
        if self.prices is None or self.prices.region != self.region:
            self.prices = PriceBook(self.region)
        if self._next_pricing is None or self.now() >= self._next_pricing:
            self.refresh_prices()
        return self.prices

    def refresh_prices(self) -> None:
        """Refresh both price sources; failures keep the previous (or static) data."""
        book = self.prices or PriceBook(self.region)
        self.prices = book
        now = self.now()
        self._next_pricing = now + PRICING_REFRESH
        try:
            book.update_on_demand(fetch_on_demand(self.clients.pricing, self.region), now)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
            log.warning(
                "on-demand prices not refreshed, keeping the known ones: %s", error_text(error)
            )
        try:
            names = self.discovery.infos.keys() if self.settings.instance_types else ()
            book.update_spot(fetch_spot(self.clients.ec2, now, names), now)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
            log.warning("spot prices not refreshed, keeping the known ones: %s", error_text(error))

    def instance_types(self, node_class: NodeClass) -> list[InstanceType]:
        assert isinstance(node_class, EC2NodeClass)
        try:
            discovery = self.refresh_discovery()
        except MissingConfigurationError as error:
            raise TemporaryProviderError(str(error)) from None
        settings = CapacitySettings(
            self.settings.vm_memory_overhead_percent, self.settings.reserved_enis
        )
        zone_ids = self._zone_ids(node_class)
        types = []
        for name in sorted(discovery.infos):
            built = build_instance_type(
                discovery.infos[name], self.region, node_class.spec, settings
            )
            ids = sorted(zone_ids[z] for z in discovery.zones.get(name, ()) if z in zone_ids)
            requirement = (
                Requirement.of(L.ZONE_ID, "In", ids)
                if ids
                else Requirement.of(L.ZONE_ID, "DoesNotExist")
            )
            types.append(
                InstanceType(
                    built.name, built.requirements.add(requirement), built.capacity, built.overhead
                )
            )
        return types

    def _zone_ids(self, node_class: EC2NodeClass) -> dict[str, str]:
        try:
            result = self.resolution(node_class)
        except (MissingConfigurationError, TemporaryProviderError):
            return {}
        return {s.zone: s.zone_id or s.zone for s in result.subnets}

    def offerings(
        self, node_class: NodeClass, instance_types: Sequence[InstanceType]
    ) -> dict[str, list[Offering]]:
        assert isinstance(node_class, EC2NodeClass)
        discovery = self.refresh_discovery()
        book = self.price_book()
        zone_ids = self._zone_ids(node_class)
        amis = self._amis(node_class)
        now = self.now()
        self.unavailable = {k: v for k, v in self.unavailable.items() if v > now}
        result: dict[str, list[Offering]] = {}
        for instance_type in instance_types:
            info = discovery.infos.get(instance_type.name)
            if info is None:
                continue
            has_ami = self._ami_for(instance_type, amis) is not None
            offerings = []
            for zone in sorted(
                discovery.zones.get(instance_type.name, frozenset()) & zone_ids.keys()
            ):
                for capacity_type in capacity_types(info):
                    price = (
                        book.spot_price(instance_type.name, zone)
                        if capacity_type == CAPACITY_TYPE_SPOT
                        else book.on_demand_price(instance_type.name)
                    )
                    available = (
                        price is not None
                        and has_ami
                        and (instance_type.name, zone, capacity_type) not in self.unavailable
                    )
                    offerings.append(
                        Offering(
                            zone,
                            capacity_type,
                            price if price is not None else 0.0,
                            available=available,
                            labels={L.ZONE_ID: zone_ids[zone]},
                        )
                    )
            result[instance_type.name] = offerings
        for reservation in self.capacity_reservations(node_class):
            name = reservation["instanceType"]
            zone = reservation["availabilityZone"]
            if name not in result or zone not in zone_ids:
                continue
            on_demand = book.on_demand_price(name) or 0.0
            count = int(reservation.get("availableInstanceCount", 0))
            result[name].append(
                Offering(
                    zone,
                    CAPACITY_TYPE_RESERVED,
                    # Already paid for: far cheaper than anything else (Karpenter's rule).
                    on_demand / 10_000_000,
                    available=count > 0,
                    labels={L.ZONE_ID: zone_ids[zone], L.CAPACITY_RESERVATION_TYPE: "default"},
                    reservation=Reservation(reservation["id"], L.CAPACITY_RESERVATION_ID, count),
                )
            )
        return result

    def capacity_reservations(self, node_class: EC2NodeClass) -> list[dict[str, Any]]:
        """Active reservations matching the class's terms, counted fresh on every call."""
        terms = node_class.spec.capacity_reservation_selector_terms
        if not terms:
            return []
        found: dict[str, dict[str, Any]] = {}
        ec2 = self.clients.ec2
        queries: list[dict[str, Any]] = []
        ids = [t.id for t in terms if t.id]
        if ids:
            queries.append({"CapacityReservationIds": ids})
        for term in terms:
            if term.id:
                continue
            filters = [{"Name": f"tag:{k}", "Values": [v]} for k, v in sorted(term.tags.items())]
            if term.owner_id:
                filters.append({"Name": "owner-id", "Values": [term.owner_id]})
            if term.instance_match_criteria:
                filters.append(
                    {"Name": "instance-match-criteria", "Values": [term.instance_match_criteria]}
                )
            queries.append({"Filters": filters})
        try:
            with aws_errors("describing capacity reservations"):
                for query in queries:
                    response = ec2.describe_capacity_reservations(**query)
                    for r in response.get("CapacityReservations", []):
                        if r.get("State") != "active":
                            continue
                        found[r["CapacityReservationId"]] = {
                            "id": r["CapacityReservationId"],
                            "availabilityZone": r.get("AvailabilityZone", ""),
                            "instanceType": r.get("InstanceType", ""),
                            "instanceMatchCriteria": r.get("InstanceMatchCriteria", ""),
                            "ownerID": r.get("OwnerId", ""),
                            "reservationType": "default",
                            "state": "active",
                            "availableInstanceCount": r.get("AvailableInstanceCount", 0),
                        }
        except (ProviderError, botocore.exceptions.ClientError) as error:
            log.warning("capacity reservations not read: %s", error)
            return []
        return [found[k] for k in sorted(found)]

    def _amis(self, node_class: EC2NodeClass) -> list[AMI]:
        try:
            return self.resolution(node_class).amis
        except (MissingConfigurationError, TemporaryProviderError):
            return []

    @staticmethod
    def _ami_for(instance_type: InstanceType, amis: Sequence[AMI]) -> AMI | None:
        for ami in amis:
            wanted = Requirements(Requirement.of(k, op, v) for k, op, v in ami.requirements)
            if not instance_type.requirements.intersects(wanted):
                return ami
        return None

    # -- launch ---------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> Instance | LaunchResult:
        node_class = request.node_class
        assert isinstance(node_class, EC2NodeClass)
        with aws_errors(f"launching for NodeClaim {request.node_claim.name!r}"):
            try:
                existing = self._find_by_key(request.idempotency_key)
                if existing is not None:
                    return existing
                return self._launch(request, node_class)
            except MissingConfigurationError as error:
                raise NodeClassNotReadyError(str(error)) from None
            except botocore.exceptions.ClientError as error:
                code = error_code(error)
                if code in UNAUTHORIZED_CODES:
                    raise LaunchError("Unauthorized", error_text(error)) from None
                if code in ("RequestLimitExceeded", "Throttling", "ThrottlingException"):
                    raise
                raise LaunchError("LaunchFailed", error_text(error)) from None

    def _find_by_key(self, key: str) -> Instance | None:
        reservations = self.clients.ec2.describe_instances(
            Filters=[
                {"Name": f"tag:{L.IDEMPOTENCY_TAG}", "Values": [key]},
                {
                    "Name": "instance-state-name",
                    "Values": ["pending", "running", "stopping", "stopped"],
                },
            ]
        )["Reservations"]
        for reservation in reservations:
            for description in reservation.get("Instances", []):
                return self._to_instance(dict(description))
        return None

    def _launch(self, request: LaunchRequest, node_class: EC2NodeClass) -> Instance | LaunchResult:
        resolution = self._ready(node_class)
        self.price_book()  # prices for the instance returned
        subnets_by_zone: dict[str, str] = {}
        for subnet in resolution.subnets:  # sorted by free IPs: the first per zone wins
            subnets_by_zone.setdefault(subnet.zone, subnet.id)
        choices: list[tuple[float, str, InstanceType, Offering]] = []
        for option in request.instance_types:
            if request.requirements.intersects(option.requirements):
                continue
            for offering in option.offerings:
                if (
                    offering.available
                    and offering.capacity_type in LAUNCHABLE_CAPACITY_TYPES
                    and offering.zone in subnets_by_zone
                    and not request.requirements.intersects(offering.requirements())
                ):
                    choices.append((offering.price, option.name, option, offering))
        if not choices:
            raise InsufficientCapacityError(
                "no requested instance type and offering fits NodeClaim "
                f"{request.node_claim.name!r}"
            )
        present = {o.capacity_type for _, _, _, o in choices}
        # Karpenter's order: capacity bought ahead, then spot, then on-demand.
        capacity_type = next(ct for ct in LAUNCHABLE_CAPACITY_TYPES if ct in present)
        choices = sorted(
            (c for c in choices if c[3].capacity_type == capacity_type), key=lambda c: c[:2]
        )
        kept_types: list[str] = []
        for _, name, _, _ in choices:
            if name not in kept_types:
                kept_types.append(name)
        kept = set(kept_types[:MAX_INSTANCE_TYPES])
        node_pool = request.node_claim.metadata.labels.get(NODEPOOL_LABEL, "")
        tags = instance_tags(
            node_class,
            self.cluster_name,
            node_pool,
            request.node_claim.name,
            request.idempotency_key,
        )
        tags[LAUNCHED_AT_TAG] = self.now().isoformat()
        # Per-claim tags stay off the template, so claims share it (deterministic names).
        per_claim = (L.NODECLAIM_TAG, L.IDEMPOTENCY_TAG, LAUNCHED_AT_TAG)
        template_tags = {k: v for k, v in tags.items() if k not in per_claim}
        if capacity_type == CAPACITY_TYPE_RESERVED:
            choices = choices[:1]  # one reservation: its own template targets it
            reservation = choices[0][3].reservation
            if reservation is not None:
                tags[L.CAPACITY_RESERVATION_ID] = reservation.id
        groups: dict[str, list[Override]] = {}
        types_by_name: dict[str, InstanceType] = {}
        for price, name, option, offering in choices:
            if name not in kept:
                continue
            ami = self._ami_for(option, resolution.amis)
            if ami is None:
                continue
            pods = option.capacity.get("pods", 0) // 1000
            try:
                text = generate_user_data(
                    node_class.spec.effective_ami_family(),
                    self.bootstrap_options(request, node_class, capacity_type, pods),
                )
            except UserDataError as error:
                raise LaunchError(
                    "InvalidUserData", f"EC2NodeClass {node_class.name!r}: {error}"
                ) from None
            data = launch_template_data(
                node_class,
                image_id=ami.id,
                user_data=text,
                security_groups=[g["id"] for g in resolution.security_groups],
                instance_profile=resolution.instance_profile,
                tags=template_tags,
            )
            if offering.reservation is not None:
                data["CapacityReservationSpecification"] = {
                    "CapacityReservationTarget": {"CapacityReservationId": offering.reservation.id}
                }
            template = self._ensure_template(data, node_class)
            groups.setdefault(template, []).append(
                Override(name, offering.zone, subnets_by_zone[offering.zone], ami.id, price)
            )
            types_by_name[name] = option
        if not groups:
            raise InsufficientCapacityError(
                f"no AMI of EC2NodeClass {node_class.name!r} fits the requested instance types"
            )
        fleet = create_fleet_input(
            CAPACITY_TYPE_ON_DEMAND if capacity_type == CAPACITY_TYPE_RESERVED else capacity_type,
            groups,
            tags,
            node_class.spec.context,
        )
        response = self.clients.ec2.create_fleet(**fleet)
        failed = []
        for code, message, instance_type, zone in fleet_errors(response):
            if code in UNFULFILLABLE_CODES and instance_type and zone:
                failed.append((instance_type, zone, capacity_type))
                self.unavailable[(instance_type, zone, capacity_type)] = (
                    self.now() + UNAVAILABLE_TTL
                )
            log.info("CreateFleet error %s for %s in %s: %s", code, instance_type, zone, message)
        launched = [
            (i.get("InstanceType", ""), instance_id)
            for i in response.get("Instances") or []
            for instance_id in i.get("InstanceIds", [])
        ]
        if not launched:
            errors = fleet_errors(response)
            if failed or not errors:
                raise InsufficientCapacityError(
                    f"CreateFleet launched nothing for NodeClaim {request.node_claim.name!r}: "
                    + ", ".join(f"{t} in {z} ({ct})" for t, z, ct in failed),
                    failed,
                )
            code, message, _, _ = errors[0]
            raise LaunchError(
                "Unauthorized" if code in UNAUTHORIZED_CODES else "LaunchFailed",
                f"{code}: {message}",
            )
        instance_id = launched[0][1]
        description = self._describe(instance_id)
        if description is None:  # eventual consistency: a fresh ID may not be visible yet
            raise TemporaryProviderError(f"instance {instance_id} not visible yet")
        instance = self._to_instance(
            description, types_by_name.get(description.get("InstanceType", ""))
        )
        if not failed:
            return instance
        # The fleet bought one type and found no capacity for others: the core's catalog
        # must stop offering those too, or consolidation sizes replacements for them.
        return LaunchResult(instance, tuple(failed), UNAVAILABLE_TTL)

    def _ensure_template(self, data: dict[str, Any], node_class: EC2NodeClass) -> str:
        name = launch_template_name(data, self.cluster_name, node_class.name)
        if name not in self.templates:
            ec2 = self.clients.ec2
            try:
                ec2.describe_launch_templates(LaunchTemplateNames=[name])
            except botocore.exceptions.ClientError as error:
                if error_code(error) != "InvalidLaunchTemplateName.NotFoundException":
                    raise
                lt_tags = {
                    f"{L.CLUSTER_TAG_PREFIX}{self.cluster_name}": "owned",
                    L.EKS_CLUSTER_NAME_TAG: self.cluster_name,
                    L.EC2NODECLASS_TAG: node_class.name,
                    **node_class.spec.tags,
                }
                try:
                    ec2.create_launch_template(
                        LaunchTemplateName=name,
                        LaunchTemplateData=data,
                        TagSpecifications=[
                            {"ResourceType": "launch-template", "Tags": tag_list(lt_tags)}
                        ],
                    )
                except botocore.exceptions.ClientError as create_error:
                    if (
                        error_code(create_error)
                        != "InvalidLaunchTemplateName.AlreadyExistsException"
                    ):
                        raise
        self.templates[name] = self.now()
        return name

    def cleanup_launch_templates(self) -> list[str]:
        """Delete this cluster's launch templates not used for a minute; return their names."""
        now = self.now()
        if not self.templates_loaded:
            self.templates_loaded = True
            pages = self.clients.ec2.get_paginator("describe_launch_templates").paginate(
                Filters=[{"Name": f"tag:{L.EKS_CLUSTER_NAME_TAG}", "Values": [self.cluster_name]}]
            )
            for page in pages:
                for template in page.get("LaunchTemplates", []):
                    self.templates.setdefault(template["LaunchTemplateName"], now)
        stale = [n for n, used in self.templates.items() if now - used >= LAUNCH_TEMPLATE_TTL]
        for name in stale:
            try:
                self.clients.ec2.delete_launch_template(LaunchTemplateName=name)
            except botocore.exceptions.ClientError as error:
                log.info("launch template %s not deleted: %s", name, error_text(error))
            del self.templates[name]
        return stale

    # -- instances ------------------------------------------------------------------------

    def _describe(self, instance_id: str) -> dict[str, Any] | None:
        try:
            reservations = self.clients.ec2.describe_instances(InstanceIds=[instance_id])[
                "Reservations"
            ]
        except botocore.exceptions.ClientError as error:
            if error_code(error) == "InvalidInstanceID.NotFound":
                return None
            raise
        for reservation in reservations:
            for description in reservation.get("Instances", []):
                return dict(description)
        return None

    def _to_instance(
        self, description: Mapping[str, Any], instance_type: InstanceType | None = None
    ) -> Instance:
        tags = {t["Key"]: t["Value"] for t in description.get("Tags", [])}
        zone = description.get("Placement", {}).get("AvailabilityZone", "")
        name = description.get("InstanceType", "")
        spot = description.get("InstanceLifecycle") == "spot" or bool(
            description.get("SpotInstanceRequestId")
        )
        capacity_type = CAPACITY_TYPE_SPOT if spot else CAPACITY_TYPE_ON_DEMAND
        reservation_id = tags.get(L.CAPACITY_RESERVATION_ID) or description.get(
            "CapacityReservationId"
        )
        if reservation_id:
            capacity_type = CAPACITY_TYPE_RESERVED
        state = description.get("State", {}).get("Name", "running")
        created = tags.get(LAUNCHED_AT_TAG)
        created_at = (
            datetime.fromisoformat(created)
            if created
            else description.get("LaunchTime", self.now())
        )
        if instance_type is None and name in self.discovery.infos:
            instance_type = build_instance_type(self.discovery.infos[name], self.region)
        book = self.prices
        price = (
            (book.spot_price(name, zone) if spot else book.on_demand_price(name))
            if book is not None
            else None
        )
        labels = dict(instance_type.requirements.labels()) if instance_type is not None else {}
        labels.pop(L.ZONE_ID, None)
        labels.update(
            {
                INSTANCE_TYPE_LABEL: name,
                ZONE_LABEL: zone,
                CAPACITY_TYPE_LABEL: capacity_type,
                L.INSTANCE_TENANCY: description.get("Placement", {}).get("Tenancy", "default"),
            }
        )
        zone_id = description.get("Placement", {}).get(
            "AvailabilityZoneId"
        ) or self._zone_id_of_subnet(description)
        if zone_id:
            labels[L.ZONE_ID] = zone_id
        if self.settings.region:
            labels[REGION_LABEL] = self.settings.region
        if tags.get(L.NODEPOOL_TAG):
            labels[NODEPOOL_LABEL] = tags[L.NODEPOOL_TAG]
        if reservation_id:
            labels[L.CAPACITY_RESERVATION_ID] = reservation_id
            labels[L.CAPACITY_RESERVATION_TYPE] = "default"
        return Instance(
            provider_id=f"{L.PROVIDER_ID_PREFIX}{zone}/{description['InstanceId']}",
            node_claim=tags.get(L.NODECLAIM_TAG, ""),
            node_pool=tags.get(L.NODEPOOL_TAG, ""),
            node_class=tags.get(L.EC2NODECLASS_TAG, ""),
            instance_type=name,
            zone=zone,
            capacity_type=capacity_type,
            price=price or 0.0,
            created_at=created_at,
            labels=labels,
            capacity=instance_type.capacity if instance_type is not None else {},
            allocatable=instance_type.allocatable() if instance_type is not None else {},
            image_id=description.get("ImageId", ""),
            node_name=description.get("PrivateDnsName") or "",
            annotations={
                key: tags[key]
                for key in (L.NODECLASS_HASH_ANNOTATION, L.NODECLASS_HASH_VERSION_ANNOTATION)
                if tags.get(key)
            },
            state={
                "pending": "pending",
                "running": "running",
                "shutting-down": "terminating",
                "terminated": "terminated",
            }.get(state, "running" if state != "stopping" else "terminating"),
        )

    def _zone_id_of_subnet(self, description: Mapping[str, Any]) -> str:
        subnet = description.get("SubnetId")
        for _, resolution in self.resolutions.values():
            for s in resolution.subnets:
                if s.id == subnet:
                    return s.zone_id
        return ""

    def get(self, provider_id: str) -> Instance:
        instance_id = parse_provider_id(provider_id)
        with aws_errors(f"describing {instance_id}"):
            description = self._describe(instance_id)
        if description is None or description.get("State", {}).get("Name") == "terminated":
            raise InstanceNotFoundError(provider_id)
        return self._to_instance(description)

    def list_instances(self) -> list[Instance]:
        """This cluster's live instances. With no region configured there is nothing this
        provider can have launched (e.g. a KWOK-only simulation): an empty list, no call.
        Garbage collection confirms every absence through ``get``, so this is safe."""
        if not self.settings.region:
            return []
        filters = [
            {"Name": "tag-key", "Values": [L.NODEPOOL_TAG]},
            {"Name": "tag-key", "Values": [L.EC2NODECLASS_TAG]},
            {"Name": f"tag:{L.EKS_CLUSTER_NAME_TAG}", "Values": [self.cluster_name]},
            {"Name": "instance-state-name", "Values": LIVE_STATES},
        ]
        found = []
        with aws_errors("listing instances"):
            for page in self.clients.ec2.get_paginator("describe_instances").paginate(
                Filters=filters
            ):
                for reservation in page.get("Reservations", []):
                    for description in reservation.get("Instances", []):
                        found.append(self._to_instance(dict(description)))
        return found

    def delete(self, provider_id: str) -> None:
        instance_id = parse_provider_id(provider_id)
        with aws_errors(f"terminating {instance_id}"):
            description = self._describe(instance_id)
            state = (description or {}).get("State", {}).get("Name")
            if description is None or state == "terminated":
                raise InstanceNotFoundError(provider_id)
            if state == "shutting-down":
                return
            try:
                self.clients.ec2.terminate_instances(InstanceIds=[instance_id])
            except botocore.exceptions.ClientError as error:
                if error_code(error) == "InvalidInstanceID.NotFound":
                    raise InstanceNotFoundError(provider_id) from None
                raise

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    # -- drift ----------------------------------------------------------------------------

    def is_drifted(self, node_claim: NodeClaim, node_class: NodeClass) -> str | None:
        assert isinstance(node_class, EC2NodeClass)
        provider_id = node_claim.status.provider_id
        if not provider_id:
            return None
        if static_fields_drifted(node_claim, node_class):  # first: it needs no AWS call
            return "NodeClassDrift"
        try:
            resolution = self.resolution(node_class)
            description = self._describe(parse_provider_id(provider_id))
        except (ProviderError, botocore.exceptions.ClientError):
            return None
        if description is None or not resolution.ready:
            return None
        image = node_claim.status.image_id or description.get("ImageId", "")
        if image and image not in {a.id for a in resolution.amis}:
            return "AMIDrift"
        groups = {g["GroupId"] for g in description.get("SecurityGroups", [])}
        if groups and groups != {g["id"] for g in resolution.security_groups}:
            return "SecurityGroupDrift"
        subnet = description.get("SubnetId")
        if subnet and subnet not in {s.id for s in resolution.subnets}:
            return "SubnetDrift"
        return None

    # -- background work -------------------------------------------------------------------

    def reconcile(self, now: datetime) -> timedelta:
        try:
            if (
                self.prices is not None
                and self._next_pricing is not None
                and now >= self._next_pricing
            ):
                self.refresh_prices()
            if self.templates:  # only once this provider has launched something
                self.cleanup_launch_templates()
            if self.settings.interruption_queue:
                self.handle_interruptions(self.poll_interruptions())
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
        return INTERRUPTION_PERIOD

    def poll_interruptions(self) -> list[Interruption]:
        """Read one batch of the interruption queue (no long poll: reconcile must not block)."""
        sqs = self.clients.sqs
        if self._queue_url is None:
            self._queue_url = sqs.get_queue_url(QueueName=self.settings.interruption_queue or "")[
                "QueueUrl"
            ]
        messages = sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=20,
            WaitTimeSeconds=0,
            AttributeNames=["SentTimestamp"],
        ).get("Messages", [])
        found: list[Interruption] = []
        for message in messages:
            found.extend(parse_message(message.get("Body", "")))
            sqs.delete_message(QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"])
        return found

    def restamp_hashes(self) -> list[str]:
        """Re-stamp NodeClaims hashed under another version (Karpenter's ``v6`` on takeover)
        with the class's current hash, so later class changes drift them."""
        cluster = self.context.cluster if self.context is not None else None
        if cluster is None:  # configured without a cluster (provider-level tests)
            return []
        return restamp_hashes(
            cluster,
            EC2NodeClass,
            L.NODECLASS_HASH_VERSION_ANNOTATION,
            L.NODECLASS_HASH_VERSION,
            lambda node_class: {
                L.NODECLASS_HASH_ANNOTATION: static_hash(node_class),
                L.NODECLASS_HASH_VERSION_ANNOTATION: L.NODECLASS_HASH_VERSION,
            },
        )

    def handle_interruptions(self, interruptions: Sequence[Interruption]) -> list[str]:
        """Act on interruptions; return the names of the NodeClaims deleted.

        The hook contract has no way to tell the core "replace this instance", so, as
        Karpenter does, the provider deletes the NodeClaim through the cluster handle and
        the core's termination drains the node.
        """
        self.interruptions.extend(interruptions)
        affected = {
            i.instance_id: i for i in interruptions if i.kind in ACTIONABLE and i.instance_id
        }
        if not affected or self.context is None:
            return []
        deleted = []
        for claim in self.context.cluster.list(NodeClaim):
            provider_id = claim.status.provider_id or ""
            instance_id = provider_id.rsplit("/", 1)[-1]
            event = affected.get(instance_id)
            if event is None or claim.metadata.deletion_timestamp is not None:
                continue
            if event.kind == SPOT_INTERRUPTION:
                zone = provider_id.removeprefix(L.PROVIDER_ID_PREFIX).split("/", 1)[0]
                instance_type = claim.metadata.labels.get(INSTANCE_TYPE_LABEL, "")
                self.unavailable[(instance_type, zone, CAPACITY_TYPE_SPOT)] = (
                    self.now() + UNAVAILABLE_TTL
                )
            log.info(
                "interruption %s for %s: deleting NodeClaim %s", event.kind, instance_id, claim.name
            )
            self.context.cluster.delete(NodeClaim, claim.name)
            deleted.append(claim.name)
        return deleted
