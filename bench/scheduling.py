"""Scheduling benchmark with Karpenter's parameters (pkg/controllers/provisioning/scheduling/
scheduling_benchmark_test.go): 400 instance types, one NodePool without limits, an empty
cluster, and one of three pod mixes built as real Pod objects:

* ``plain``: CPU in {100m, 250m, 500m, 1, 1.5} and memory in {100Mi ... 4Gi}, nothing else;
* ``diverse`` (Karpenter's ``makeDiversePods``): a fifth each of plain pods, zonal and
  hostname topology spread (maxSkew 1), zonal required self-affinity and hostname required
  anti-affinity;
* ``preferences`` (``makePreferencePods``): one satisfiable preferred zone and two weighted
  preferred anti-affinities, solved once with preferences respected and once ignored.

    uv run --all-packages python bench/scheduling.py --mix diverse --pods 100 1000 5000 20000

Pods are built and parsed (``pod_request``) before the clock starts; only ``solve()`` is
timed. Every result is validated (each pod placed once, each NodeClaim's cheapest type fits
its pods, required anti-affinity, affinity and topology spread hold); the run exits non-zero
on an unscheduled pod or a violation. See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import resource
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.api import core as api
from nodewright.api.labels import (
    ARCH_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    OS_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import ObjectMeta
from nodewright.scheduling.instancetype import InstanceType, InstanceTypeOverhead, Offering
from nodewright.scheduling.model import (
    NewNodeClaim,
    NodePoolTemplate,
    PodRequest,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.pods import pod_request
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import CPU, MEMORY, PODS, resources
from nodewright.scheduling.solver.scheduler import solve

GIB = 2**30
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
CPUS = ("100m", "250m", "500m", "1", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
LABEL_VALUES = ("a", "b", "c", "d", "e", "f", "g")
NAMESPACE = "default"
MIXES = ("plain", "diverse", "preferences")
DEFAULT_COUNTS = {"plain": (100, 1000, 5000, 20000), "diverse": (100, 1000, 5000, 20000)}
#: Karpenter runs its preference benchmarks with 4000 pods.
DEFAULT_COUNTS["preferences"] = (4000,)
PROFILE_LINES = 25

# -- catalog ---------------------------------------------------------------------------------


def instance_types(count: int = 400) -> list[InstanceType]:
    """Karpenter's ``fake.InstanceTypes(count)``: type i has i+1 CPU, 2(i+1) GiB, 10(i+1)
    pods, spot and on-demand in three zones at 0.1 per CPU + 0.1 per GiB."""
    types = []
    for i in range(count):
        cpu, memory_gib, pods = i + 1, 2 * (i + 1), 10 * (i + 1)
        price = 0.1 * cpu + 0.1 * memory_gib
        name = f"fake-it-{i}"
        offerings = [
            Offering(zone=zone, capacity_type=capacity_type, price=price)
            for zone in ZONES
            for capacity_type in ("spot", "on-demand")
        ]
        base = InstanceType(
            name=name,
            requirements=Requirements.from_labels(
                {INSTANCE_TYPE_LABEL: name, ARCH_LABEL: "amd64", OS_LABEL: "linux"}
            ),
            capacity=resources(cpu=cpu, memory=f"{memory_gib}Gi", pods=pods),
            overhead=InstanceTypeOverhead(kube_reserved=resources(cpu="100m", memory="10Mi")),
        )
        types.append(base.with_offerings(offerings))
    return types


def node_pool(catalog: Sequence[InstanceType]) -> NodePoolTemplate:
    return NodePoolTemplate(
        name="default",
        weight=0,
        requirements=Requirements.from_labels({NODEPOOL_LABEL: "default"}),
        taints=(),
        instance_types=tuple(catalog),
    )


# -- pod mixes -------------------------------------------------------------------------------


class PodFactory:
    """Builds the benchmark's pods with one seeded RNG, drawing values in the order
    Karpenter's generators do (labels, then selector, then CPU, then memory)."""

    def __init__(self, seed: int = 42) -> None:
        self.rng = random.Random(seed)
        self.made = 0

    def label_value(self) -> str:
        return self.rng.choice(LABEL_VALUES)

    def requests(self) -> dict[str, str]:
        return {"cpu": self.rng.choice(CPUS), "memory": self.rng.choice(MEMORIES)}

    def pod(
        self,
        labels: dict[str, str],
        requests: dict[str, str],
        affinity: api.Affinity | None = None,
        spread: Sequence[api.TopologySpreadConstraint] = (),
    ) -> api.Pod:
        index = self.made
        self.made += 1
        return api.Pod(
            metadata=ObjectMeta(
                name=f"pod-{index:06d}", namespace=NAMESPACE, uid=f"uid-{index:06d}", labels=labels
            ),
            spec=api.PodSpec(
                containers=[
                    api.Container(name="app", resources=api.ResourceRequirements(requests=requests))
                ],
                affinity=affinity,
                topology_spread_constraints=list(spread),
            ),
        )

    # Karpenter's makeGenericPods, makeTopologySpreadPods, makePodAffinityPods and
    # makePodAntiAffinityPods, one pod at a time.

    def generic(self) -> api.Pod:
        labels = {"my-label": self.label_value()}
        return self.pod(labels, self.requests())

    def spread(self, topology_key: str) -> api.Pod:
        labels = {"my-label": self.label_value()}
        selector = {"my-label": self.label_value()}
        constraint = api.TopologySpreadConstraint(
            max_skew=1,
            topology_key=topology_key,
            when_unsatisfiable="DoNotSchedule",
            label_selector=api.LabelSelector(match_labels=selector),
        )
        return self.pod(labels, self.requests(), spread=[constraint])

    def self_affinity(self, topology_key: str) -> api.Pod:
        labels = {"my-affininity": self.label_value()}  # Karpenter's spelling
        term = api.PodAffinityTerm(
            label_selector=api.LabelSelector(match_labels=dict(labels)), topology_key=topology_key
        )
        affinity = api.Affinity(
            pod_affinity=api.PodAffinity(required_during_scheduling_ignored_during_execution=[term])
        )
        return self.pod(labels, self.requests(), affinity=affinity)

    def anti_affinity(self, topology_key: str) -> api.Pod:
        labels = {"app": "nginx"}
        term = api.PodAffinityTerm(
            label_selector=api.LabelSelector(match_labels=dict(labels)), topology_key=topology_key
        )
        affinity = api.Affinity(
            pod_anti_affinity=api.PodAffinity(
                required_during_scheduling_ignored_during_execution=[term]
            )
        )
        return self.pod(labels, self.requests(), affinity=affinity)


