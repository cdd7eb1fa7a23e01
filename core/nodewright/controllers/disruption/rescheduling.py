"""What would happen to the pods of candidate nodes if those nodes went away.

The pure solver is asked to place the candidates' pods (and every pod already waiting for a
node, and the pods of nodes already being deleted) on the rest of the cluster, opening new
NodeClaims from the NodePools where needed: Karpenter's ``SimulateScheduling``.
:func:`simulate` does it from scratch, for one simulation (the validation of a command);
a pass that simulates candidate after candidate shares the rest of the work through
:mod:`.trials`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from nodewright.api.apps import DaemonSet
from nodewright.api.core import Pod, TopologySpreadConstraint
from nodewright.api.karpenter import CONDITION_READY
from nodewright.api.meta import is_true
from nodewright.controllers.devices import device_facts, read_claims, with_claims
from nodewright.controllers.disruption.candidates import (
    Candidate,
    Snapshot,
)
from nodewright.controllers.disruptioncost import blocks_disruption, is_reschedulable
from nodewright.controllers.nodepool.templates import (
    DaemonGroupMemo,
    daemon_pods,
    node_pool_template,
)
from nodewright.controllers.provisioning.defaultspread import DefaultSpread
from nodewright.controllers.state.cluster import VOLUME_KINDS, is_provisionable
from nodewright.scheduling.model import (
    ExistingNode,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.pods import (
    pod_request,
)
from nodewright.scheduling.solver.claimtemplates import ClaimTemplates
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.volumes import VolumeProblem, pod_volumes

#: Karpenter's wording when a simulation would place pods nowhere.
MAX_ERRORS_SHOWN = 5


@dataclass
class Rescheduling:
    result: SchedulingResult
    #: Pods running now (not pending ones) that would find no place, with why.
    errors: dict[str, str]

    def all_scheduled(self) -> bool:
        return not self.errors and not self.result.decided_no

    def error_text(self) -> str:
        """Karpenter's ``NonPendingPodSchedulingErrors`` sentence."""
        if self.result.decided_no:
            raise ValueError("a trial that stopped at its decision has no errors to tell")
        shown = sorted(self.errors.items())[:MAX_ERRORS_SHOWN]
        return "not all pods would schedule, " + " ".join(f"{k} => {e}" for k, e in shown)


def node_pool_templates(
    snapshot: Snapshot,
    daemonsets: Sequence[DaemonSet],
    well_known: frozenset[str],
    dra: bool = False,
    memo: DaemonGroupMemo | None = None,
) -> list[NodePoolTemplate]:
    """Every NodePool that could launch a replacement, as the provisioner sees it."""
    templates = []
    pods_of_daemons = daemon_pods(daemonsets, dra)
    pools = sorted(
        snapshot.pools.values(), key=lambda p: (p.spec.weight or 0, p.name), reverse=True
    )
    for pool in pools:
        if pool.deleting or pool.spec.replicas is not None:
            continue
        if not is_true(pool.status.conditions, CONDITION_READY):
            continue
        instance_types = snapshot.instance_types.get(pool.name)
        if not instance_types:
            continue
        template = node_pool_template(
            pool, instance_types, snapshot.view, pods_of_daemons, well_known, memo=memo
        )
        if template is not None:
            templates.append(template)
    return templates


class PodRequests:
    """Each pod as the solver takes it (or why its volumes rule it out), kept until the pod,
    the namespaces or the storage objects change: a consolidation search simulates the same
    pods pass after pass."""

    def __init__(self) -> None:
        #: pod key -> (the pod, its request with order 0, or its volume problem)
        self._entries: dict[str, tuple[Pod, PodRequest | str]] = {}
        self._context: tuple[object, int, object] | None = None
        self._spread: DefaultSpread | None = None

    def begin(
        self, snapshot: Snapshot, default_spread: Sequence[TopologySpreadConstraint] = ()
    ) -> None:
        """Forget everything if the namespaces, the storage objects or what default spread
        selectors are deduced from changed."""
        self._spread = DefaultSpread(snapshot.state, default_spread)
        storage = sum(snapshot.state.kind_version(kind) for kind in VOLUME_KINDS)
        spread = (tuple(default_spread), self._spread.version())
        if (
            self._context is None
            or self._context[1] != storage
            or self._context[0] != snapshot.namespaces
            or self._context[2] != spread
        ):
            self._entries.clear()
            self._context = (snapshot.namespaces, storage, spread)
        if len(self._entries) > 2 * snapshot.state.count(Pod) + 64:
            self._entries = {
                key: entry
                for key, entry in self._entries.items()
                if snapshot.state.get(Pod, _split(key)) is entry[0]
            }

    def request(self, snapshot: Snapshot, pod: Pod) -> PodRequest | str:
        entry = self._entries.get(pod.key)
        if entry is not None and entry[0] is pod:
            return entry[1]
        answer: PodRequest | str
        scheduled = self._spread.apply(pod) if self._spread is not None else pod
        try:
            volumes = pod_volumes(
                pod,
                snapshot.volumes.claims,
                snapshot.volumes.volumes,
                snapshot.volumes.storage_classes,
            )
        except VolumeProblem as problem:
            answer = str(problem)
        else:
            answer = replace(
                pod_request(scheduled, 0, snapshot.namespaces),
                volume_requirements=volumes.requirements,
                volumes=volumes.usage,
            )
        self._entries[pod.key] = (pod, answer)
        return answer


