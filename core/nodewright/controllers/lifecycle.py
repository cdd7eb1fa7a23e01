"""NodeClaim lifecycle: finalizer, launch, registration, initialization, liveness, and the
finalizer's work on deletion (node gone, instance gone, then the NodeClaim goes).

Every step is idempotent and driven by what the cluster and the provider say now, so a crash
at any point leaves state the next pass repairs: launch is keyed by the NodeClaim's identity,
and a NodeClaim deleted before its launch was recorded still finds and deletes its instance.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from nodewright.api.core import Node, Taint
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
    REGISTERED_LABEL,
    TERMINATION_FINALIZER,
    UNREGISTERED_TAINT_KEY,
    ZONE_LABEL,
)
from nodewright.api.meta import OwnerReference, find_condition, is_true, set_condition
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ConflictError, NotFoundError
from nodewright.controllers.catalog import Catalog, NodeClassNotFoundError
from nodewright.controllers.events import WARNING, EventRecorder
from nodewright.controllers.templates import requirements_from_api
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
from nodewright.scheduling.resources import format_resources, parse_resources
from nodewright.scheduling.scheduler import offering_matches

log = logging.getLogger("nodewright.nodeclaim.lifecycle")

LAUNCH_TIMEOUT = timedelta(minutes=5)
REGISTRATION_TIMEOUT = timedelta(minutes=15)
RETRY = timedelta(seconds=5)
POLL = timedelta(seconds=1)


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

    def reconcile(self) -> timedelta | None:
        nodes = {n.spec.provider_id: n for n in self._cluster.list(Node) if n.spec.provider_id}
        wake: timedelta | None = None
        for claim in self._cluster.list(NodeClaim):
            try:
                after = self._reconcile(claim, nodes)
            except (ConflictError, NotFoundError):
                after = timedelta(0)  # someone else wrote it first; look again next pass
            if after is not None and (wake is None or after < wake):
                wake = after
        return wake

    def _reconcile(self, claim: NodeClaim, nodes: dict[str, Node]) -> timedelta | None:
        if claim.deleting:
            return self._finalize(claim, nodes)
        if TERMINATION_FINALIZER not in claim.metadata.finalizers:
            claim.metadata.finalizers.append(TERMINATION_FINALIZER)
            claim = self._cluster.update(claim)
        conditions = claim.status.conditions
        if not is_true(conditions, CONDITION_LAUNCHED):
            return self._launch(claim)
        node = nodes.get(claim.status.provider_id or "")
        if not is_true(conditions, CONDITION_REGISTERED):
            return self._register(claim, node)
        if node is not None and not is_true(conditions, CONDITION_INITIALIZED):
            return self._initialize(claim, node)
        return None

    # -- launch -------------------------------------------------------------------------------

    def _launch(self, claim: NodeClaim) -> timedelta | None:
        now = self._clock.now()
        created = claim.metadata.creation_timestamp or now
        if now - created >= LAUNCH_TIMEOUT:
            log.warning("Deleting nodeclaim %s: not launched within %s", claim.name, LAUNCH_TIMEOUT)
            self._cluster.delete(NodeClaim, claim.name)
            return None
        try:
            node_class = self._catalog.node_class(claim.spec.node_class_ref)
            requirements = requirements_from_api(claim.spec.requirements)
            options = _launch_options(self._catalog.instance_types(node_class), requirements)
            if not options:
                raise InsufficientCapacityError(
                    "all requested instance types were unavailable during launch"
                )
            instance = self._host.launch(
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

        labels = dict(instance.labels)
        labels.update(
            {
                INSTANCE_TYPE_LABEL: instance.instance_type,
                ZONE_LABEL: instance.zone,
                CAPACITY_TYPE_LABEL: instance.capacity_type,
            }
        )
        labels.update(claim.metadata.labels)
        if labels != claim.metadata.labels:
            claim.metadata.labels = labels
            claim = self._cluster.update(claim)
        claim.status.provider_id = instance.provider_id
        claim.status.image_id = instance.image_id or None
        claim.status.capacity = format_resources(instance.capacity)
        claim.status.allocatable = format_resources(instance.allocatable)
        set_condition(claim.status.conditions, CONDITION_LAUNCHED, "True", now)
        _set_ready(claim, now)
        self._cluster.update_status(claim)
        log.info(
            "Launched nodeclaim %s: instance type %s, zone %s, capacity type %s, $%.4f/h (%s)",
            claim.name,
            instance.instance_type,
            instance.zone,
            instance.capacity_type,
            instance.price,
            instance.provider_id,
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

    def _register(self, claim: NodeClaim, node: Node | None) -> timedelta | None:
        now = self._clock.now()
        if node is None:
            launched = find_condition(claim.status.conditions, CONDITION_LAUNCHED)
            since = (launched.last_transition_time if launched else None) or now
            if now - since >= REGISTRATION_TIMEOUT:
                log.warning(
                    "Deleting nodeclaim %s: no node registered within %s",
                    claim.name,
                    REGISTRATION_TIMEOUT,
                )
                self._cluster.delete(NodeClaim, claim.name)
                return None
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
        log.info("Registered nodeclaim %s (node %s)", claim.name, node.name)
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
            node.metadata.labels[INITIALIZED_LABEL] = "true"
            self._cluster.update(node)
        set_condition(claim.status.conditions, CONDITION_INITIALIZED, "True", now)
        _set_ready(claim, now)
        self._cluster.update_status(claim)
        log.info("Initialized nodeclaim %s (node %s)", claim.name, node.name)
        return None

    # -- deletion -----------------------------------------------------------------------------

    def _finalize(self, claim: NodeClaim, nodes: dict[str, Node]) -> timedelta | None:
        if TERMINATION_FINALIZER not in claim.metadata.finalizers:
            return None
        node = nodes.get(claim.status.provider_id or "")
        if node is not None:
            if not node.deleting:
                self._cluster.delete(Node, node.name)
            return POLL  # the node's own termination drains it first
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
        log.info("Deleted nodeclaim %s", claim.name)
        return None

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
            o for o in instance_type.offerings if o.available and offering_matches(o, requirements)
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