def plain_pods(count: int, seed: int = 42) -> list[api.Pod]:
    factory = PodFactory(seed)
    return [factory.generic() for _ in range(count)]


def diverse_pods(count: int, seed: int = 42) -> list[api.Pod]:
    """Karpenter's ``makeDiversePods``: a fifth of each kind, the remainder plain."""
    factory = PodFactory(seed)
    fifth = count // 5
    kinds: list[Callable[[], api.Pod]] = [
        factory.generic,
        lambda: factory.spread(ZONE_LABEL),
        lambda: factory.spread(HOSTNAME_LABEL),
        lambda: factory.self_affinity(ZONE_LABEL),
        lambda: factory.anti_affinity(HOSTNAME_LABEL),
    ]
    pods = [make() for make in kinds for _ in range(fifth)]
    pods.extend(factory.generic() for _ in range(count - len(pods)))
    return pods


def preference_pods(count: int, seed: int = 42) -> list[api.Pod]:
    """Karpenter's ``makePreferencePods``: identical pods (its ``test.Pods`` draws the
    requests once) labelled ``app: nginx`` that prefer test-zone-1 and prefer, with weights
    10 and 1, not to share a zone (impossible) or a host (possible) with each other."""
    factory = PodFactory(seed)
    requests = factory.requests()
    labels = {"app": "nginx"}

    def anti(weight: int, topology_key: str) -> api.WeightedPodAffinityTerm:
        return api.WeightedPodAffinityTerm(
            weight=weight,
            pod_affinity_term=api.PodAffinityTerm(
                label_selector=api.LabelSelector(match_labels=dict(labels)),
                topology_key=topology_key,
            ),
        )

    affinity = api.Affinity(
        node_affinity=api.NodeAffinity(
            preferred_during_scheduling_ignored_during_execution=[
                api.PreferredSchedulingTerm(
                    weight=1,
                    preference=api.NodeSelectorTerm(
                        match_expressions=[
                            api.NodeSelectorRequirement(
                                key=ZONE_LABEL, operator="In", values=["test-zone-1"]
                            )
                        ]
                    ),
                )
            ]
        ),
        pod_anti_affinity=api.PodAffinity(
            preferred_during_scheduling_ignored_during_execution=[
                anti(10, ZONE_LABEL),
                anti(1, HOSTNAME_LABEL),
            ]
        ),
    )
    return [factory.pod(dict(labels), dict(requests), affinity=affinity) for _ in range(count)]