def _split(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def simulate(
    snapshot: Snapshot,
    templates: Sequence[NodePoolTemplate],
    candidates: Sequence[Candidate],
    options: SolverOptions,
    cache: PodRequests | None = None,
    *,
    virtual: Sequence[Pod] = (),
    built: ClaimTemplates | None = None,
) -> Rescheduling:
    """Place the candidates' pods elsewhere; report what that takes. ``built`` keeps the
    NodePools' NodeClaimTemplates from solve to solve."""
    view = snapshot.view
    names = {c.name for c in candidates} | {c.claim.name for c in candidates}
    moving: list[Pod] = []
    for candidate in candidates:
        moving.extend(
            p
            for p in candidate.reschedulable
            if not blocks_disruption(p, snapshot.now) and not snapshot.pdbs.fully_blocked(p)
        )
    deleting_names = {n.name for n in snapshot.nodes if n.deleting} | {
        node.name
        for claim in snapshot.claims
        if claim.deleting and (node := view.node_for(claim)) is not None
    }
    from_deleting = [
        p
        for name in sorted(deleting_names - names)
        for p in view.pods_on(name)
        if is_reschedulable(p)
    ]
    pending = sorted(
        (p for p in view.state.unbound_pods().values() if is_provisionable(p)),
        key=lambda p: (p.metadata.namespace or "", p.metadata.name),
    )
    pending += virtual  # CapacityBuffer headroom must still fit once the candidates are gone
    pods = sorted(
        [*pending, *moving, *from_deleting],
        key=lambda p: (p.metadata.creation_timestamp or snapshot.now, p.key),
    )
    errors: dict[str, str] = {}
    requests = []
    known = cache or PodRequests()
    known.begin(snapshot, options.default_spread)
    claims = read_claims(view.state) if options.dra else None
    for index, pod in enumerate(pods):
        request = known.request(snapshot, pod)
        if isinstance(request, str):
            errors[pod.key] = request
            continue
        if claims is not None:
            request = with_claims(request, pod, claims)
        requests.append(request.at(index))
    existing = [
        node
        for node in snapshot.existing_nodes()
        if node.name not in names and (node.node_claim or "") not in names
    ]
    leaving = names | deleting_names
    staying = [p for p in snapshot.placed_pods() if p.node_name not in leaving]
    devices = None
    if claims is not None:
        # The claims only the leaving nodes' pods hold are allocated again (their devices go
        # with the nodes), as Karpenter's SimulateScheduling counts them deleting.
        gone = {p.metadata.uid or "" for name in sorted(leaving) for p in view.pods_on(name)}
        devices = device_facts(view.state, claims, existing, frozenset(gone - {""}))
    result = solve(
        requests,
        existing,
        list(templates),
        options,
        placed=staying,
        devices=devices,
        built=built,
    )
    pending_keys = {p.key for p in pending}
    deleting_keys = {p.key for p in from_deleting}
    errors = {k: e for k, e in errors.items() if k not in pending_keys}
    errors.update({k: e for k, e in result.errors.items() if k not in pending_keys})
    by_name = {node.name: node for node in existing}
    for name, landed in result.existing_nodes.items():
        target = by_name.get(name)
        if target is None or target.initialized:
            continue
        for request in landed:
            if request.key not in deleting_keys and request.key not in pending_keys:
                errors[request.key] = uninitialized_error(target)
    return Rescheduling(result, errors)


def uninitialized_error(node: ExistingNode) -> str:
    """Why a running pod may not count on a node that is not initialized yet."""
    return f"would schedule against uninitialized {_describe(node)}"


def _describe(node: ExistingNode) -> str:
    parts = []
    if node.node_claim:
        parts.append(f"nodeclaim/{node.node_claim}")
    if not node.in_flight:
        parts.append(f"node/{node.name}")
    return ", ".join(parts)
