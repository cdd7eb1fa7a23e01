"""Property: whatever the input, no placement breaks resources, taints or node requirements."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.api.labels import ZONE_LABEL
from nodewright.scheduling.model import ExistingNode, HostPort, PodRequest
from nodewright.scheduling.resources import merge, resources
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.taints import NO_SCHEDULE, PREFER_NO_SCHEDULE, Taint, Toleration
from tests.scheduling.scheduling_fakes import fake_catalog, node_pool, pod

ZONES = ["test-zone-1", "test-zone-2", "test-zone-3"]
TAINTS = [Taint("dedicated", NO_SCHEDULE, "a"), Taint("spare", PREFER_NO_SCHEDULE)]


@st.composite
def pods(draw: st.DrawFn) -> PodRequest:
    cpu = draw(st.sampled_from(["100m", "500m", "1", "1.5", "3", "7", "20"]))
    memory = draw(st.sampled_from(["64Mi", "512Mi", "1Gi", "3Gi", "60Gi"]))
    selector = {}
    if draw(st.booleans()):
        selector[ZONE_LABEL] = draw(st.sampled_from(ZONES))
    terms = None
    if draw(st.booleans()):
        terms = [
            [(ZONE_LABEL, "In", [z])] for z in draw(st.lists(st.sampled_from(ZONES), max_size=2))
        ] or None
    if draw(st.booleans()):
        selector["kubernetes.io/arch"] = draw(st.sampled_from(["amd64", "arm64"]))
    tolerations = (
        [Toleration("dedicated", "Equal", "a", NO_SCHEDULE)] if draw(st.booleans()) else []
    )
    ports = [HostPort(80)] if draw(st.integers(0, 4)) == 0 else []
    return pod(
        cpu, memory, node_selector=selector, terms=terms, tolerations=tolerations, host_ports=ports
    )


@st.composite
def existing_nodes(draw: st.DrawFn) -> list[ExistingNode]:
    nodes = []
    for i in range(draw(st.integers(0, 3))):
        nodes.append(
            ExistingNode(
                name=f"node-{i}",
                labels={ZONE_LABEL: draw(st.sampled_from(ZONES)), "kubernetes.io/arch": "amd64"},
                taints=tuple(draw(st.lists(st.sampled_from(TAINTS), max_size=1))),
                allocatable=resources(cpu="4", memory="8Gi", pods=5),
                requested=resources(cpu=draw(st.sampled_from(["0", "1", "3.5"])), pods=1),
                host_ports=(HostPort(80),) if draw(st.booleans()) else (),
                initialized=draw(st.booleans()),
            )
        )
    return nodes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batch=st.lists(pods(), min_size=1, max_size=25),
    nodes=existing_nodes(),
    tainted=st.lists(st.sampled_from(TAINTS), max_size=2, unique=True),
    zones=st.lists(st.sampled_from(ZONES), min_size=1, max_size=3, unique=True),
    limit=st.sampled_from([None, "8", "40"]),
    weight=st.integers(0, 2),
)
def test_no_placement_breaks_the_rules(
    *,
    batch: list[PodRequest],
    nodes: list[ExistingNode],
    tainted: list[Taint],
    zones: list[str],
    limit: str | None,
    weight: int,
) -> None:
    pools = [
        node_pool(
            "tainted",
            weight=weight,
            taints=tainted,
            requirements=[(ZONE_LABEL, "In", zones)],
            remaining=resources(cpu=limit) if limit else None,
            daemon_overhead=resources(cpu="200m", memory="100Mi", pods=1),
        ),
        node_pool("plain", weight=1, requirements=[(ZONE_LABEL, "In", zones)]),
    ]
    result = solve(batch, nodes, pools)

    placed = [p.key for c in result.new_node_claims for p in c.pods]
    placed += [p.key for ps in result.existing_nodes.values() for p in ps]
    assert sorted(placed + list(result.errors)) == sorted(p.key for p in batch)

    by_name = {n.name: n for n in nodes}
    for name, on_node in result.existing_nodes.items():
        node = by_name[name]
        total = merge(node.requested, *(p.requests for p in on_node))
        assert all(total.get(k, 0) <= v for k, v in node.allocatable.items())
        for p in on_node:
            for taint in node.taints:
                assert any(t.tolerates(taint) for t in p.tolerations) or (
                    taint.effect == PREFER_NO_SCHEDULE
                )
            assert any(term.matches_labels(node.labels) for term in p.requirement_terms)
        ports = [hp for p in on_node for hp in p.host_ports] + list(node.host_ports)
        assert len(ports) == len(set(ports))

    catalog = {it.name: it for it in fake_catalog()}
    template = {p.name: p for p in pools}
    for claim in result.new_node_claims:
        pool = template[claim.node_pool]
        assert claim.instance_types
        overhead = pool.daemon_groups[0].overhead if pool.daemon_groups else {}
        total = merge(overhead, *(p.requests for p in claim.pods))
        assert claim.requests == total
        for it in claim.instance_types:
            allocatable = catalog[it.name].allocatable()
            assert all(v <= allocatable.get(k, 0) for k, v in total.items() if v > 0), it.name
            assert not it.requirements.intersects(claim.requirements)
            assert any(o.available and o.matches(claim.requirements) for o in it.offerings)
        for p in claim.pods:
            for taint in pool.taints:
                assert any(t.tolerates(taint) for t in p.tolerations) or (
                    taint.effect == PREFER_NO_SCHEDULE
                )
            assert any(claim.requirements.compatible(term) for term in p.requirement_terms)
        ports = [hp for p in claim.pods for hp in p.host_ports]
        assert len(ports) == len(set(ports))
    if limit:
        tainted_cpu = sum(
            max(it.capacity["cpu"] for it in c.instance_types)
            for c in result.new_node_claims
            if c.node_pool == "tainted"
        )
        assert tainted_cpu <= resources(cpu=limit)["cpu"]
