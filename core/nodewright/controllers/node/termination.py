"""Node termination: a Node with nodewright's finalizer that is being deleted is tainted,
drained through the Eviction API (so PodDisruptionBudgets hold), waits for its volumes to
detach, has its instance deleted, and only then is released.

This is the one path every removal takes: a Node deleted by hand, a NodeClaim deleted by hand
or by disruption (its finalizer deletes the Node), expiration. The NodeClaim's
``karpenter.sh/nodeclaim-termination-timestamp`` annotation, when present, is the deadline
after which remaining pods are deleted regardless of PDBs and ``do-not-disrupt``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from nodewright import metrics
from nodewright.api.apps import VolumeAttachment
from nodewright.api.core import Node, PersistentVolumeClaim, Pod, Taint
from nodewright.api.duration import DurationError, parse_duration
from nodewright.api.karpenter import (
    CONDITION_DRAINED,
    CONDITION_INSTANCE_TERMINATING,
    NodeClaim,
)
from nodewright.api.labels import (
    DISRUPTED_TAINT_KEY,
    DO_NOT_DISRUPT_ANNOTATION,
    EXCLUDE_FROM_LB_LABEL,
    NODEPOOL_LABEL,
    TERMINATION_FINALIZER,
    TERMINATION_TIMESTAMP_ANNOTATION,
    ZONE_LABEL,
)
from nodewright.api.meta import KubeObject, copy_model, find_condition, set_condition
from nodewright.api.timestamps import parse_timestamp
from nodewright.clock import Clock
from nodewright.cluster import (
    Cluster,
    ClusterError,
    ConflictError,
    EvictionBlockedError,
    NotFoundError,
)
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import ClusterState
from nodewright.controllers.catalog import Catalog
from nodewright.controllers.events import WARNING, EventRecorder
from nodewright.controllers.state.cluster import is_terminal, owner_kind
from nodewright.controllers.workqueue import Resync, WorkQueue, wait_until
from nodewright.logfields import fields, ref
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    PluginError,
    TemporaryProviderError,
    UnknownNodeClassError,
)
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.pods import pod_tolerations
from nodewright.scheduling.taints import Taint as SchedulingTaint

log = logging.getLogger("nodewright.node.termination")

DRAIN_POLL = timedelta(seconds=1)
#: How often a terminating instance is asked to be deleted again.
INSTANCE_POLL = timedelta(seconds=5)
#: A drain completes no sooner than this after it started (Karpenter's MinDrainTime).
MIN_DRAIN_TIME = timedelta(seconds=5)
#: A pod this long past its deletion timestamp is stuck and no longer waited for.
STUCK_TERMINATING = timedelta(minutes=1)
#: The API server's default ``terminationGracePeriodSeconds``.
DEFAULT_POD_GRACE_SECONDS = 30
CRITICAL_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")

CONDITION_VOLUMES_DETACHED = "VolumesDetached"
#: Set by the disruption controller; names why a NodeClaim is being removed.
CONDITION_DISRUPTION_REASON = "DisruptionReason"

_DISRUPTED = SchedulingTaint(DISRUPTED_TAINT_KEY, "NoSchedule")


class NodeTermination:
    name = "node.termination"

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
        #: Nodes whose Node, NodeClaim, pods or volume attachments changed, or whose next
        #: drain step falls due.
        self._queue: WorkQueue[str] = WorkQueue(self.name)
        self._changes = cluster.state.feed(Node, NodeClaim, Pod, VolumeAttachment)
        self._resync = Resync()

    def reconcile(self) -> timedelta | None:
        state = self._cluster.state
        now = self._clock.now()
        if self._resync.due(now):
            for every in state.sorted(Node):
                if every.deleting:
                    self._queue.add(every.name)
        for change in self._changes.drain():
            for name in _node_names(state, change.kind, change.old, change.new):
                self._queue.add(name)
        for name in sorted(self._queue.pop_ready(now)):
            node = state.get(Node, ("", name))
            if node is None or not node.deleting:
                continue
            if TERMINATION_FINALIZER not in node.metadata.finalizers:
                continue
            claim = state.claim_for(node)
            try:
                after = self._terminate(
                    mutable(node),
                    sorted(state.pods_on(name).values(), key=lambda p: (p.namespace, p.name)),
                    None if claim is None else mutable(claim),
                    [a for a in state.sorted(VolumeAttachment) if a.spec.node_name == name],
                )
            except (ConflictError, NotFoundError):
                after = timedelta(0)
            if after is not None:
                self._queue.add_at(name, now + after)
        return wait_until(now, self._queue.next_due(), self._resync.at)

    def resync(self) -> None:
        self._resync.reset()

    def _terminate(
        self,
        node: Node,
        pods: list[Pod],
        claim: NodeClaim | None,
        attachments: list[VolumeAttachment],
    ) -> timedelta | None:
        if claim is not None and not claim.deleting:
            self._cluster.delete(NodeClaim, claim.name)
            deleting = self._cluster.get(NodeClaim, claim.name)
            claim = None if deleting is None else mutable(deleting)
        if not node.ready and claim is not None and self._instance_gone(claim):
            log.info("Instance of node %s is gone; releasing the node", node.name)
            self._release(node)
            return None
        deadline = self._deadline(node, claim)
        node = self._taint(node)
        stored = copy_model(claim.status) if claim is not None else None
        wait = self._await_drain(node, pods, claim, deadline)
        if wait is None:
            wait = self._await_volume_detachment(node, pods, claim, attachments, deadline)
        if wait is None and claim is not None:
            wait = self._await_instance_termination(claim)
        if claim is not None and stored is not None and claim.status != stored:
            self._cluster.update_status(claim)
        if wait is not None:
            return wait
        self._release(node)
        return None

    def _release(self, node: Node) -> None:
        node.metadata.finalizers = [
            f for f in node.metadata.finalizers if f != TERMINATION_FINALIZER
        ]
        self._cluster.update(node)
        log.info("deleted node", extra=fields(Node=ref(node.name)))
        pool = node.metadata.labels.get(NODEPOOL_LABEL, "")
        metrics.nodes_terminated.labels(pool, node.metadata.labels.get(ZONE_LABEL, "")).inc()
        if node.metadata.deletion_timestamp is not None:
            taken = self._clock.now() - node.metadata.deletion_timestamp
            metrics.nodes_termination_duration.labels(pool).observe(taken.total_seconds())

    def _instance_gone(self, claim: NodeClaim) -> bool:
        """True when the provider says the NodeClaim's instance no longer exists."""
        if not claim.status.provider_id:
            return False
        try:
            provider = self._catalog.provider_name(claim.spec.node_class_ref)
            self._host.get(provider, claim.status.provider_id)
        except InstanceNotFoundError:
            return True
        except (PluginError, TemporaryProviderError, UnknownNodeClassError) as error:
            log.warning("Cannot look up the instance of nodeclaim %s: %s", claim.name, error)
        return False

    def _deadline(self, node: Node, claim: NodeClaim | None) -> datetime | None:
        """The NodeClaim's termination deadline, announced on the Node while it stands."""
        if claim is None:
            return None
        stamp = claim.metadata.annotations.get(TERMINATION_TIMESTAMP_ANNOTATION)
        if stamp is None:
            return None
        self._events.publish(
            node, "TerminationGracePeriodExpiring", f"All pods will be deleted by {stamp}", WARNING
        )
        try:
            return parse_timestamp(stamp)
        except ValueError as error:
            log.error(
                "nodeclaim %s: cannot parse %s: %s",
                claim.name,
                TERMINATION_TIMESTAMP_ANNOTATION,
                error,
            )
            return None

    def _taint(self, node: Node) -> Node:
        """Taint ``karpenter.sh/disrupted:NoSchedule`` and keep load balancers away."""
        taints = node.spec.taints
        tainted = any(t.key == DISRUPTED_TAINT_KEY and t.effect == "NoSchedule" for t in taints)
        labelled = node.metadata.labels.get(EXCLUDE_FROM_LB_LABEL) == "karpenter"
        if tainted and labelled:
            return node
        if not tainted:
            node.spec.taints = [t for t in taints if t.key != DISRUPTED_TAINT_KEY]
            node.spec.taints.append(Taint(key=DISRUPTED_TAINT_KEY, effect="NoSchedule"))
        node.metadata.labels[EXCLUDE_FROM_LB_LABEL] = "karpenter"
        node = mutable(self._cluster.update(node))
        log.info(
            "tainted node",
            extra=fields(
                {
                    "Node": ref(node.name),
                    "taint.Key": DISRUPTED_TAINT_KEY,
                    "taint.Value": "",
                    "taint.Effect": "NoSchedule",
                }
            ),
        )
        return node

    # -- drain ----------------------------------------------------------------------------------

    def _await_drain(
        self, node: Node, pods: list[Pod], claim: NodeClaim | None, deadline: datetime | None
    ) -> timedelta | None:
        now = self._clock.now()
        if claim is not None and find_condition(claim.status.conditions, CONDITION_DRAINED) is None:
            set_condition(
                claim.status.conditions,
                CONDITION_DRAINED,
                "Unknown",
                now,
                reason="Draining",
                message="Draining",
            )
        waiting = self._drain(node, pods, claim, deadline)
        if waiting:
            self._events.publish(
                node,
                "FailedDraining",
                f"Failed to drain node, {waiting} pods are waiting to be evicted",
                WARNING,
            )
            return DRAIN_POLL
        if claim is None:
            return None
        drained = find_condition(claim.status.conditions, CONDITION_DRAINED)
        if drained is not None and drained.status == "Unknown":
            started = drained.last_transition_time or now
            if now - started < MIN_DRAIN_TIME:
                return started + MIN_DRAIN_TIME - now
        set_condition(claim.status.conditions, CONDITION_DRAINED, "True", now)
        return None

    def _drain(
        self, node: Node, pods: list[Pod], claim: NodeClaim | None, deadline: datetime | None
    ) -> int:
        """Evict the next tier of pods; return how many pods the drain still waits for.

        Tiers follow Karpenter: non-critical non-daemon, non-critical daemon, critical
        non-daemon, critical daemon; a tier starts only when the one before is gone. Past the
        termination deadline (less each pod's own grace period) a pod is deleted outright,
        whatever its tier, PDB or ``do-not-disrupt``.
        """
        now = self._clock.now()
        waiting = [p for p in pods if _waits_for_eviction(p, now)]
        if not waiting:
            return 0
        graceful: list[Pod] = []
        for pod in waiting:
            if _needs_force_delete(pod, deadline, now):
                self._force_delete(pod, deadline, now)
            else:
                graceful.append(pod)
        tiers: list[list[Pod]] = [[], [], [], []]
        for pod in graceful:
            critical = pod.spec.priority_class_name in CRITICAL_PRIORITY_CLASSES
            daemon = owner_kind(pod) == "DaemonSet"
            tiers[2 * critical + daemon].append(pod)
        current = next((tier for tier in tiers if tier), [])
        reason = _eviction_reason(claim)
        for pod in current:
            if pod.deleting or is_terminal(pod) or self._do_not_disrupt(pod, now):
                continue
            try:
                self._cluster.evict(pod.name, pod.namespace)
            except EvictionBlockedError as error:
                problem = (
                    "eviction does not support multiple PDBs"
                    if "more than one" in str(error)
                    else "evicting pod violates a PDB"
                )
                self._events.publish(
                    node,
                    "FailedDraining",
                    f"Failed to drain node, {problem} (Pod={pod.key})",
                    WARNING,
                )
                continue
            except NotFoundError:
                continue
            except ClusterError as error:
                # Any other refusal (a 403 while the pod's namespace is being deleted, a 5xx)
                # holds back this pod only; the drain asks again on its next look.
                log.error(
                    "failed to evict pod",
                    extra=fields(Pod=ref(pod.name, pod.namespace), error=str(error)),
                )
                continue
            self._events.publish(pod, "Evicted", f"Evicted pod: {reason}")
        return len(waiting)

    def _force_delete(self, pod: Pod, deadline: datetime | None, now: datetime) -> None:
        assert deadline is not None  # NOTE: only pods past a deadline are force-deleted
        granted = max(int((deadline - now).total_seconds()), 1)
        own = pod.spec.termination_grace_period_seconds
        own = DEFAULT_POD_GRACE_SECONDS if own is None else own
        self._events.publish(
            pod,
            "Disrupted",
            f"Deleting the pod to accommodate the terminationTime {_go_time(deadline)} of the "
            f"node. The pod was granted {granted} seconds of grace-period of its {own} "
            "terminationGracePeriodSeconds. This bypasses the PDB of the pod and the "
            "do-not-disrupt annotation.",
        )
        self._cluster.delete(Pod, pod.name, pod.namespace)
        log.info("Deleted pod %s to meet the node's termination deadline", pod.key)

    def _do_not_disrupt(self, pod: Pod, now: datetime) -> bool:
        """Whether the pod's ``karpenter.sh/do-not-disrupt`` annotation protects it now."""
        value = pod.metadata.annotations.get(DO_NOT_DISRUPT_ANNOTATION)
        if value is None:
            return False
        if value == "true":
            return True
        try:
            protected = parse_duration(value)
        except DurationError as error:
            self._events.publish(
                pod,
                "InvalidDoNotDisruptAnnotation",
                f"Invalid {DO_NOT_DISRUPT_ANNOTATION} annotation: {error}, ignoring annotation",
                WARNING,
            )
            return False
        started = pod.status.start_time
        return started is None or now - started < protected

    # -- volumes and instance ---------------------------------------------------------------------

    def _await_volume_detachment(
        self,
        node: Node,
        pods: list[Pod],
        claim: NodeClaim | None,
        attachments: list[VolumeAttachment],
        deadline: datetime | None,
    ) -> timedelta | None:
        now = self._clock.now()
        pending = self._pending_attachments(pods, attachments, now)
        if not pending:
            if claim is not None:
                set_condition(claim.status.conditions, CONDITION_VOLUMES_DETACHED, "True", now)
            return None
        if deadline is None or now <= deadline:
            names = _pretty_names([a.name for a in pending])
            self._events.publish(
                node,
                "AwaitingVolumeDetachment",
                f"Awaiting deletion of bound volumeattachments ({names})",
            )
            if claim is not None:
                set_condition(
                    claim.status.conditions,
                    CONDITION_VOLUMES_DETACHED,
                    "Unknown",
                    now,
                    reason="AwaitingVolumeDetachment",
                    message="AwaitingVolumeDetachment",
                )
            return DRAIN_POLL
        if claim is not None:
            set_condition(
                claim.status.conditions,
                CONDITION_VOLUMES_DETACHED,
                "False",
                now,
                reason="TerminationGracePeriodElapsed",
                message="TerminationGracePeriodElapsed",
            )
        return None

    def _pending_attachments(
        self, pods: Sequence[Pod], attachments: Sequence[VolumeAttachment], now: datetime
    ) -> list[VolumeAttachment]:
        """Attachments of persistent volumes, except those of pods the drain leaves behind
        (their volumes stay attached until the instance goes)."""
        if not attachments:
            return []
        kept: set[str] = set()
        for pod in pods:
            if _drainable(pod, now):
                continue
            for volume in pod.spec.volumes:
                if volume.persistent_volume_claim is None:
                    continue
                pvc = self._cluster.get(
                    PersistentVolumeClaim, volume.persistent_volume_claim.claim_name, pod.namespace
                )
                if pvc is not None and pvc.spec.volume_name:
                    kept.add(pvc.spec.volume_name)
        return [
            a
            for a in attachments
            if a.spec.source.persistent_volume_name is not None
            and a.spec.source.persistent_volume_name not in kept
        ]

    def _await_instance_termination(self, claim: NodeClaim) -> timedelta | None:
        """Delete the instance until the provider reports it gone."""
        provider_id = claim.status.provider_id or ""
        try:
            provider = self._catalog.provider_name(claim.spec.node_class_ref)
            self._host.delete(provider, provider_id)
        except InstanceNotFoundError:
            set_condition(
                claim.status.conditions, CONDITION_INSTANCE_TERMINATING, "True", self._clock.now()
            )
            return None
        except (PluginError, TemporaryProviderError, UnknownNodeClassError) as error:
            log.error("Deleting instance %s failed: %s", provider_id, error)
            return INSTANCE_POLL
        set_condition(
            claim.status.conditions, CONDITION_INSTANCE_TERMINATING, "True", self._clock.now()
        )
        return INSTANCE_POLL


