"""NodeClaim lifecycle: finalizer, launch, registration, initialization, liveness, the
consistency check, and the finalizer's work on deletion (termination deadline, node gone,
instance gone, then the NodeClaim goes).

Every step is idempotent and driven by what the cluster and the provider say now, so a crash
at any point leaves state the next pass repairs: launch is keyed by the NodeClaim's identity,
and a NodeClaim deleted before its launch was recorded still finds and deletes its instance.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from nodewright import metrics
from nodewright.api.core import Node, Taint
from nodewright.api.duration import DurationError, parse_duration
from nodewright.api.karpenter import (
    CONDITION_INITIALIZED,
    CONDITION_INSTANCE_TERMINATING,
    CONDITION_LAUNCHED,
    CONDITION_READY,
    CONDITION_REGISTERED,
    NodeClaim,
)
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    DO_NOT_SYNC_TAINTS_LABEL,
    INITIALIZED_LABEL,
    INSTANCE_TYPE_LABEL,
    KNOWN_EPHEMERAL_TAINTS,
    NODEPOOL_LABEL,
    REGISTERED_LABEL,
    TERMINATION_FINALIZER,
    TERMINATION_TIMESTAMP_ANNOTATION,
    UNREGISTERED_TAINT_KEY,
    ZONE_LABEL,
)
from nodewright.api.meta import OwnerReference, find_condition, is_true, set_condition
from nodewright.api.nodeoverlay import RESTRICTED_CAPACITY
from nodewright.api.quantity import format_quantity
from nodewright.api.timestamps import format_timestamp
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ConflictError, NotFoundError
from nodewright.cluster.objects import mutable
from nodewright.controllers.catalog import Catalog, NodeClassNotFoundError
from nodewright.controllers.events import WARNING, EventRecorder
from nodewright.controllers.templates import requirements_from_api
from nodewright.controllers.workqueue import RESYNC_PERIOD, WorkQueue
from nodewright.logfields import duration, fields, ref
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    InsufficientCapacityError,
    LaunchError,
    NodeClassNotReadyError,
    PluginError,
    TemporaryProviderError,
    UnknownNodeClassError,
)
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import LaunchRequest
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import ResourceList, format_resources, parse_resources

log = logging.getLogger("nodewright.nodeclaim.lifecycle")

LAUNCH_TIMEOUT = timedelta(minutes=5)
REGISTRATION_TIMEOUT = timedelta(minutes=15)
RETRY = timedelta(seconds=5)
POLL = timedelta(seconds=1)
#: How often an initialized NodeClaim's Node is compared with what was launched.
CONSISTENCY_SCAN_PERIOD = timedelta(minutes=10)
#: A Node with less than this share of a requested resource's expected capacity is flagged.
CONSISTENCY_THRESHOLD = 0.9

#: Steps further away than this are not scheduled (a registered claim never times out).
FOREVER = timedelta(days=3650)

CONDITION_CONSISTENT_STATE_FOUND = "ConsistentStateFound"
#: The conditions every NodeClaim carries from its first reconcile, Unknown until decided.
_LIFECYCLE_CONDITIONS = (
    CONDITION_LAUNCHED,
    CONDITION_REGISTERED,
    CONDITION_INITIALIZED,
    CONDITION_READY,
)


class NodeClaimLifecycle:
    name = "nodeclaim.lifecycle"

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        events: EventRecorder,
    ) -> None:
        self._cluster = cluster
        self._host = host
        self._catalog = catalog
        self._clock = clock
        self._events = events
        #: NodeClaim uid → when its consistency was last checked.
        self._consistency_scans: dict[str, datetime] = {}
        #: NodeClaims whose claim or Node changed, or whose next step falls due.
        self._queue: WorkQueue[str] = WorkQueue(self.name)
        self._changes = cluster.state.feed(NodeClaim, Node)
        self._resync_at: datetime | None = None

    def reconcile(self) -> timedelta | None:
        state = self._cluster.state
        now = self._clock.now()
        if self._resync_at is None or now >= self._resync_at:
            # Everything now and then, as an informer's resync: it must find nothing new.
            for every in state.sorted(NodeClaim):
                self._queue.add(every.name)
            self._resync_at = now + RESYNC_PERIOD
        for change in self._changes.drain():
            if change.kind is NodeClaim:
                self._queue.add(change.key[1])
                continue
            for node in (change.old, change.new):  # a Node: wake its NodeClaim
                provider_id = node.spec.provider_id if isinstance(node, Node) else None
                owner = state.claim_by_provider_id(provider_id) if provider_id else None
                if owner is not None:
                    self._queue.add(owner.name)
        for name in sorted(self._queue.pop_ready(now)):
            stored = state.get(NodeClaim, ("", name))
            if stored is None:
                continue
            try:
                after = self._reconcile(mutable(stored))
            except (ConflictError, NotFoundError):
                after = timedelta(0)  # someone else wrote it first; look again next pass
            if after is not None and after < FOREVER:
                self._queue.add_at(name, now + after)
        live = {claim.metadata.uid for claim in state.objects(NodeClaim).values()}
        if len(self._consistency_scans) > len(live):
            for uid in [uid for uid in self._consistency_scans if uid not in live]:
                del self._consistency_scans[uid]
        due = min(d for d in (self._queue.next_due(), self._resync_at) if d is not None)
        return max(due - now, timedelta(0))

    def resync(self) -> None:
        self._resync_at = None

    def _reconcile(self, claim: NodeClaim) -> timedelta | None:
        found = self._cluster.state.nodes_with_provider_id(claim.status.provider_id or "")
        if claim.deleting:
            return self._finalize(claim, found)
        if TERMINATION_FINALIZER not in claim.metadata.finalizers:
            claim.metadata.finalizers.append(TERMINATION_FINALIZER)
            claim = mutable(self._cluster.update(claim))
        claim = self._initialize_conditions(claim)
        timeout = self._liveness(claim)
        if timeout is None:
            return None  # deleted for taking too long
        conditions = claim.status.conditions
        if not is_true(conditions, CONDITION_LAUNCHED):
            return _sooner_requeue(self._launch(claim), timeout)
        found = self._cluster.state.nodes_with_provider_id(claim.status.provider_id or "")
        if not is_true(conditions, CONDITION_REGISTERED):
            return _sooner_requeue(self._register(claim, found), timeout)
        node = found[0] if len(found) == 1 else None
        if node is None:
            return None
        if not is_true(conditions, CONDITION_INITIALIZED):
            return self._initialize(claim, node)
        return self._check_consistency(claim, node)

    def _initialize_conditions(self, claim: NodeClaim) -> NodeClaim:
        """Give a new NodeClaim its lifecycle conditions, Unknown until each step decides.

        The timeouts count from these conditions' transition times, as Karpenter's do.
        """
        missing = [
            kind
            for kind in _LIFECYCLE_CONDITIONS
            if find_condition(claim.status.conditions, kind) is None
        ]
        if not missing:
            return claim
        now = self._clock.now()
        for kind in missing:
            set_condition(
                claim.status.conditions,
                kind,
                "Unknown",
                now,
                reason="AwaitingReconciliation",
                message="object is awaiting reconciliation",
            )
        return mutable(self._cluster.update_status(claim))

    # -- liveness -----------------------------------------------------------------------------

    def _liveness(self, claim: NodeClaim) -> timedelta | None:
        """Delete a NodeClaim that did not launch or register in time.

        Returns how long until the next timeout could strike (``timedelta.max`` once the
        NodeClaim is registered), or None when the NodeClaim was deleted.
        """
        conditions = claim.status.conditions
        if is_true(conditions, CONDITION_REGISTERED):
            return timedelta.max
        now = self._clock.now()
        created = claim.metadata.creation_timestamp or now
        checks = [(CONDITION_REGISTERED, REGISTRATION_TIMEOUT, "registration_timeout")]
        if not is_true(conditions, CONDITION_LAUNCHED):
            checks.insert(0, (CONDITION_LAUNCHED, LAUNCH_TIMEOUT, "launch_timeout"))
        remaining = timedelta.max
        for kind, timeout, reason in checks:
            condition = find_condition(conditions, kind)
            since = (condition.last_transition_time if condition else None) or created
            left = since + timeout - now
            if left <= timedelta(0):
                log.info(
                    "terminating due to timeout",
                    extra=fields(
                        NodeClaim=ref(claim.name), timeout=duration(timeout), reason=reason
                    ),
                )
                self._cluster.delete(NodeClaim, claim.name)
                return None
            remaining = min(remaining, left)
        return remaining

    # -- launch -------------------------------------------------------------------------------

    def _launch(self, claim: NodeClaim) -> timedelta | None:
        now = self._clock.now()
        try:
            node_class = self._catalog.node_class(claim.spec.node_class_ref)
            requirements = requirements_from_api(claim.spec.requirements)
            catalog = self._catalog.pool_instance_types(
                node_class, claim.metadata.labels.get(NODEPOOL_LABEL)
            )
            options = _launch_options(catalog, requirements)
            if not options:
                raise InsufficientCapacityError(
                    "all requested instance types were unavailable during launch"
                )
            launched = self._host.launch_result(
                LaunchRequest(claim, node_class, tuple(options), requirements)
            )
        except InsufficientCapacityError as error:
            for instance_type, zone, capacity_type in error.offerings:
                self._catalog.mark_unavailable(instance_type, zone, capacity_type, error.ttl)
            self._events.publish(
                claim,
                "InsufficientCapacityError",
                f"NodeClaim {claim.name} event: creating nodeclaim, insufficient capacity, {error}",
                WARNING,
            )
            log.warning("Deleting nodeclaim %s: insufficient capacity, %s", claim.name, error)
            self._cluster.delete(NodeClaim, claim.name)
            return None
        except (NodeClassNotReadyError, NodeClassNotFoundError, UnknownNodeClassError) as error:
            self._events.publish(claim, "NodeClassNotReady", str(error), WARNING)
            log.warning("Deleting nodeclaim %s: %s", claim.name, error)
            self._cluster.delete(NodeClaim, claim.name)
            return None
        except LaunchError as error:
            return self._launch_failed(claim, error.reason, error.message)
        except TemporaryProviderError as error:
            self._launch_failed(claim, "LaunchFailed", str(error))
            return error.delay
        except PluginError as error:
            return self._launch_failed(claim, "LaunchFailed", str(error))

        instance = launched.instance
        for instance_type, zone, capacity_type in launched.unavailable_offerings:
            self._catalog.mark_unavailable(
                instance_type, zone, capacity_type, launched.unavailable_ttl
            )
        labels = dict(instance.labels)
        labels.update(
            {
                INSTANCE_TYPE_LABEL: instance.instance_type,
                ZONE_LABEL: instance.zone,
                CAPACITY_TYPE_LABEL: instance.capacity_type,
            }
        )
        labels.update(claim.metadata.labels)
        annotations = {**claim.metadata.annotations, **instance.annotations}
        if labels != claim.metadata.labels or annotations != claim.metadata.annotations:
            claim.metadata.labels = labels
            claim.metadata.annotations = annotations
            claim = mutable(self._cluster.update(claim))
        claim.status.provider_id = instance.provider_id
        claim.status.image_id = instance.image_id or None
        extended = _overlaid_resources(options, instance.instance_type)
        claim.status.capacity = format_resources({**instance.capacity, **extended})
        claim.status.allocatable = format_resources({**instance.allocatable, **extended})
        set_condition(claim.status.conditions, CONDITION_LAUNCHED, "True", now)
        _set_ready(claim, now)
        self._cluster.update_status(claim)
        log.info(
            "launched nodeclaim",
            extra=fields(
                {
                    "NodeClaim": ref(claim.name),
                    "provider-id": instance.provider_id,
                    "instance-type": instance.instance_type,
                    "zone": instance.zone,
                    "capacity-type": instance.capacity_type,
                    "allocatable": claim.status.allocatable,
                }
            ),
        )
        return timedelta(0)

    def _launch_failed(self, claim: NodeClaim, reason: str, message: str) -> timedelta:
        now = self._clock.now()
        if set_condition(
            claim.status.conditions,
            CONDITION_LAUNCHED,
            "Unknown",
            now,
            reason=reason,
            message=message,
        ):
            _set_ready(claim, now)
            self._cluster.update_status(claim)
            self._events.publish(claim, reason, message, WARNING)
            log.error("Launching nodeclaim %s failed: %s", claim.name, message)
        return RETRY

    # -- registration and initialization -------------------------------------------------------

    def _register(self, claim: NodeClaim, found: list[Node]) -> timedelta | None:
        now = self._clock.now()
        if len(found) > 1:
            if set_condition(
                claim.status.conditions,
                CONDITION_REGISTERED,
                "False",
                now,
                reason="MultipleNodesFound",
                message="Invariant violated, matched multiple nodes",
            ):
                _set_ready(claim, now)
                self._cluster.update_status(claim)
            return None
        node = found[0] if found else None
        if node is None:
            if set_condition(
                claim.status.conditions,
                CONDITION_REGISTERED,
                "Unknown",
                now,
                reason="NodeNotFound",
                message="Node not registered with cluster",
            ):
                _set_ready(claim, now)
                self._cluster.update_status(claim)
            return None  # the Node's arrival is a change that wakes this controller
        if (
            not any(
                t.key == UNREGISTERED_TAINT_KEY and t.effect == "NoExecute"
                for t in node.spec.taints
            )
            and node.metadata.labels.get(REGISTERED_LABEL) != "true"
        ):
            self._events.publish(
                claim,
                "UnregisteredTaintMissing",
                f"Missing {UNREGISTERED_TAINT_KEY} taint which prevents registration related "
                "race conditions on Karpenter-managed nodes",
                WARNING,
            )
        node = mutable(node)
        labels = dict(node.metadata.labels)
        labels.update(claim.metadata.labels)
        labels.update(self._provider_labels(claim))
        labels[REGISTERED_LABEL] = "true"
        node.metadata.labels = labels
        node.metadata.annotations = {**node.metadata.annotations, **claim.metadata.annotations}
        if TERMINATION_FINALIZER not in node.metadata.finalizers:
            node.metadata.finalizers.append(TERMINATION_FINALIZER)
        if not any(ref.uid == claim.metadata.uid for ref in node.metadata.owner_references):
            node.metadata.owner_references.append(
                OwnerReference(
                    api_version=claim.api_version,
                    kind=claim.kind,
                    name=claim.name,
                    uid=claim.metadata.uid or "",
                    block_owner_deletion=True,
                )
            )
        taints = [t for t in node.spec.taints if t.key != UNREGISTERED_TAINT_KEY]
        if node.metadata.labels.get(DO_NOT_SYNC_TAINTS_LABEL) != "true":
            present = {(t.key, t.effect) for t in taints}
            for taint in [*claim.spec.taints, *claim.spec.startup_taints]:
                if (taint.key, taint.effect) not in present:
                    taints.append(Taint(key=taint.key, value=taint.value, effect=taint.effect))
                    present.add((taint.key, taint.effect))
        node.spec.taints = taints
        self._cluster.update(node)
        claim.status.node_name = node.name
        set_condition(claim.status.conditions, CONDITION_REGISTERED, "True", now)
        _set_ready(claim, now)
        self._cluster.update_status(claim)
        log.info(
            "registered nodeclaim", extra=fields(NodeClaim=ref(claim.name), Node=ref(node.name))
        )
        metrics.nodes_created.labels(claim.metadata.labels.get(NODEPOOL_LABEL, "")).inc()
        return timedelta(0)

    def _provider_labels(self, claim: NodeClaim) -> dict[str, str]:
        try:
            provider = self._catalog.provider_name(claim.spec.node_class_ref)
            instance = self._host.get(provider, claim.status.provider_id or "")
            return self._host.node_labels(claim, instance)
        except (PluginError, InstanceNotFoundError, UnknownNodeClassError) as error:
            log.warning("No provider labels for nodeclaim %s: %s", claim.name, error)
            return {}

    def _initialize(self, claim: NodeClaim, node: Node) -> timedelta | None:
        now = self._clock.now()
        reason, message = _not_initialized(claim, node)
        if reason:
            if set_condition(
                claim.status.conditions,
                CONDITION_INITIALIZED,
                "Unknown",
                now,
                reason=reason,
                message=message,
            ):
                self._cluster.update_status(claim)
            return None
        if node.metadata.labels.get(INITIALIZED_LABEL) != "true":
            node = mutable(node)
            node.metadata.labels[INITIALIZED_LABEL] = "true"
            self._cluster.update(node)
        set_condition(claim.status.conditions, CONDITION_INITIALIZED, "True", now)
        _set_ready(claim, now)
        self._cluster.update_status(claim)
        log.info(
            "initialized nodeclaim",
            extra=fields(
                NodeClaim=ref(claim.name), Node=ref(node.name), allocatable=node.status.allocatable
            ),
        )
        return None

    # -- consistency --------------------------------------------------------------------------

    def _check_consistency(self, claim: NodeClaim, node: Node) -> timedelta | None:
        """Flag a Node that came up with much less of a requested resource than launched.

        Runs once per scan period per NodeClaim, as Karpenter's consistency controller does.
        """
        now = self._clock.now()
        uid = claim.metadata.uid or claim.name
        last = self._consistency_scans.get(uid)
        if last is not None and now - last < CONSISTENCY_SCAN_PERIOD:
            return last + CONSISTENCY_SCAN_PERIOD - now
        self._consistency_scans[uid] = now
        issues = _shape_issues(claim, node)
        for issue in issues:
            log.info(
                "failed consistency check", extra=fields(NodeClaim=ref(claim.name), issue=issue)
            )
            self._events.publish(claim, "FailedConsistencyCheck", issue, WARNING)
        if issues:
            changed = set_condition(
                claim.status.conditions,
                CONDITION_CONSISTENT_STATE_FOUND,
                "False",
                now,
                reason="ConsistencyCheckFailed",
                message="Consistency Check Failed",
            )
        else:
            changed = not is_true(
                claim.status.conditions, CONDITION_CONSISTENT_STATE_FOUND
            ) and set_condition(
                claim.status.conditions, CONDITION_CONSISTENT_STATE_FOUND, "True", now
            )
        if changed:
            self._cluster.update_status(claim)
        return CONSISTENCY_SCAN_PERIOD

    # -- deletion -----------------------------------------------------------------------------

    def _finalize(self, claim: NodeClaim, nodes: list[Node]) -> timedelta | None:
        """The termination finalizer: set the drain deadline, have the Node terminated, then
        delete the instance until the provider reports it gone, then let the NodeClaim go."""
        if TERMINATION_FINALIZER not in claim.metadata.finalizers:
            return None
        claim = self._annotate_termination_deadline(claim)
        if nodes:
            for node in nodes:
                if not node.deleting:
                    self._cluster.delete(Node, node.name)
            return POLL  # the node's own termination drains it and deletes the instance
        try:
            provider = self._catalog.provider_name(claim.spec.node_class_ref)
            if not self._instances_gone(claim, provider):
                now = self._clock.now()
                if set_condition(
                    claim.status.conditions, CONDITION_INSTANCE_TERMINATING, "True", now
                ):
                    self._cluster.update_status(claim)
                return RETRY
        except (PluginError, TemporaryProviderError) as error:
            log.error("Deleting the instance of nodeclaim %s failed: %s", claim.name, error)
            return RETRY
        except UnknownNodeClassError as error:
            # Without a provider nothing can be deleted; keep the finalizer so nothing leaks.
            log.error("Cannot delete the instance of nodeclaim %s: %s", claim.name, error)
            return RETRY
        claim.metadata.finalizers = [
            f for f in claim.metadata.finalizers if f != TERMINATION_FINALIZER
        ]
        self._cluster.update(claim)
        log.info(
            "deleted nodeclaim",
            extra=fields(
                {
                    "NodeClaim": ref(claim.name),
                    "Node": ref(claim.status.node_name or ""),
                    "provider-id": claim.status.provider_id or "",
                }
            ),
        )
        metrics.nodeclaims_terminated.labels(
            claim.metadata.labels.get(NODEPOOL_LABEL, ""),
            claim.metadata.labels.get(CAPACITY_TYPE_LABEL, ""),
        ).inc()
        return None

    def _annotate_termination_deadline(self, claim: NodeClaim) -> NodeClaim:
        """Record when draining stops waiting (deletion time + terminationGracePeriod).

        Written once: the Node's termination reads it, and a restart must not move it.
        """
        annotations = claim.metadata.annotations
        deleted = claim.metadata.deletion_timestamp
        grace = claim.spec.termination_grace_period
        if TERMINATION_TIMESTAMP_ANNOTATION in annotations or grace is None or deleted is None:
            return claim
        try:
            deadline = deleted + parse_duration(grace)
        except DurationError as error:
            log.error("nodeclaim %s: invalid terminationGracePeriod: %s", claim.name, error)
            return claim
        stamp = format_timestamp(deadline)
        annotations[TERMINATION_TIMESTAMP_ANNOTATION] = stamp
        claim = mutable(self._cluster.update(claim))
        log.info(
            "annotated nodeclaim",
            extra=fields({"NodeClaim": ref(claim.name), TERMINATION_TIMESTAMP_ANNOTATION: stamp}),
        )
        self._events.publish(
            claim, "TerminationGracePeriodExpiring", f"All pods will be deleted by {stamp}", WARNING
        )
        return claim

    def _instances_gone(self, claim: NodeClaim, provider: str) -> bool:
        """Ask the provider to delete the claim's instance; True once it reports it gone.

        A NodeClaim whose provider ID was never recorded (a crash between launch and the
        status write) is matched to instances by name, so the instance cannot leak.
        """
        ids = (
            [claim.status.provider_id]
            if claim.status.provider_id
            else [
                i.provider_id
                for i in self._host.list_instances(provider)
                if i.node_claim == claim.name
            ]
        )
        gone = True
        for provider_id in ids:
            try:
                self._host.delete(provider, provider_id)
                gone = False
            except InstanceNotFoundError:
                continue
        return gone


def _sooner_requeue(first: timedelta | None, second: timedelta | None) -> timedelta | None:
    """The sooner of two requeue delays, ignoring None and ``timedelta.max`` (no deadline)."""
    waits = [w for w in (first, second) if w is not None and w != timedelta.max]
    return min(waits, default=None)


def _shape_issues(claim: NodeClaim, node: Node) -> list[str]:
    """Requested resources the Node has less than 90% of the launched capacity of."""
    issues: list[str] = []
    expected_capacity = parse_resources(claim.status.capacity)
    node_capacity = parse_resources(node.status.capacity)
    for name, requested in sorted(parse_resources(claim.spec.resources.requests).items()):
        expected = expected_capacity.get(name, 0)
        if requested == 0 or expected == 0:
            continue
        found = node_capacity.get(name, 0)
        share = found / expected
        if share < CONSISTENCY_THRESHOLD:
            issues.append(
                f"expected {format_quantity(expected, name)} of resource {name}, but found "
                f"{format_quantity(found, name)} ({share * 100:0.1f}% of expected)"
            )
    return issues


def _launch_options(
    instance_types: list[InstanceType], requirements: Requirements
) -> list[InstanceType]:
    """The NodeClaim's instance types, with only compatible available offerings, cheapest first."""
    options: list[tuple[float, InstanceType]] = []
    for instance_type in instance_types:
        # The claim's instance-type requirement is one of the keys checked here.
        if instance_type.requirements.intersects(requirements):
            continue
        offerings = tuple(
            o for o in instance_type.offerings if o.available and o.matches(requirements)
        )
        if offerings:
            price = min(o.price for o in offerings)
            options.append((price, instance_type.with_offerings(offerings)))
    options.sort(key=lambda item: (item[0], item[1].name))
    return [it for _, it in options]


