"""Solver behaviour, from Karpenter's must-pass scheduling scenarios and the basics around them."""

from __future__ import annotations

import dataclasses

import pytest

from nodewright.api.labels import (
    INSTANCE_TYPE_LABEL,
    KNOWN_EPHEMERAL_TAINTS,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.scheduling.instancetype import Offering
from nodewright.scheduling.model import (
    ExistingNode,
    HostPort,
    NewNodeClaim,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.resources import resources
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.taints import Taint, Toleration
from tests.scheduling.scheduling_fakes import (
    capacity_types_of,
    fake_catalog,
    instance_type,
    node_pool,
    pod,
    zone_of,
)


def cheapest(claim: NewNodeClaim) -> str:
    return claim.instance_types[0].name


def scheduled(result: SchedulingResult) -> int:
    return result.scheduled_count()


# -- §10 scenarios ---------------------------------------------------------------------------


def test_small_pod_goes_on_the_smallest_instance() -> None:
    result = solve([pod(memory="100M")], [], [node_pool()])
    assert len(result.new_node_claims) == 1
    assert cheapest(result.new_node_claims[0]) == "small-instance-type"


def test_packs_small_and_large_pods_together() -> None:
    amd64 = [("kubernetes.io/arch", "In", ["amd64"])]
    large = [pod(memory="1.8G", terms=[amd64]) for _ in range(40)]
    small = [pod(memory="400M", terms=[amd64]) for _ in range(20)]
    result = solve(small + large, [], [node_pool()])
    assert not result.errors
    assert len(result.new_node_claims) == 20
    assert {cheapest(c) for c in result.new_node_claims} == {"default-instance-type"}
    for claim in result.new_node_claims:
        assert sorted(p.requests.get("memory", 0) for p in claim.pods) == [
            400_000_000_000,
            1_800_000_000_000,
            1_800_000_000_000,
        ]


def test_new_nodes_when_pod_slots_run_out() -> None:
    result = solve([pod() for _ in range(25)], [], [node_pool()])
    assert len(result.new_node_claims) == 5
    assert all(len(c.pods) == 5 for c in result.new_node_claims)
    assert {cheapest(c) for c in result.new_node_claims} == {"small-instance-type"}


def test_a_solve_opens_no_more_nodeclaims_than_allowed_and_the_rest_wait() -> None:
    options = SolverOptions(max_new_claims=2)
    result = solve([pod() for _ in range(25)], [], [node_pool()], options)
    assert result.capped
    assert [len(c.pods) for c in result.new_node_claims] == [5, 5]
    # The pods it did not reach wait for the next pass, with no error.
    assert not result.errors
    uncapped = solve([pod() for _ in range(25)], [], [node_pool()], SolverOptions(max_new_claims=5))
    assert not uncapped.capped
    assert len(uncapped.new_node_claims) == 5


def test_init_container_requests_count_when_binpacking() -> None:
    # pod_requests turns (1 CPU app, 2 CPU init) into 2 CPU; 2-CPU types hold only 1.9.
    result = solve([pod(cpu="2", memory="1Gi")], [], [node_pool()])
    assert cheapest(result.new_node_claims[0]) == "default-instance-type"
    names = {it.name for it in result.new_node_claims[0].instance_types}
    assert "small-instance-type" not in names


def test_relaxes_ored_required_terms_until_one_works() -> None:
    terms = [
        [(ZONE_LABEL, "In", ["invalid"])],
        [(ZONE_LABEL, "In", ["invalid"])],
        [(ZONE_LABEL, "In", ["test-zone-1"])],
        [(ZONE_LABEL, "In", ["test-zone-2"])],
    ]
    result = solve([pod(terms=terms)], [], [node_pool()])
    assert not result.errors
    assert zone_of(result.new_node_claims[0].requirements) == {"test-zone-1"}


def test_never_relaxes_the_final_required_term() -> None:
    result = solve([pod(terms=[[(ZONE_LABEL, "In", ["invalid"])]])], [], [node_pool()])
    assert not result.new_node_claims
    assert "default/" in next(iter(result.errors))
    (message,) = result.errors.values()
    assert message.startswith('incompatible with nodepool "default", ')
    assert "no instance type" in message


def test_relaxes_to_lighter_preferred_terms() -> None:
    preferred = [
        (100, [(ZONE_LABEL, "In", ["invalid"])]),
        (50, [(ZONE_LABEL, "In", ["test-zone-2"])]),
        (1, [(ZONE_LABEL, "In", ["test-zone-1"])]),
    ]
    pool = node_pool(requirements=[(ZONE_LABEL, "In", ["test-zone-1", "test-zone-2"])])
    result = solve([pod(preferred=preferred)], [], [pool])
    assert zone_of(result.new_node_claims[0].requirements) == {"test-zone-2"}


def test_preferences_ignored_by_policy() -> None:
    preferred = [(100, [(ZONE_LABEL, "In", ["test-zone-3"])])]
    respected = solve([pod(preferred=preferred)], [], [node_pool()])
    assert zone_of(respected.new_node_claims[0].requirements) == {"test-zone-3"}
    ignored = solve(
        [pod(preferred=preferred)], [], [node_pool()], SolverOptions(preference_policy="Ignore")
    )
    assert ZONE_LABEL not in ignored.new_node_claims[0].requirements


def _as_in_flight(claim: NewNodeClaim, name: str) -> ExistingNode:
    it = claim.instance_types[0]
    return ExistingNode(
        name=name,
        labels={NODEPOOL_LABEL: claim.node_pool, INSTANCE_TYPE_LABEL: it.name},
        taints=(Taint("karpenter.sh/unregistered", "NoExecute"),),
        allocatable=it.allocatable(),
        requested=dict(claim.requests),
        initialized=False,
        node_claim=name,
        node_pool=claim.node_pool,
        in_flight=True,
    )


def test_in_flight_node_is_reused_instead_of_launching_another() -> None:
    first = solve([pod(cpu="1")], [], [node_pool()])
    (claim,) = first.new_node_claims
    in_flight = _as_in_flight(claim, "default-abcde")
    second = solve([pod(cpu="100m")], [in_flight], [node_pool()])
    assert not second.new_node_claims
    assert list(second.existing_nodes) == ["default-abcde"]


def test_pods_with_the_same_host_port_get_different_nodes() -> None:
    port = HostPort(8080)
    result = solve([pod(host_ports=[port]), pod(host_ports=[port])], [], [node_pool()])
    assert len(result.new_node_claims) == 2
    udp = solve(
        [pod(host_ports=[port]), pod(host_ports=[HostPort(8080, "UDP")])], [], [node_pool()]
    )
    assert len(udp.new_node_claims) == 1


def test_daemonset_overhead_counts_towards_the_node() -> None:
    daemons = resources(cpu="2", memory="2Gi", pods=1)
    result = solve([pod(cpu="1", memory="1Gi")], [], [node_pool(daemon_overhead=daemons)])
    (claim,) = result.new_node_claims
    assert cheapest(claim) == "default-instance-type"
    assert claim.requests == resources(cpu="3", memory="3Gi", pods=2)


def test_partially_schedules_when_limits_would_be_exceeded() -> None:
    pool = node_pool(remaining=resources(cpu="3"))
    result = solve([pod(cpu="1.5"), pod(cpu="1.5")], [], [pool])
    assert scheduled(result) == 1
    assert [cheapest(c) for c in result.new_node_claims] == ["small-instance-type"]
    assert list(result.errors.values()) == [
        'all available instance types exceed limits for nodepool: "default"'
    ]


def test_highest_weight_nodepool_always_wins() -> None:
    pools = [node_pool("low"), node_pool("mid", weight=20), node_pool("high", weight=100)]
    result = solve([pod(cpu="1") for _ in range(10)], [], pools)
    assert {c.node_pool for c in result.new_node_claims} == {"high"}


def test_equal_weights_prefer_the_name_sorting_last() -> None:
    result = solve([pod()], [], [node_pool("alpha"), node_pool("beta")])
    assert result.new_node_claims[0].node_pool == "beta"


# -- instance-type choice ----------------------------------------------------------------------


def test_instance_types_are_listed_cheapest_first_and_pinned_in_requirements() -> None:
    result = solve([pod(cpu="1")], [], [node_pool()])
    (claim,) = result.new_node_claims
    names = [it.name for it in claim.instance_types]
    assert names[0] == "small-instance-type"
    prices = [min(o.price for o in it.offerings) for it in claim.instance_types]
    assert prices == sorted(prices)
    assert claim.requirements[INSTANCE_TYPE_LABEL].values == set(names)
    assert capacity_types_of(claim.requirements) == {"spot", "on-demand"}


def test_instance_type_list_is_truncated() -> None:
    result = solve([pod()], [], [node_pool()], SolverOptions(max_instance_types=2))
    assert [it.name for it in result.new_node_claims[0].instance_types] == [
        "small-instance-type",
        "default-instance-type",
    ]


def test_capacity_types_narrow_to_what_is_offered() -> None:
    result = solve([pod(node_selector={ZONE_LABEL: "test-zone-3"})], [], [node_pool()])
    (claim,) = result.new_node_claims
    assert capacity_types_of(claim.requirements) == {"on-demand"}


def test_unavailable_offerings_do_not_count() -> None:
    sold_out = instance_type(
        "cheap-but-gone",
        cpu="2",
        memory="2Gi",
        offerings=[Offering("test-zone-1", "spot", 0.001, False)],
    )
    result = solve([pod()], [], [node_pool(instance_types=[sold_out, *fake_catalog()])])
    assert "cheap-but-gone" not in {it.name for it in result.new_node_claims[0].instance_types}


def test_first_fit_decreasing_packs_big_pods_first() -> None:
    # Sizes 3, 1, 1, 3 CPU: big pods go first, each small one fills a big pod's node.
    pods = [pod(cpu="3"), pod(cpu="500m"), pod(cpu="500m"), pod(cpu="3")]
    result = solve(pods, [], [node_pool(instance_types=[instance_type("four", cpu="4")])])
    assert len(result.new_node_claims) == 2
    assert sorted(len(c.pods) for c in result.new_node_claims) == [2, 2]
    for claim in result.new_node_claims:
        assert claim.pods[0].requests["cpu"] == 3000


def test_pods_never_get_types_without_room_for_them() -> None:
    pods = [pod() for _ in range(3)]
    result = solve(pods, [], [node_pool()])
    (claim,) = result.new_node_claims
    assert "single-pod-instance-type" not in {it.name for it in claim.instance_types}


# -- requirements --------------------------------------------------------------------------------


def test_node_selector_narrows_the_claim() -> None:
    result = solve([pod(node_selector={"kubernetes.io/arch": "arm64"})], [], [node_pool()])
    (claim,) = result.new_node_claims
    assert [it.name for it in claim.instance_types] == ["arm-instance-type"]


def test_required_node_affinity_narrows_the_claim() -> None:
    terms = [[(ZONE_LABEL, "NotIn", ["test-zone-1", "test-zone-2"])]]
    result = solve([pod(terms=terms)], [], [node_pool()])
    (claim,) = result.new_node_claims
    assert capacity_types_of(claim.requirements) == {"on-demand"}


def test_custom_label_must_be_defined_by_the_nodepool() -> None:
    result = solve([pod(node_selector={"team": "a"})], [], [node_pool()])
    assert result.errors
    (message,) = result.errors.values()
    assert message == (
        'incompatible with nodepool "default", incompatible requirements, '
        'label "team" does not have known values'
    )
    ok = solve([pod(node_selector={"team": "a"})], [], [node_pool(labels={"team": "a"})])
    assert not ok.errors


def test_incompatible_values_name_the_key() -> None:
    pool = node_pool(requirements=[(ZONE_LABEL, "In", ["test-zone-1"])])
    result = solve([pod(node_selector={ZONE_LABEL: "test-zone-2"})], [], [pool])
    (message,) = result.errors.values()
    assert message == (
        'incompatible with nodepool "default", incompatible requirements, key '
        "topology.kubernetes.io/zone, topology.kubernetes.io/zone In [test-zone-2] not in "
        "topology.kubernetes.io/zone In [test-zone-1]"
    )


def test_pods_with_different_zones_do_not_share_a_claim() -> None:
    a = pod(node_selector={ZONE_LABEL: "test-zone-1"})
    b = pod(node_selector={ZONE_LABEL: "test-zone-2"})
    result = solve([a, b], [], [node_pool()])
    assert len(result.new_node_claims) == 2


# -- taints -------------------------------------------------------------------------------------


def test_taints_need_tolerations() -> None:
    pool = node_pool(taints=[Taint("dedicated", "NoSchedule", "gpu")])
    result = solve([pod()], [], [pool])
    (message,) = result.errors.values()
    assert message == (
        'incompatible with nodepool "default", did not tolerate taint '
        "(taint=dedicated=gpu:NoSchedule)"
    )
    tolerant = pod(tolerations=[Toleration("dedicated", "Equal", "gpu", "NoSchedule")])
    assert not solve([tolerant], [], [pool]).errors


def test_prefer_no_schedule_taint_is_avoided_then_relaxed() -> None:
    tainted = node_pool("tainted", weight=10, taints=[Taint("spare", "PreferNoSchedule")])
    result = solve([pod()], [], [tainted])
    assert not result.errors
    clean = node_pool("clean")
    both = solve([pod()], [], [tainted, clean])
    assert both.new_node_claims[0].node_pool == "clean"


# -- errors -------------------------------------------------------------------------------------


def test_no_instance_type_message_reads_like_karpenter() -> None:
    pool = node_pool(requirements=[("kubernetes.io/arch", "In", ["amd64"])])
    result = solve([pod(cpu="100")], [], [pool])
    (message,) = result.errors.values()
    assert message == (
        'incompatible with nodepool "default", no instance type satisfied resources '
        '{"cpu":"100","pods":"1"} and requirements karpenter.sh/nodepool In [default], '
        "kubernetes.io/arch In [amd64] (no instance type has enough resources)"
    )


def test_errors_from_several_nodepools_are_joined() -> None:
    pools = [
        node_pool("a", taints=[Taint("x", "NoSchedule")]),
        node_pool("b", remaining=resources(cpu="0")),
    ]
    (message,) = solve([pod()], [], pools).errors.values()
    # equal weights: "b" is tried before "a"
    assert message == (
        'all available instance types exceed limits for nodepool: "b"; '
        'incompatible with nodepool "a", did not tolerate taint (taint=x:NoSchedule)'
    )


def test_daemonset_overhead_is_shown_in_the_message() -> None:
    pool = node_pool(daemon_overhead=resources(cpu="1", pods=1))
    (message,) = solve([pod(cpu="100")], [], [pool]).errors.values()
    assert message.startswith(
        'incompatible with nodepool "default", daemonset overhead={"cpu":"1","pods":"1"}, '
        'no instance type satisfied resources {"cpu":"101","pods":"2"}'
    )


def test_node_limit_counts_node_claims() -> None:
    pool = node_pool(remaining=resources(nodes=2))
    result = solve([pod(cpu="10") for _ in range(3)], [], [pool])  # one per 16-CPU node
    assert len(result.new_node_claims) == 2
    assert set(result.errors.values()) == {
        'node limits have been exhausted for nodepool: "default"'
    }


def test_limits_subtract_the_largest_option() -> None:
    # Each claim could become a 16-CPU arm node, so a 20-CPU limit allows only one claim.
    pool = node_pool(remaining=resources(cpu="20"))
    pods = [pod(cpu="1.5", name=f"p{i}") for i in range(3)]
    result = solve(pods, [], [pool])
    assert len(result.new_node_claims) == 1


# -- existing nodes -------------------------------------------------------------------------------


def existing(
    name: str,
    *,
    cpu: str = "4",
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    requested: str = "0",
    initialized: bool = True,
    ports: tuple[HostPort, ...] = (),
) -> ExistingNode:
    return ExistingNode(
        name=name,
        labels={ZONE_LABEL: "test-zone-1", **(labels or {})},
        taints=taints,
        allocatable=resources(cpu=cpu, memory="4Gi", pods=5),
        requested=resources(cpu=requested),
        host_ports=ports,
        initialized=initialized,
        node_claim=name,
        node_pool="default",
    )


def test_existing_nodes_are_used_first_in_name_order() -> None:
    nodes = [existing("b"), existing("a")]
    result = solve([pod(cpu="1")], nodes, [node_pool()])
    assert result.existing_nodes == {"a": [result.existing_nodes["a"][0]]}
    assert not result.new_node_claims


def test_initialized_nodes_come_before_uninitialized() -> None:
    nodes = [existing("a", initialized=False), existing("b")]
    result = solve([pod(cpu="1")], nodes, [node_pool()])
    assert list(result.existing_nodes) == ["b"]


def test_existing_node_capacity_is_respected_across_the_solve() -> None:
    result = solve(
        [pod(cpu="1") for _ in range(4)], [existing("a", requested="1.5")], [node_pool()]
    )
    assert len(result.existing_nodes["a"]) == 2
    assert sum(len(c.pods) for c in result.new_node_claims) == 2


def test_existing_node_labels_must_match() -> None:
    nodes = [existing("a")]
    result = solve([pod(node_selector={ZONE_LABEL: "test-zone-2"})], nodes, [node_pool()])
    assert not result.existing_nodes
    assert len(result.new_node_claims) == 1


def test_existing_node_taints_and_ports() -> None:
    taint = Taint("dedicated", "NoSchedule", "x")
    result = solve([pod()], [existing("a", taints=(taint,))], [node_pool()])
    assert not result.existing_nodes
    result = solve(
        [pod(host_ports=[HostPort(80)])], [existing("a", ports=(HostPort(80),))], [node_pool()]
    )
    assert not result.existing_nodes


@pytest.mark.parametrize(("key", "effect"), KNOWN_EPHEMERAL_TAINTS)
def test_uninitialized_nodes_ignore_ephemeral_taints(key: str, effect: str) -> None:
    node = existing("a", taints=(Taint(key, effect),), initialized=False)
    result = solve([pod()], [node], [node_pool()])
    assert list(result.existing_nodes) == ["a"]


def test_uninitialized_nodes_ignore_startup_taints_only_until_initialized() -> None:
    startup = Taint("example.com/agent-not-ready", "NoSchedule")
    base = existing("a", taints=(startup,), initialized=False)
    waiting = dataclasses.replace(base, startup_taints=(startup,))
    assert list(solve([pod()], [waiting], [node_pool()]).existing_nodes) == ["a"]
    ready = dataclasses.replace(waiting, initialized=True)
    assert not solve([pod()], [ready], [node_pool()]).existing_nodes


def test_a_claim_narrowed_by_one_pod_can_accept_a_pod_it_turned_away() -> None:
    # "team" is undefined on the pool, so `team In [a]` is turned away until a pod with
    # `team NotIn [x]` defines the key on the claim (Karpenter's algebra allows that).
    big = pod(cpu="3")
    wants_team = pod(cpu="2", terms=[[("team", "In", ["a"])]])
    excludes_team = pod(cpu="1", terms=[[("team", "NotIn", ["x"])]])
    result = solve([big, wants_team, excludes_team], [], [node_pool()])
    assert not result.errors
    (claim,) = result.new_node_claims
    assert len(claim.pods) == 3
    assert claim.requirements["team"].values == {"a"}


def test_open_claims_are_tried_fewest_pods_first() -> None:
    # Two claims exist (zone-1 with two pods, zone-2 with one); an unconstrained pod joins
    # the one with fewer pods.
    z1 = [pod(cpu="1", node_selector={ZONE_LABEL: "test-zone-1"}) for _ in range(2)]
    z2 = [pod(cpu="1", node_selector={ZONE_LABEL: "test-zone-2"})]
    free = pod(cpu="100m", name="free")
    result = solve([*z1, *z2, free], [], [node_pool()])
    holder = next(c for c in result.new_node_claims if any(p.name == "free" for p in c.pods))
    assert zone_of(holder.requirements) == {"test-zone-2"}