POD_MIXES: dict[str, Callable[[int], list[api.Pod]]] = {
    "plain": plain_pods,
    "diverse": diverse_pods,
    "preferences": preference_pods,
}


def pod_requests(pods: Sequence[api.Pod]) -> list[PodRequest]:
    """The solver's view of ``pods`` through the real parser, in creation order."""
    return [pod_request(pod, order) for order, pod in enumerate(pods)]


# -- prices ----------------------------------------------------------------------------------


def launch_options(claim: NewNodeClaim) -> list[tuple[float, InstanceType]]:
    """(cheapest compatible available offering, type) for each type the claim can launch."""
    options = []
    for it in claim.instance_types:
        prices = [o.price for o in it.offerings if o.available and o.matches(claim.requirements)]
        if prices:
            options.append((min(prices), it))
    return options


def claim_price(claim: NewNodeClaim) -> float:
    options = launch_options(claim)
    return min(price for price, _ in options) if options else float("inf")


def lp_lower_bound(requests: Iterable[PodRequest], catalog: Sequence[InstanceType]) -> float:
    """The cheapest fleet with fractional nodes that covers the pods' total CPU, memory and
    pod slots: min sum(price_i x_i) s.t. sum(allocatable_i x_i) >= demand, x >= 0.

    Any real packing is a feasible integer point of this LP, so no solver can be cheaper.
    """
    from scipy.optimize import linprog  # noqa: PLC0415 - only this figure needs scipy

    names = (CPU, MEMORY, PODS)
    scale = {CPU: 1000, MEMORY: 1000 * GIB, PODS: 1000}  # milli-units to cores, GiB, pods
    demand = dict.fromkeys(names, 0)
    for pod in requests:
        for name in names:
            demand[name] += pod.requests.get(name, 0)
    prices: list[float] = []
    columns: list[list[float]] = []
    for it in catalog:
        offered = [o.price for o in it.offerings if o.available]
        if not offered:
            continue
        allocatable = it.allocatable()
        prices.append(min(offered))
        columns.append([allocatable.get(name, 0) / scale[name] for name in names])
    rows = [[-column[r] for column in columns] for r in range(len(names))]
    needed = [-demand[name] / scale[name] for name in names]
    solution = linprog(prices, A_ub=rows, b_ub=needed, bounds=(0, None), method="highs")
    if not solution.success:
        raise RuntimeError(f"LP lower bound failed: {solution.message}")
    return float(solution.fun)


# -- validation ------------------------------------------------------------------------------


