"""The KWOK provider: a fake cloud that launches instances into a ledger and registers
their Nodes in the cluster after a delay, as Karpenter's KWOK provider does.

:mod:`nodewright_kwok.plugin` exposes one :class:`KWOKProvider` through the hooks; tests
may build their own.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TypeVar

from nodewright.plugin import (
    CAPACITY_TYPE_LABEL,
    DEFAULT_RECONCILE_PERIOD,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    ChangeFeed,
    ClockLike,
    Instance,
    InstanceNotFoundError,
    InstanceType,
    LaunchError,
    LaunchRequest,
    LaunchResult,
    Node,
    NodeClaim,
    NodeClass,
    NodeClassKind,
    NodeClassNotReadyError,
    NodeClassReadiness,
    Offering,
    Pod,
    Poll,
    ProviderCluster,
    ProviderContext,
    ProviderInfo,
    RepairPolicy,
    Requirements,
    find_condition,
    node_class_label,
    node_slices,
)
from nodewright_kwok import heartbeat, kubelet
from nodewright_kwok.catalog import Catalog, default_catalog, load_catalog
from nodewright_kwok.faults import Faults
from nodewright_kwok.labels import (
    GROUP,
    INSTANCE_LABELS,
    KWOK_NODE_KEY,
    KWOK_NODE_VALUE,
    LAUNCH_KEY_ANNOTATION,
    PROVIDER_ID_PREFIX,
    RESERVATION_ID_LABEL,
)
from nodewright_kwok.ledger import PENDING, RUNNING, TERMINATED, Ledger, LedgerEntry
from nodewright_kwok.nodeclass import KWOKNodeClass, kwok_node_class_crd
from nodewright_kwok.options import INSTANCE_TYPES_FILE, Settings, parse_settings
from nodewright_kwok.selection import cheapest_offering, instance_labels

log = logging.getLogger(__name__)

T = TypeVar("T", Node, Pod)

NAME = "kwok"
INSTALL_HINT = 'pip install "nodewright[kwok]"'
#: How soon a Node that failed to register is tried again.
REGISTRATION_RETRY = timedelta(seconds=5)


@functools.cache
def _default_catalog() -> Catalog:
    return default_catalog()


def provider_info() -> ProviderInfo:
    return ProviderInfo(
        name=NAME,
        node_classes=(
            NodeClassKind(
                group=GROUP,
                kind=KWOKNodeClass.KIND,
                model=KWOKNodeClass,
                crd=kwok_node_class_crd,
            ),
        ),
        restricted_label_domains=frozenset({GROUP}),
        well_known_labels=INSTANCE_LABELS | {RESERVATION_ID_LABEL},
        install_hint=INSTALL_HINT,
        registers_nodes=True,
    )


def provider_id(node_name: str) -> str:
    return f"{PROVIDER_ID_PREFIX}{node_name}"


#: Karpenter's KWOK provider: a Node not Ready (False or Unknown) for 10 minutes is replaced.
REPAIR_POLICIES = (
    RepairPolicy("Ready", "False", timedelta(minutes=10)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=10)),
)


class KWOKProvider:
    """The fake cloud's state: catalog, ledger of instances, faults, and the cluster handle.

    ``faults`` and ``ledger`` are the same objects for the provider's whole life;
    :meth:`configure` clears them. A ``ledger`` handed in is the fake cloud of an earlier
    provider object (a restarted nodewright): it outlives this one and is never cleared.
    """

    def __init__(self, ledger: Ledger | None = None) -> None:
        self._owns_ledger = ledger is None
        self.ledger = Ledger() if ledger is None else ledger
        self.faults = Faults()
        self.catalog = _default_catalog()
        self.settings = Settings()
        self._cluster: ProviderCluster | None = None
        self._clock: ClockLike | None = None
        self._leases = heartbeat.NodeLeases()
        self._keep_leases = False
        #: Node and Pod changes since the last pass: the kubelets look at those only.
        self._changes: ChangeFeed | None = None
        #: Nodes the kubelets played last pass (a node new to the set has all its pods read).
        self._emulated: set[str] = set()

    # -- set-up -------------------------------------------------------------------------------

    def configure(self, context: ProviderContext) -> None:
        """Take the cluster, clock and options; forget earlier instances and faults."""
        settings = parse_settings(context.options)
        self.faults.configure(context.options, context.seed)
        if settings.instance_types_file:
            try:
                self.catalog = load_catalog(settings.instance_types_file)
            except ValueError as error:
                raise ValueError(f"{INSTANCE_TYPES_FILE}: {error}") from error
        else:
            self.catalog = _default_catalog()
        self.settings = settings
        if self._owns_ledger:
            self.ledger.clear()
        if self._changes is not None and self._cluster is not None:
            self._cluster.state.close(self._changes)
        self._cluster = context.cluster
        self._clock = context.clock
        self._changes = (
            context.cluster.state.feed(Node, Pod)
            if context.cluster is not None and settings.manage_nodes
            else None
        )
        self._emulated = set()
        #: Only a real control plane watches node Leases and heartbeats.
        self._keep_leases = context.live_cluster
        self.adopt()

    def adopt(self) -> int:
        """Take into the ledger the instances other processes launched: every KWOK Node
        (``kwok://`` providerID, the ``kwok.x-k8s.io/node`` annotation) of a NodePool
        (``karpenter.sh/nodepool``) the ledger has never seen is a running instance. Returns
        how many were adopted. A KWOK Node of no NodePool was made by someone else (by hand,
        ``kwokctl``): it is not an instance, so garbage collection never deletes it.

        One process's ledger is not the cluster's: after a leader change the new leader
        must still find, and be able to delete, what the old one launched.
        """
        try:
            nodes = self.cluster.list(Node)
        except Exception as error:  # the ledger still answers; the next miss tries again
            log.warning("kwok: cannot read Nodes to adopt instances: %s", error)
            return 0
        adopted = 0
        for node in nodes:
            pid = node.spec.provider_id or ""
            if (
                not pid.startswith(PROVIDER_ID_PREFIX)
                or node.metadata.annotations.get(KWOK_NODE_KEY) != KWOK_NODE_VALUE
                or NODEPOOL_LABEL not in node.metadata.labels
                or self.ledger.knows(pid)
            ):
                continue
            self.ledger.record(self._entry_of(node, pid))
            adopted += 1
            log.info("kwok: adopted %s from Node %s", pid, node.name)
        return adopted

    def _entry_of(self, node: Node, pid: str) -> LedgerEntry:
        """A running instance, rebuilt from the Node it registered."""
        labels = node.metadata.labels
        instance_type = self.catalog.get(labels.get(INSTANCE_TYPE_LABEL, ""))
        zone = labels.get(ZONE_LABEL, "")
        capacity_type = labels.get(CAPACITY_TYPE_LABEL, "")
        reservation = labels.get(RESERVATION_ID_LABEL)
        offering = None
        if instance_type is not None:
            offering = next(
                (
                    o
                    for o in instance_type.offerings
                    if o.zone == zone
                    and o.capacity_type == capacity_type
                    and (o.reservation.id if o.reservation is not None else None) == reservation
                ),
                None,
            )
        keys = set(INSTANCE_LABELS) | {
            RESERVATION_ID_LABEL,
            ZONE_LABEL,
            CAPACITY_TYPE_LABEL,
            HOSTNAME_LABEL,
            KWOK_NODE_KEY,
            INSTANCE_TYPE_LABEL,
        }
        if instance_type is not None:
            keys |= set(instance_type.requirements.keys())
        if offering is not None:
            keys |= set(offering.labels)
        created = node.metadata.creation_timestamp or self.clock.now()
        instance = Instance(
            provider_id=pid,
            node_claim=node.name,
            node_pool=labels.get(NODEPOOL_LABEL, ""),
            node_class=labels.get(node_class_label(GROUP, KWOKNodeClass.KIND), ""),
            instance_type=labels.get(INSTANCE_TYPE_LABEL, ""),
            zone=zone,
            capacity_type=capacity_type,
            price=offering.price if offering is not None else 0.0,
            created_at=created,
            labels={k: v for k, v in labels.items() if k in keys},
            capacity=dict(instance_type.capacity) if instance_type is not None else {},
            allocatable=instance_type.allocatable() if instance_type is not None else {},
            state=RUNNING,
        )
        return LedgerEntry(
            instance=instance,
            idempotency_key=node.metadata.annotations.get(LAUNCH_KEY_ANNOTATION, ""),
            registers_at=created,
            node_labels=dict(labels),
            node_annotations=dict(node.metadata.annotations),
        )

    @property
    def cluster(self) -> ProviderCluster:
        if self._cluster is None:
            raise RuntimeError("the kwok provider is not configured (nodewright_configure)")
        return self._cluster

    @property
    def clock(self) -> ClockLike:
        if self._clock is None:
            raise RuntimeError("the kwok provider is not configured (nodewright_configure)")
        return self._clock

    # -- NodeClasses and catalog ------------------------------------------------------------

    def node_class_status(self, node_class: NodeClass) -> NodeClassReadiness:
        """A KWOKNodeClass has nothing to resolve: it is always ready."""
        return NodeClassReadiness(ready=True)

    def instance_types(self, node_class: NodeClass) -> Sequence[InstanceType]:
        self.faults.check_api("instance_types")
        return self.catalog.instance_types

    def offerings(
        self, node_class: NodeClass, instance_types: Sequence[InstanceType]
    ) -> Mapping[str, Sequence[Offering]]:
        """Offerings from the catalog, each reservation with what its running instances leave
        of it; capacity faults show up only at launch, as in a cloud."""
        self.faults.check_api("offerings")
        left = self._reservations_left()
        result: dict[str, Sequence[Offering]] = {}
        for instance_type in instance_types:
            known = self.catalog.get(instance_type.name)
            if known is not None:
                result[instance_type.name] = _with_room(known.offerings, left)
        return result

    def _full_reservations(self) -> set[tuple[str, str, str]]:
        """(instance type, zone, ``reserved``) of every reservation with no room left."""
        left = self._reservations_left()
        if not left:
            return set()  # a catalog without reservations (the usual one)
        return {
            (instance_type.name, offering.zone, offering.capacity_type)
            for instance_type in self.catalog.instance_types
            for offering in instance_type.offerings
            if offering.reservation is not None and left.get(offering.reservation.id, 0) <= 0
        }

    def _reservations_left(self) -> dict[str, int]:
        """Room left in each capacity reservation: its size less the instances (launching
        or running) in it."""
        left = self.catalog.reservations()
        if not left:
            return left
        for entry in self.ledger.entries():
            reservation = entry.instance.labels.get(RESERVATION_ID_LABEL)
            if reservation in left:
                left[reservation] -= 1
        return left

    # -- instances ----------------------------------------------------------------------------

    def launch(self, request: LaunchRequest) -> Instance | LaunchResult:
        """Buy the cheapest compatible offering; the Node registers after the delay.

        A repeated launch for the same idempotency key returns the instance already running.
        Compatible offerings passed over for lack of capacity are reported with it.
        """
        self.faults.check_api("launch")
        self.faults.crash_point("launch.before")
        existing = self.ledger.by_idempotency_key(request.idempotency_key)
        if existing is None and self.adopt():
            existing = self.ledger.by_idempotency_key(request.idempotency_key)
        if existing is not None:
            return existing.instance
        ready = find_condition(request.node_class.status.conditions, "Ready")
        if ready is not None and ready.status == "False":
            raise NodeClassNotReadyError(
                f"KWOKNodeClass {request.node_class.name!r} is not ready: {ready.message or ''}"
            )
        quota = self.faults.instance_quota
        if quota is not None and len(self.ledger.entries()) >= quota:
            raise LaunchError(
                "QuotaExceeded", f"kwok: instance quota of {quota} running instances reached"
            )
        node_claim = request.node_claim
        node_name = node_claim.name
        if self.ledger.by_provider_id(provider_id(node_name)) is not None:
            raise LaunchError(
                "NameConflict", f"kwok: an instance named {node_name!r} is already running"
            )
        full = self._full_reservations()

        def lacks_capacity(instance_type: str, zone: str, capacity_type: str) -> bool:
            # A full reservation fails the launch like an ICE, so the core stops offering it.
            return (
                instance_type,
                zone,
                capacity_type,
            ) in full or self.faults.launch_lacks_capacity(instance_type, zone, capacity_type)

        instance_type, offering, exhausted = cheapest_offering(
            request.instance_types, request.requirements, lacks_capacity
        )
        now = self.clock.now()
        instance = Instance(
            provider_id=provider_id(node_name),
            node_claim=node_name,
            node_pool=node_claim.metadata.labels.get(NODEPOOL_LABEL, ""),
            node_class=request.node_class.name,
            instance_type=instance_type.name,
            zone=offering.zone,
            capacity_type=offering.capacity_type,
            price=offering.price,
            created_at=now,
            labels=instance_labels(instance_type, offering, request.requirements, node_name),
            capacity=dict(instance_type.capacity),
            allocatable=instance_type.allocatable(),
            state=PENDING,
        )
        self.ledger.record(
            LedgerEntry(
                instance=instance,
                idempotency_key=request.idempotency_key,
                registers_at=now + self._registration_delay(request.node_class),
                node_labels=_node_claim_labels(node_claim, request.node_class),
                node_annotations=dict(node_claim.metadata.annotations),
            )
        )
        log.info(
            "kwok: launched %s (%s, %s, %s) for NodeClaim %s",
            instance.provider_id,
            instance.instance_type,
            instance.zone,
            instance.capacity_type,
            node_name,
        )
        self.faults.crash_point("launch.after")
        if exhausted:
            # Like a fleet that bought one type and found no capacity for cheaper ones.
            return LaunchResult(instance, exhausted)
        return instance

    def get(self, provider_id: str) -> Instance:
        self.faults.check_api("get")
        entry = self._live(provider_id)
        if entry is None:
            raise InstanceNotFoundError(f"kwok: no instance {provider_id!r}")
        return entry.instance

    def list_instances(self) -> Sequence[Instance]:
        self.faults.check_api("list")
        self.adopt()
        return self.ledger.instances()

    def delete(self, provider_id: str) -> None:
        """Terminate at once: remove the Node and mark the instance terminated."""
        self.faults.check_api("delete")
        entry = self._live(provider_id)
        if entry is None:
            raise InstanceNotFoundError(f"kwok: no instance {provider_id!r}")
        self.faults.crash_point("delete.before")
        if entry.state == RUNNING:
            node = self.cluster.get(Node, entry.node_name)
            if node is not None and node.spec.provider_id == provider_id:
                self.cluster.delete(Node, entry.node_name)
        entry.set_state(TERMINATED)
        log.info("kwok: terminated %s", provider_id)
        self.faults.crash_point("delete.after")

    def _live(self, provider_id: str) -> LedgerEntry | None:
        """The live instance, adopting it from its Node when another process launched it."""
        entry = self.ledger.by_provider_id(provider_id)
        if entry is None and not self.ledger.knows(provider_id) and self.adopt():
            entry = self.ledger.by_provider_id(provider_id)
        return entry

    # -- labels and drift -----------------------------------------------------------------------

    def node_labels(self, node_claim: NodeClaim, instance: Instance) -> Mapping[str, str] | None:
        """The ``karpenter.kwok.sh/*`` labels, for this provider's instances only."""
        if self._live(instance.provider_id) is None:
            return None
        return {k: v for k, v in instance.labels.items() if k in INSTANCE_LABELS}

    def is_drifted(self, node_claim: NodeClaim, node_class: NodeClass) -> str | None:
        return None

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return REPAIR_POLICIES

    # -- background work ----------------------------------------------------------------------

    def reconcile(self, now: datetime) -> timedelta:
        """Register Nodes whose time has come and, when managing nodes, play kubelet."""
        for entry in self.ledger.entries():
            if entry.state == PENDING and entry.registers_at <= now:
                self._register(entry, now)
        if self.settings.manage_nodes:
            self._run_kubelets(now)
        wait = DEFAULT_RECONCILE_PERIOD
        if self.settings.manage_nodes:
            wait = self.settings.kubelet_period
            if self._keep_leases:  # every Lease is renewed before it runs out
                return min(wait, heartbeat.RENEW_INTERVAL)
        registration: timedelta | None = None
        for entry in self.ledger.entries():
            if entry.state == PENDING:
                # an overdue entry failed to register just now: retry, but do not spin
                due = entry.registers_at - now
                due = due if due > timedelta(0) else REGISTRATION_RETRY
                registration = due if registration is None else min(registration, due)
        if registration is not None and registration <= wait:
            return registration
        # The kubelets act on what changed; only a registration falls due by time.
        return Poll(wait, registration)

    def _registration_delay(self, node_class: NodeClass) -> timedelta:
        delay = self.settings.registration_delay
        if delay is None and isinstance(node_class, KWOKNodeClass):
            delay = node_class.spec.registration_delay()
        return (delay or timedelta(0)) + self.faults.registration_latency()

    def _register(self, entry: LedgerEntry, now: datetime) -> None:
        existing = self.cluster.get(Node, entry.node_name)
        if existing is not None:
            if existing.spec.provider_id == entry.instance.provider_id:
                entry.set_state(RUNNING)  # registered before a restart or a lost write
            else:
                log.warning(
                    "kwok: cannot register %s: Node %s exists with providerID %s",
                    entry.instance.provider_id,
                    entry.node_name,
                    existing.spec.provider_id,
                )
            return
        extra = {}
        if entry.instance.node_pool:
            extra[NODEPOOL_LABEL] = entry.instance.node_pool
        node = kubelet.build_node(entry, extra, now, ready=self.settings.manage_nodes)
        self.faults.crash_point("register.before")
        try:
            created = self.cluster.create(node)
        except Exception:  # retried on the next pass, like a kubelet retrying registration
            log.exception("kwok: registering Node %s failed", entry.node_name)
            return
        self.faults.crash_point("register.after")
        entry.set_state(RUNNING)
        self._publish_devices(created, entry.instance.instance_type)

    def _publish_devices(self, node: Node, instance_type: str) -> None:
        """Publish the node's DRA devices, as its drivers would once it runs: the slices of
        its instance type's templates, owned by the Node."""
        offered = self.catalog.get(instance_type)
        if offered is None or not offered.dynamic_resources:
            return
        for resource_slice in node_slices(
            node.name, node.metadata.uid or "", offered.dynamic_resources
        ):
            try:
                self.cluster.create(resource_slice)
            except Exception as error:  # refused: the node stays, its devices unpublished
                log.warning(
                    "kwok: publishing ResourceSlice %s failed: %s", resource_slice.name, error
                )

    def _run_kubelets(self, now: datetime) -> None:
        """Keep the running instances' Nodes Ready (and their Leases renewed on a real control
        plane) and start the pods bound to them, looking only at what changed."""
        changes = self._changes.drain() if self._changes is not None else []
        running = {
            e.node_name: e.instance.provider_id for e in self.ledger.entries() if e.state == RUNNING
        }
        if not running:
            self._emulated = set()
            return
        state = self.cluster.state
        fresh = running.keys() - self._emulated
        if self._keep_leases:
            names: Iterable[str] = sorted(running)  # every Lease is renewed in time
        else:
            changed = {c.key[1] for c in changes if c.kind is Node}
            names = sorted((changed & running.keys()) | fresh)
        emulated = set()
        for name in names:
            node = state.get(Node, ("", name))
            if node is None or running.get(node.name) != node.spec.provider_id or node.deleting:
                continue
            emulated.add(node.name)
            if self._keep_leases:
                leased = self._leases.renew(self.cluster, node, now)
                every = heartbeat.STATUS_REPORT_INTERVAL if leased else heartbeat.RENEW_INTERVAL
                due = kubelet.heartbeat_due(node, now, every)
            else:
                due = False
            if kubelet.node_needs_ready(node) or due:
                ready = node.status_copy()
                kubelet.post_heartbeat(ready, now)
                self._write_status(ready)
        if self._keep_leases:
            self._leases.forget_all_but(emulated)
        self._emulated = {name for name in running if state.get(Node, ("", name)) is not None}
        pods: dict[tuple[str, str], Pod] = {}
        for change in changes:
            if isinstance(change.new, Pod) and change.new.spec.node_name in running:
                pods[change.key] = change.new
        for name in fresh:
            pods.update(state.pods_on(name))
        for key in sorted(pods):
            pod = pods[key]
            if kubelet.pod_needs_start(pod):
                started = pod.status_copy()
                kubelet.mark_pod_running(started, now)
                self._write_status(started)

    def _write_status(self, obj: Node | Pod) -> None:
        try:
            self.cluster.update_status(obj)
        except Exception:  # stale or gone: the next pass reads it again
            log.debug("kwok: status update of %s %s failed", obj.kind, obj.key, exc_info=True)


def _with_room(offerings: Sequence[Offering], room: Mapping[str, int]) -> tuple[Offering, ...]:
    """``offerings`` with each reservation's capacity set to the ``room`` left in it; a full
    reservation's offering is unavailable."""
    result = []
    for offering in offerings:
        reservation = offering.reservation
        if reservation is None:
            result.append(offering)
            continue
        left = max(0, room.get(reservation.id, 0))
        result.append(
            replace(
                offering,
                available=offering.available and left > 0,
                reservation=replace(reservation, capacity=left),
            )
        )
    return tuple(result)


def _node_claim_labels(node_claim: NodeClaim, node_class: NodeClass) -> dict[str, str]:
    """The NodeClaim's labels and single-valued ``In`` requirements, as Karpenter's KWOK
    copies them onto the Node, plus the NodeClass label that marks the Node as managed."""
    labels = dict(node_claim.metadata.labels)
    requirements = Requirements.of(
        *((r.key, r.operator, r.values) for r in node_claim.spec.requirements)
    )
    labels.update(requirements.labels())
    labels[node_class_label(GROUP, KWOKNodeClass.KIND)] = node_class.name
    return labels