def _not_initialized(claim: NodeClaim, node: Node) -> tuple[str, str]:
    if not node.ready:
        return "NodeNotReady", "Node status is NotReady"
    present = {(t.key, t.effect) for t in node.spec.taints}
    for taint in claim.spec.startup_taints:
        if (taint.key, taint.effect) in present:
            return "StartupTaintsExist", f"StartupTaint {taint.key}:{taint.effect} still exists"
    for key, effect in KNOWN_EPHEMERAL_TAINTS:
        if (key, effect) in present:
            return "KnownEphemeralTaintsExist", f"KnownEphemeralTaint {key}:{effect} still exists"
    allocatable = parse_resources(node.status.allocatable)
    for name, value in parse_resources(claim.spec.resources.requests).items():
        if value > 0 and allocatable.get(name, 0) == 0:
            return "ResourceNotRegistered", f"Resource {name} was requested but not registered"
    return "", ""


def _set_ready(claim: NodeClaim, now: datetime) -> None:
    conditions = claim.status.conditions
    ready = all(
        is_true(conditions, c)
        for c in (CONDITION_LAUNCHED, CONDITION_REGISTERED, CONDITION_INITIALIZED)
    )
    set_condition(
        conditions,
        CONDITION_READY,
        "True" if ready else "False",
        now,
        reason="Ready" if ready else "NotReady",
    )


def _overlaid_resources(options: Sequence[InstanceType], launched: str) -> ResourceList:
    """The extended resources NodeOverlays gave the launched type: Karpenter expects them on
    the node (a device plugin there registers them), so they are part of its capacity."""
    for instance_type in options:
        if instance_type.name == launched and instance_type.capacity_overlaid:
            return {
                name: value
                for name, value in instance_type.capacity.items()
                if name not in RESTRICTED_CAPACITY
            }
    return {}