def selects(selector: api.LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Label-selector semantics: a missing selector selects nothing, an empty one all."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    for e in selector.match_expressions:
        present = e.key in labels
        ok = {
            "In": present and labels.get(e.key) in e.values,
            "NotIn": not present or labels.get(e.key) not in e.values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(e.operator, False)
        if not ok:
            return False
    return True


def _selector_key(selector: api.LabelSelector | None) -> str:
    return "<nil>" if selector is None else selector.model_dump_json()


@dataclass
class Placement:
    """Where each pod of a result may run: the possible values of a topology key for the
    node it was placed on (one value once the NodeClaim is pinned, several before)."""

    result: SchedulingResult
    zones: frozenset[str]
    location: dict[str, tuple[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, claim in enumerate(self.result.new_node_claims):
            for pod in claim.pods:
                self.location.setdefault(pod.key, ("claim", index))
        for node_index, pods in enumerate(self.result.existing_nodes.values()):
            for pod in pods:
                self.location.setdefault(pod.key, ("node", node_index))
        self._zones: dict[int, frozenset[str]] = {}

    def domains(self, pod_key: str, topology_key: str) -> frozenset[str] | None:
        """Possible domains of the pod's node for ``topology_key``; None when unknown."""
        kind, index = self.location[pod_key]
        if topology_key == HOSTNAME_LABEL:
            return frozenset({f"{kind}-{index}"})
        if kind != "claim":
            return None
        claim = self.result.new_node_claims[index]
        if topology_key == ZONE_LABEL:
            if index not in self._zones:
                self._zones[index] = frozenset(
                    o.zone
                    for it in claim.instance_types
                    for o in it.offerings
                    if o.available and o.matches(claim.requirements)
                )
            return self._zones[index]
        requirement = claim.requirements.get(topology_key)
        if requirement is None or requirement.complement:
            return None
        return requirement.values

    def domain(self, pod_key: str, topology_key: str) -> str | None:
        """The single domain the pod will run in, or None while it could be several."""
        possible = self.domains(pod_key, topology_key)
        return next(iter(possible)) if possible is not None and len(possible) == 1 else None


@dataclass(frozen=True)
class Violation:
    """One broken promise: ``kind`` groups them in the report (placement, fit,
    anti-affinity, affinity, spread)."""

    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def _placement_violations(
    requests: Sequence[PodRequest], result: SchedulingResult
) -> tuple[list[Violation], int]:
    placed: Counter[str] = Counter()
    for claim in result.new_node_claims:
        placed.update(p.key for p in claim.pods)
    for pods in result.existing_nodes.values():
        placed.update(p.key for p in pods)
    problems = []
    keys = {r.key for r in requests}
    for key, times in placed.items():
        if times > 1:
            problems.append(f"{key} placed {times} times")
        if key not in keys:
            problems.append(f"{key} placed but never asked for")
        if key in result.errors:
            problems.append(f"{key} both placed and reported unschedulable")
    missing = [key for key in keys if key not in placed and key not in result.errors]
    problems.extend(f"{key} neither placed nor reported" for key in sorted(missing))
    violations = [Violation("placement", problem) for problem in problems]
    unscheduled = len(keys) - len(keys & placed.keys())
    return violations, unscheduled


def _fit_violations(result: SchedulingResult) -> list[Violation]:
    violations = []
    for index, claim in enumerate(result.new_node_claims):
        options = launch_options(claim)
        if not options:
            violations.append(Violation("fit", f"NodeClaim {index} has no launchable offering"))
            continue
        price, cheapest = min(options, key=lambda option: option[0])
        allocatable = cheapest.allocatable()
        total: Counter[str] = Counter()
        for pod in claim.pods:
            total.update(pod.requests)
        short = [name for name, value in total.items() if value > allocatable.get(name, 0)]
        if short:
            violations.append(
                Violation(
                    "fit",
                    f"NodeClaim {index}: cheapest type {cheapest.name} (${price:.2f}/h) is "
                    f"short of {', '.join(sorted(short))} for its {len(claim.pods)} pods",
                )
            )
    return violations


def _term_namespaces(owner: api.Pod, term: api.PodAffinityTerm) -> frozenset[str] | None:
    """Namespaces a term selects in; None for all (a namespace selector is taken as all)."""
    if term.namespace_selector is not None:
        return None
    return frozenset(term.namespaces or [owner.namespace])


def _matching(
    pods: Sequence[api.Pod], selector: api.LabelSelector | None, namespaces: frozenset[str] | None
) -> set[str]:
    return {
        p.key
        for p in pods
        if (namespaces is None or p.namespace in namespaces)
        and selects(selector, p.metadata.labels)
    }


def _required_terms(pod: api.Pod, anti: bool) -> list[api.PodAffinityTerm]:
    affinity = pod.spec.affinity
    if affinity is None:
        return []
    block = affinity.pod_anti_affinity if anti else affinity.pod_affinity
    if block is None:
        return []
    return list(block.required_during_scheduling_ignored_during_execution)


def _anti_affinity_violations(pods: Sequence[api.Pod], where: Placement) -> list[Violation]:
    """No pod matching a required anti-affinity term may share any possible domain with the
    term's owner (in either order of arrival, so this also covers inverse anti-affinity)."""
    groups: dict[tuple[str, str, frozenset[str] | None], list[api.Pod]] = defaultdict(list)
    selectors: dict[str, api.LabelSelector | None] = {}
    for pod in pods:
        for term in _required_terms(pod, anti=True):
            key = _selector_key(term.label_selector)
            selectors[key] = term.label_selector
            groups[(term.topology_key, key, _term_namespaces(pod, term))].append(pod)
    violations = []
    for (topology_key, selector_key, namespaces), owners in groups.items():
        matching = _matching(pods, selectors[selector_key], namespaces)
        crowd: Counter[str] = Counter()
        for key in matching:
            crowd.update(where.domains(key, topology_key) or ())
        for owner in owners:
            possible = where.domains(owner.key, topology_key)
            if possible is None:
                continue
            own = 1 if owner.key in matching else 0
            shared = sorted(d for d in possible if crowd[d] - own > 0)
            if shared:
                violations.append(
                    Violation(
                        "anti-affinity",
                        f"{owner.key} on {topology_key} shares {shared[0]} with "
                        f"{crowd[shared[0]] - own} matching pod(s)",
                    )
                )
    return violations


def _affinity_violations(pods: Sequence[api.Pod], where: Placement) -> list[Violation]:
    """A pod with required affinity runs where a matching pod runs; pods that select
    themselves may bootstrap one domain, so they must not split across new domains."""
    groups: dict[tuple[str, str, frozenset[str] | None], list[api.Pod]] = defaultdict(list)
    selectors: dict[str, api.LabelSelector | None] = {}
    for pod in pods:
        for term in _required_terms(pod, anti=False):
            key = _selector_key(term.label_selector)
            selectors[key] = term.label_selector
            groups[(term.topology_key, key, _term_namespaces(pod, term))].append(pod)
    violations = []
    for (topology_key, selector_key, namespaces), owners in groups.items():
        matching = _matching(pods, selectors[selector_key], namespaces)
        selecting = [o for o in owners if o.key in matching]
        claims = {where.location[o.key] for o in selecting}
        own_domains: set[str] = set()
        for owner in selecting:
            domain = where.domain(owner.key, topology_key)
            if domain is None and len(claims) > 1:
                violations.append(
                    Violation(
                        "affinity",
                        f"{owner.key} on {topology_key}: its node is not pinned to one domain "
                        "while its group spans several nodes",
                    )
                )
            elif domain is not None:
                own_domains.add(domain)
        owner_keys = {o.key for o in owners}
        others = {where.domain(k, topology_key) for k in matching - owner_keys} - {None}
        if len(own_domains - others) > 1:
            violations.append(
                Violation(
                    "affinity",
                    f"group {selector_key} on {topology_key} split across "
                    f"{sorted(own_domains - others)}",
                )
            )
        for owner in owners:
            if owner.key in matching:
                continue
            domain = where.domain(owner.key, topology_key)
            if domain is None or not any(where.domain(k, topology_key) == domain for k in matching):
                violations.append(
                    Violation("affinity", f"{owner.key}: no matching pod in its {topology_key}")
                )
    return violations


def _spread_violations(pods: Sequence[api.Pod], where: Placement) -> list[Violation]:
    """Required topology spread, checked in the form a finished result can prove.

    A pod that carries a constraint and matches its selector was admitted to domain d only
    if count(d) + 1 - min <= maxSkew, counting every matching pod on a node pinned to a
    domain; counts only grow, so at the end, per domain, the constrained self-matching pods
    must number at most maxSkew + (final min). For hostname the min is 0, because a new
    node is always possible. Final counts of all matching pods are not bounded by maxSkew:
    pods without the constraint may land anywhere after the last constrained one.
    """
    groups: dict[tuple[str, str, int, str], list[api.Pod]] = defaultdict(list)
    selectors: dict[str, api.LabelSelector | None] = {}
    for pod in pods:
        for c in pod.spec.topology_spread_constraints:
            if c.when_unsatisfiable != "DoNotSchedule":
                continue
            key = _selector_key(c.label_selector)
            selectors[key] = c.label_selector
            groups[(c.topology_key, key, c.max_skew, pod.namespace)].append(pod)
    violations = []
    for (topology_key, selector_key, max_skew, namespace), owners in groups.items():
        matching = _matching(pods, selectors[selector_key], frozenset({namespace}))
        counts: Counter[str] = Counter()
        for key in matching:
            domain = where.domain(key, topology_key)
            if domain is not None:
                counts[domain] += 1
        if topology_key == HOSTNAME_LABEL:
            floor = 0
        else:
            universe = where.zones if topology_key == ZONE_LABEL else set(counts)
            floor = min((counts[d] for d in universe), default=0)
        admitted: Counter[str] = Counter()
        for owner in owners:
            domain = where.domain(owner.key, topology_key)
            if domain is None:
                violations.append(
                    Violation(
                        "spread", f"{owner.key} on {topology_key}: its node is not pinned to one"
                    )
                )
            elif owner.key in matching:
                admitted[domain] += 1
        for domain, count in sorted(admitted.items()):
            if count > max_skew + floor:
                violations.append(
                    Violation(
                        "spread",
                        f"{selector_key} on {topology_key}: {count} constrained pods in "
                        f"{domain}, more than maxSkew {max_skew} + min {floor}",
                    )
                )
    return violations


def validate(
    pods: Sequence[api.Pod],
    requests: Sequence[PodRequest],
    result: SchedulingResult,
    zones: Iterable[str] = ZONES,
) -> tuple[list[Violation], int]:
    """Every broken promise in ``result`` (empty when sound) and the unscheduled count."""
    violations, unscheduled = _placement_violations(requests, result)
    violations += _fit_violations(result)
    where = Placement(result, frozenset(zones))
    placed = [p for p in pods if p.key in where.location]
    violations += _anti_affinity_violations(placed, where)
    violations += _affinity_violations(placed, where)
    violations += _spread_violations(placed, where)
    return violations, unscheduled


# -- running ---------------------------------------------------------------------------------


@dataclass
class Run:
    mix: str
    policy: str
    pods: int
    seconds: float
    #: CPU time of the process during the solve: steadier than wall time on a busy machine.
    cpu_seconds: float
    node_claims: int
    price: float
    unscheduled: int
    violations: list[Violation]
    bound: float | None = None
    profile: pstats.Stats | None = None

    @property
    def ratio(self) -> float | None:
        return self.price / self.bound if self.bound else None


def run(
    mix: str,
    count: int,
    catalog: Sequence[InstanceType],
    policy: str = "Respect",
    profile: bool = False,
) -> Run:
    """Build ``count`` pods of ``mix``, time one solve, and check its result."""
    pods = POD_MIXES[mix](count)
    requests = pod_requests(pods)
    template = node_pool(catalog)
    options = SolverOptions(preference_policy=policy)
    profiler = cProfile.Profile() if profile else None
    gc.collect()
    started, cpu_started = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    result = solve(requests, [], [template], options)
    if profiler is not None:
        profiler.disable()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    violations, unscheduled = validate(pods, requests, result)
    return Run(
        mix=mix,
        policy=policy,
        pods=count,
        seconds=elapsed,
        cpu_seconds=cpu,
        node_claims=len(result.new_node_claims),
        price=sum(claim_price(c) for c in result.new_node_claims),
        unscheduled=unscheduled,
        violations=violations,
        bound=lp_lower_bound(requests, catalog) if mix == "plain" else None,
        profile=pstats.Stats(profiler) if profiler is not None else None,
    )


COLUMNS = (
    ("mix", 19),
    ("pods", 6),
    ("seconds", 8),
    ("cpu s", 8),
    ("pods/s", 7),
    ("nodeclaims", 10),
    ("$/h", 9),
    ("LP bound", 9),
    ("ratio", 6),
    ("unscheduled", 11),
    ("violations", 10),
    ("peak RSS", 9),
)


def _row(cells: Sequence[object]) -> str:
    return " ".join(f"{c!s:>{w}}" for c, (_, w) in zip(cells, COLUMNS, strict=True))


def _print_violations(violations: Sequence[Violation], show: int) -> None:
    """Counts per kind, then the first ``show`` examples of each kind."""
    by_kind: dict[str, list[Violation]] = defaultdict(list)
    for violation in violations:
        by_kind[violation.kind].append(violation)
    for kind, found in by_kind.items():
        print(f"    {len(found)} {kind} violation(s), e.g.")
        for violation in found[:show]:
            print(f"      {violation.message}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--mix", choices=MIXES, default="diverse")
    parser.add_argument("--pods", type=int, nargs="+", help="pod counts (default per mix)")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile each solve; top 25 by cumulative time"
    )
    parser.add_argument(
        "--show", type=int, default=2, help="examples per violation kind (default 2)"
    )
    args = parser.parse_args(argv)
    catalog = instance_types()
    policies = ("Respect", "Ignore") if args.mix == "preferences" else ("Respect",)
    print(_row([name for name, _ in COLUMNS]))
    failed = False
    for count in args.pods or DEFAULT_COUNTS[args.mix]:
        for policy in policies:
            result = run(args.mix, count, catalog, policy, args.profile)
            failed |= result.unscheduled > 0 or bool(result.violations)
            peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            label = f"{args.mix}/{policy.lower()}" if len(policies) > 1 else args.mix
            print(
                _row(
                    [
                        label,
                        count,
                        f"{result.seconds:.3f}",
                        f"{result.cpu_seconds:.3f}",
                        f"{count / result.seconds:.0f}",
                        result.node_claims,
                        f"{result.price:.2f}",
                        "-" if result.bound is None else f"{result.bound:.2f}",
                        "-" if result.ratio is None else f"{result.ratio:.3f}",
                        result.unscheduled,
                        len(result.violations),
                        f"{peak_mib:.0f} MiB",
                    ]
                )
            )
            _print_violations(result.violations, args.show)
            if result.profile is not None:
                result.profile.sort_stats("cumulative").print_stats(PROFILE_LINES)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