def _node_names(
    state: ClusterState,
    kind: type[KubeObject],
    old: KubeObject | None,
    new: KubeObject | None,
) -> list[str]:
    """The nodes whose termination a change to an object may move on."""
    names: list[str] = []
    for obj in (old, new):
        if isinstance(obj, Node):
            names.append(obj.name)
        elif (isinstance(obj, Pod) and obj.spec.node_name) or (
            isinstance(obj, VolumeAttachment) and obj.spec.node_name
        ):
            names.append(obj.spec.node_name)
        elif isinstance(obj, NodeClaim):
            node = state.node_for(obj)
            if node is not None:
                names.append(node.name)
    return names


def _drainable(pod: Pod, now: datetime) -> bool:
    """Pods a drain removes: not tolerating the disrupted taint, not mirror pods, not stuck
    terminating."""
    if owner_kind(pod) == "Node":
        return False
    if any(t.tolerates(_DISRUPTED) for t in pod_tolerations(pod)):
        return False
    deleted = pod.metadata.deletion_timestamp
    return not (deleted is not None and now - deleted > STUCK_TERMINATING)


def _waits_for_eviction(pod: Pod, now: datetime) -> bool:
    return not is_terminal(pod) and _drainable(pod, now)


def _needs_force_delete(pod: Pod, deadline: datetime | None, now: datetime) -> bool:
    """Past the deadline less the pod's own grace period, a pod is deleted, not evicted."""
    if deadline is None:
        return False
    deleted = pod.metadata.deletion_timestamp
    if deleted is not None:
        return deleted > deadline
    grace = pod.spec.termination_grace_period_seconds
    grace = DEFAULT_POD_GRACE_SECONDS if grace is None else grace
    return now > deadline - timedelta(seconds=grace)


def _eviction_reason(claim: NodeClaim | None) -> str:
    if claim is not None:
        condition = find_condition(claim.status.conditions, CONDITION_DISRUPTION_REASON)
        if condition is not None and condition.status == "True":
            return condition.reason or CONDITION_DISRUPTION_REASON
    return "Forceful Termination"


def _go_time(instant: datetime) -> str:
    """A time as Go's ``%v`` prints it (``2026-01-01 00:05:00 +0000 UTC``)."""
    return instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def _pretty_names(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    rest = len(names) - limit
    return f"{shown} and {rest} other(s)" if rest > 0 else shown
