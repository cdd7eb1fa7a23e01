"""Property: whatever the workloads, no placement breaks a hard topology constraint.

Random workloads (replicas of one size) each carry one constraint kind: zonal or hostname
spread, zonal self-affinity, hostname self anti-affinity, or none. Whatever the solver does,
the outcome must respect every required constraint it accepted.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.api.labels import HOSTNAME_LABEL, ZONE_LABEL
from nodewright.scheduling.model import PodRequest, SchedulingResult
from nodewright.scheduling.selectors import LabelSelector
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.topology import (
    AFFINITY,
    ANTI_AFFINITY,
    SPREAD,
    NodeFilter,
    TopologyTerm,
)
from tests.scheduling.scheduling_fakes import node_pool, pod

ALL_ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
KINDS = ("none", "zone-spread", "host-spread", "zone-affinity", "host-anti")


def constraint(kind: str, app: str, skew: int) -> TopologyTerm | None:
    selector = LabelSelector.of({"app": app})
    namespaces = frozenset({"default"})
    if kind == "zone-spread":
        return TopologyTerm(SPREAD, ZONE_LABEL, selector, namespaces, skew, None, NodeFilter())
    if kind == "host-spread":
        return TopologyTerm(SPREAD, HOSTNAME_LABEL, selector, namespaces, skew, None, NodeFilter())
    if kind == "zone-affinity":
        return TopologyTerm(AFFINITY, ZONE_LABEL, selector, namespaces)
    if kind == "host-anti":
        return TopologyTerm(ANTI_AFFINITY, HOSTNAME_LABEL, selector, namespaces)
    return None


@st.composite
def workloads(draw: st.DrawFn) -> list[tuple[str, TopologyTerm | None, list[PodRequest]]]:
    result = []
    for index in range(draw(st.integers(1, 4))):
        app = f"app-{index}"
        kind = draw(st.sampled_from(KINDS))
        term = constraint(kind, app, draw(st.integers(1, 2)))
        cpu = draw(st.sampled_from(["100m", "500m", "1", "1.5", "3"]))
        replicas = draw(st.integers(1, 8))
        pods = [
            dataclasses.replace(
                pod(cpu, "256Mi"),
                labels={"app": app},
                topology=(term,) if term is not None else (),
            )
            for _ in range(replicas)
        ]
        result.append((kind, term, pods))
    return result


def domains(result: SchedulingResult) -> dict[str, tuple[str, frozenset[str]]]:
    """Pod key -> (hostname, zones its NodeClaim may still land in)."""
    where: dict[str, tuple[str, frozenset[str]]] = {}
    for claim in result.new_node_claims:
        zone = claim.requirements.get(ZONE_LABEL)
        zones = zone.values if zone is not None and not zone.complement else frozenset(ALL_ZONES)
        for placed in claim.pods:
            where[placed.key] = (claim.hostname, zones)
    return where


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_no_placement_breaks_a_required_topology_constraint(
    loads: list[tuple[str, TopologyTerm | None, list[PodRequest]]],
) -> None:
    batch = [p for _, _, pods in loads for p in pods]
    result = solve(batch, [], [node_pool()])
    where = domains(result)
    assert set(where) | set(result.errors) == {p.key for p in batch}
    for kind, term, pods in loads:
        placed = [where[p.key] for p in pods if p.key in where]
        if term is None:
            assert len(placed) == len(pods), "unconstrained pods always fit the fake catalog"
            continue
        hosts = Counter(host for host, _ in placed)
        if kind == "host-anti":
            assert all(count == 1 for count in hosts.values())
        elif kind == "host-spread":
            assert all(count <= term.max_skew for count in hosts.values())
        elif kind == "zone-affinity":
            together = {z for _, zs in placed for z in zs}
            assert len(together) <= 1, f"self-affinity spread over {sorted(together)}"
        elif kind == "zone-spread":
            per_zone: defaultdict[str, int] = defaultdict(int)
            for _, zones in placed:
                assert len(zones) == 1, "spread pods sit on NodeClaims pinned to one zone"
                per_zone[next(iter(zones))] += 1
            counts = [per_zone.get(z, 0) for z in ALL_ZONES]
            assert max(counts) - min(counts) <= term.max_skew
