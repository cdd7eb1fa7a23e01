"""Provisioning: batch pending pods, solve, and create the NodeClaims they need.

Karpenter never binds pods; it creates NodeClaims sized for them and lets kube-scheduler
bind once the nodes register. The cloud launch happens in the lifecycle controller.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from nodewright import metrics
from nodewright.api.apps import DaemonSet
from nodewright.api.core import Namespace, Pod
from nodewright.api.karpenter import (
    CONDITION_LAUNCHED,
    CONDITION_READY,
    NodeClaim,
    NodePool,
)
from nodewright.api.meta import is_true
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ClusterError
from nodewright.controllers.capacitybuffer.virtualpods import VirtualPods
from nodewright.controllers.catalog import (
    Catalog,
    NodeClassNotFoundError,
    NodePoolNotEvaluatedError,
)
from nodewright.controllers.devices import device_facts, read_claims, with_claims
from nodewright.controllers.events import WARNING, EventRecorder
from nodewright.controllers.nodeclaim.creation import create_node_claim
from nodewright.controllers.nodepool.templates import (
    DaemonGroupMemo,
    daemon_pods,
    node_pool_template,
)
from nodewright.controllers.options import Options, solver_options
from nodewright.controllers.provisioning.defaultspread import DefaultSpread
from nodewright.controllers.provisioning.podrequests import Context as PodContext
from nodewright.controllers.provisioning.podrequests import PendingPods, Provisionable
from nodewright.controllers.provisioning.solvememo import SolveInputs, SolveMemo
from nodewright.controllers.state.cluster import (
    VOLUME_KINDS,
    ClusterView,
    NodeCache,
    VolumeFacts,
    owner_kind,
)
from nodewright.controllers.state.nominations import (
    Nominations,
    nominated_message,
    provider_id_of,
)
from nodewright.logfields import duration, fields, ref, shortened
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.dra import DRA_IGNORED, DRA_SKIP_LOG
from nodewright.scheduling.model import (
    ExistingNode,
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
)
from nodewright.scheduling.pods import (
    pod_requests,
    pod_requirement_terms,
    pod_tolerations,
)
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import (
    merge,
    subtract,
)
from nodewright.scheduling.solver.claimtemplates import ClaimTemplates
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.taints import tolerates_all

log = logging.getLogger("nodewright.provisioner")

#: While pods stay pending, look at them again this often (Karpenter's pod trigger requeue).
PENDING_REQUEUE = timedelta(seconds=10)


class Provisioner:
    name = "provisioner"

    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        events: EventRecorder,
        *,
        options: Options,
        virtual_pods: VirtualPods | None = None,
        nominations: Nominations | None = None,
    ) -> None:
        self._cluster = cluster
        #: Existing nodes a pass plans real pending pods onto are nominated here.
        self._nominations = nominations
        self._host = host
        self._catalog = catalog
        self._clock = clock
        self._events = events
        self._options = options
        #: The CapacityBuffers' virtual pods, which each pass places with the pending pods.
        self._virtual_pods = virtual_pods
        self._batch_start: datetime | None = None
        self._last_arrival: datetime | None = None
        self._batch: set[str] = set()
        self._last_outcome: frozenset[tuple[str, str]] = frozenset()
        #: Existing nodes as the solver saw them, kept until they change.
        self._nodes = NodeCache()
        #: NodePools made into NodeClaimTemplates, kept while they and their types stay.
        self._claim_templates = ClaimTemplates()
        self._daemon_groups = DaemonGroupMemo()
        #: Which unbound pods are provisionable, kept while each pod stays the same.
        self._provisionable = Provisionable()
        #: Each pending pod as the solver takes it, kept while the pod stays the same.
        self._pending = PendingPods()
        #: The last solve's answer, kept while what it read stays the same.
        self._solved = SolveMemo()
        #: How many NodeClaims a pass may still plan (None: no bound); a simulation sets it
        #: from its launch limit, so a pass stops planning where the run would stop anyway.
        self.launch_allowance: Callable[[], int | None] | None = None
        #: Pods its passes have given the solver, and the NodeClaims the solver tried to open
        #: for them, over every pass: work a simulation's limits count, never timed.
        self.pods_solved = 0
        self.claims_tried = 0

    # -- batching ----------------------------------------------------------------------------

    def reconcile(self) -> timedelta | None:
        pending = self._provisionable.pods(self._cluster.state.unbound_pods())
        if self._virtual_pods is not None:
            pending += self._virtual_pods.pods()
        now = self._clock.now()
        if not pending:
            self._batch_start = self._last_arrival = None
            self._batch.clear()
            metrics.record_pending_zones(self.name, {})
            return None
        uids = {p.metadata.uid or p.key for p in pending}
        if self._batch_start is None or self._last_arrival is None:
            self._batch_start = self._last_arrival = now
            self._batch = set(uids)
        elif not uids <= self._batch:
            self._last_arrival = now
            self._batch |= uids
        closes_at = min(
            self._last_arrival + self._options.batch_idle_duration,
            self._batch_start + self._options.batch_max_duration,
        )
        if now < closes_at:
            return closes_at - now
        self._batch_start = self._last_arrival = None
        self._batch.clear()
        self.provision(pending)
        return PENDING_REQUEUE

    def resync(self) -> None:
        """Nothing to do: every pass looks at every pending pod."""

    # -- one provisioning pass ----------------------------------------------------------------

    def provision(self, pending: Sequence[Pod]) -> list[NodeClaim]:
        """Solve for ``pending`` pods and create the NodeClaims the solution needs."""
        domains = self._host.restricted_label_domains()
        settings = dataclasses.replace(
            solver_options(self._options, self._host),
            effective_zones=True,
            max_new_claims=None if self.launch_allowance is None else self.launch_allowance(),
        )
        well_known = settings.well_known_labels
        ordered = sorted(
            pending, key=lambda p: (p.metadata.creation_timestamp or self._clock.now(), p.key)
        )
        state = self._cluster.state
        namespaces = {ns.name: ns.metadata.labels for ns in state.sorted(Namespace)}
        facts = VolumeFacts.of(state)
        claims = read_claims(state) if self._options.dra else None
        requests: list[PodRequest] = []
        by_key: dict[str, Pod] = {}
        #: Keys of CapacityBuffer virtual pods: placed like the others, but never reported.
        virtual: set[str] = set()
        spread = DefaultSpread(state, self._options.default_spread)
        self._pending.begin(
            PodContext(
                domains,
                well_known,
                namespaces,
                sum(state.kind_version(kind) for kind in VOLUME_KINDS),
                (spread.constraints, spread.version()),
            )
        )
        for index, pending_pod in enumerate(ordered):
            made, request = self._pending.take(pending_pod, index, spread, facts)
            pod = made.scheduled
            if made.virtual:
                virtual.add(pod.key)
            if request is not None and claims is not None:
                request = with_claims(request, pod, claims)
            if request is None:
                if not made.virtual:
                    self._events.publish(
                        pod, "FailedScheduling", f"Failed to schedule pod, {made.problem}", WARNING
                    )
                continue
            requests.append(request)
            by_key[request.key] = pod
        self._pending.end()
        metrics.scheduler_queue_depth.labels("provisioner").set(len(requests))
        self.pods_solved += len(requests)
        if not requests:
            metrics.record_pending_zones(self.name, {})
            return []

        solve_started = time.perf_counter()
        view = ClusterView(state, self._nodes)
        pods_of_daemons = daemon_pods(list(state.sorted(DaemonSet)), self._options.dra)
        templates, pool_errors = self._templates(view, pods_of_daemons, well_known)
        existing = [
            _reserve_daemons(node, view, pods_of_daemons, well_known)
            for node in view.existing_nodes(facts)
        ]
        devices = None
        if claims is not None:
            devices = device_facts(state, claims, existing, _leaving_pods(view))
        running = view.placed_pods(namespaces)
        inputs = SolveInputs(
            tuple(requests), tuple(existing), tuple(templates), settings, tuple(running), devices
        )
        result = self._solved.recall(inputs)
        if result is None:
            result = solve(
                requests,
                existing,
                templates,
                settings,
                placed=running,
                devices=devices,
                built=self._claim_templates,
            )
            self._solved.remember(inputs, result)
        metrics.scheduling_duration.labels("provisioner").observe(
            time.perf_counter() - solve_started
        )
        self.claims_tried += result.claims_tried
        metrics.scheduler_queue_depth.labels("provisioner").set(0)
        metrics.record_pending_zones(
            self.name,
            Counter(z for key, z in result.effective_zones.items() if key not in virtual),
        )
        if self._virtual_pods is not None:
            self._virtual_pods.record(result)
        pools = {t.name: t for t in templates}
        # Log a batch when it changes something or its outcome differs from the last one, so
        # pods waiting for their nodes to register do not repeat the same lines every second.
        outcome = frozenset(result.errors.items())
        changed = bool(result.new_node_claims) or outcome != self._last_outcome
        self._last_outcome = outcome
        if result.new_node_claims:
            log.info(
                "computed new nodeclaim(s) to fit pod(s)",
                extra=fields(
                    nodeclaims=len(result.new_node_claims),
                    pods=sum(len(new.pods) for new in result.new_node_claims),
                ),
            )
            log.info(
                "found provisionable pod(s)",
                extra=fields(
                    Pods=shortened(f"{r.namespace}/{r.name}" for r in requests),
                    duration=duration(time.perf_counter() - solve_started),
                ),
            )

        created: list[NodeClaim] = []
        for new in result.new_node_claims:
            claim = self._create_node_claim(new, pools[new.node_pool])
            if claim is None:
                continue
            created.append(claim)
            if self._virtual_pods is not None:
                self._virtual_pods.hold(claim.name, sum(p.key in virtual for p in new.pods))
            for placed_pod in new.pods:
                if placed_pod.key in virtual:
                    continue
                self._events.publish(
                    by_key[placed_pod.key],
                    "Nominated",
                    f"Pod should schedule on: nodeclaim/{claim.name}",
                )
        nominated: list[str] = []
        for node_name, placed in result.existing_nodes.items():
            real = [p for p in placed if p.key not in virtual]
            if not real:
                continue
            nominated.append(provider_id_of(state, node_name))
            message = nominated_message(state, node_name)
            for placed_pod in real:
                self._events.publish(by_key[placed_pod.key], "Nominated", message)
        if self._nominations is not None:
            self._nominations.nominate(nominated)
        for key, message in result.errors.items():
            if key in result.awaiting_reservation or key in virtual:
                continue
            detail = message
            if pool_errors and message != DRA_IGNORED:
                detail = "; ".join([message, *pool_errors])
            self._events.publish(
                by_key[key], "FailedScheduling", f"Failed to schedule pod, {detail}", WARNING
            )
        if changed:
            for key, message in sorted(result.errors.items()):
                namespace, _, name = key.rpartition("/")
                if key in virtual:
                    continue
                if key in result.awaiting_reservation:
                    log.info(
                        "deferring scheduling decision for provisionable pod(s) to future "
                        "simulation due to limited reserved offering capacity",
                        extra=fields(Pods=key, reason=message),
                    )
                elif message == DRA_IGNORED:
                    log.info(DRA_SKIP_LOG, extra=fields(Pod=ref(name, namespace)))
                else:
                    log.error(
                        "could not schedule pod",
                        extra=fields(Pod=ref(name, namespace), error=message),
                    )
        return created

    def _templates(
        self, view: ClusterView, pods_of_daemons: Sequence[Pod], well_known: frozenset[str]
    ) -> tuple[list[NodePoolTemplate], list[str]]:
        """Every usable NodePool as a solver template, heaviest first; and why others are not."""
        templates: list[NodePoolTemplate] = []
        problems: list[str] = []
        pools = sorted(
            view.state.sorted(NodePool), key=lambda p: (p.spec.weight or 0, p.name), reverse=True
        )
        for pool in pools:
            if pool.deleting or pool.spec.replicas is not None:
                continue
            if not is_true(pool.status.conditions, CONDITION_READY):
                problems.append(f'nodepool "{pool.name}" is not ready')
                continue
            try:
                node_class = self._catalog.node_class(pool.spec.template.spec.node_class_ref)
                instance_types = self._catalog.pool_instance_types(
                    node_class, pool.name, strict=True
                )
            except NodePoolNotEvaluatedError:
                log.debug(
                    "skipping, awaiting nodeoverlay evaluation",
                    extra=fields(NodePool=ref(pool.name)),
                )
                continue
            except (UnknownNodeClassError, NodeClassNotFoundError, PluginError) as error:
                problems.append(f'nodepool "{pool.name}": {error}')
                continue
            template = node_pool_template(
                pool, instance_types, view, pods_of_daemons, well_known, memo=self._daemon_groups
            )
            if template is None:
                self._events.publish(
                    pool,
                    "NoCompatibleInstanceTypes",
                    "NodePool requirements filtered out all compatible available instance types",
                    WARNING,
                )
                problems.append(
                    f'nodepool "{pool.name}": requirements filtered out all compatible '
                    "available instance types"
                )
                continue
            templates.append(template)
        return templates, problems

    def _create_node_claim(self, new: NewNodeClaim, template: NodePoolTemplate) -> NodeClaim | None:
        pool = self._cluster.get(NodePool, template.name)
        if pool is None:
            return None
        try:
            return create_node_claim(
                self._cluster,
                pool,
                new,
                self._host.well_known_labels(),
                reason="provisioned",
                log=log,
            )
        except ClusterError as error:
            log.error(
                "creating nodeclaim",
                extra=fields(NodePool=ref(pool.name), error=str(error)),
            )
            return None


def _leaving_pods(view: ClusterView) -> frozenset[str]:
    """UIDs of the pods on nodes being deleted: the claims only they hold are allocated again
    (Karpenter's deleting-node pods)."""
    leaving: set[str] = set()
    for node in view.nodes:
        claim = view.claim_for(node)
        if node.deleting or (claim is not None and claim.deleting):
            leaving.update(p.metadata.uid or "" for p in view.pods_on(node.name))
    leaving.discard("")
    return frozenset(leaving)


def _reserve_daemons(
    node: ExistingNode, view: ClusterView, daemon_pods: Sequence[Pod], well_known: frozenset[str]
) -> ExistingNode:
    """``node`` with room kept for the daemonset pods that will run there but do not yet.

    Karpenter's remaining daemon overhead: the requests of daemonset pods that tolerate the
    node's taints and whose strict node requirements its labels meet, less the daemonset
    pods already running there, never below zero. A NodeClaim that has not launched offers
    exactly what it was sized for, daemons included, so it keeps nothing more.
    """
    if node.in_flight:
        claim = view.claim_named(node.name)
        if claim is None or not is_true(claim.status.conditions, CONDITION_LAUNCHED):
            return node
    labels = Requirements.from_labels(node.labels)
    expected = [
        pod_requests(p)
        for p in daemon_pods
        if tolerates_all(pod_tolerations(p), node.taints) is None
        and labels.compatible(pod_requirement_terms(p)[0], well_known)
    ]
    if not expected:
        return node
    running = [pod_requests(p) for p in view.pods_on(node.name) if owner_kind(p) == "DaemonSet"]
    missing = {k: v for k, v in subtract(merge(*expected), merge(*running)).items() if v > 0}
    if not missing:
        return node
    return dataclasses.replace(node, requested=merge(node.requested, missing))
