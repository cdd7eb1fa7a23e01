"""Topology spread, pod affinity and pod anti-affinity in the provisioning solver.

Pods are written as Kubernetes manifests and parsed with ``pod_request``, so these tests cover
the spec fields users write as well as the solver's decisions. Expected outcomes follow
Karpenter's topology suite (``topology_test.go``) and the seed articles.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.api.core import Pod
from nodewright.api.labels import HOSTNAME_LABEL, INSTANCE_TYPE_LABEL, ZONE_LABEL
from nodewright.scheduling.model import ExistingNode, PodRequest, SchedulingResult, SolverOptions
from nodewright.scheduling.pods import pod_request
from nodewright.scheduling.resources import resources
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.taints import Taint
from nodewright.scheduling.topology import PlacedPod
from nodewright.testing.catalog import ZONES
from tests.scheduling.scheduling_fakes import node_pool
from tests.scheduling.scheduling_fakes import pod as plain_pod

Z1, Z2, Z3 = ZONES
_made = [0]


def make_pod(
    *,
    labels: Mapping[str, str] | None = None,
    cpu: str = "100m",
    namespace: str = "default",
    spread: Sequence[Mapping[str, Any]] = (),
    affinity: Mapping[str, Any] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, str]] = (),
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
) -> PodRequest:
    _made[0] += 1
    name = f"p-{_made[0]:04d}"
    manifest = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": name,
            "labels": dict(labels or {}),
        },
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            "topologySpreadConstraints": [dict(s) for s in spread],
            "affinity": dict(affinity or {}),
            "nodeSelector": dict(node_selector or {}),
            "tolerations": [dict(t) for t in tolerations],
        },
    }
    return pod_request(Pod.model_validate(manifest), _made[0], namespaces)


def spread(key: str, max_skew: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": extra.pop("when", "DoNotSchedule"),
        "labelSelector": {"matchLabels": extra.pop("selector", {"app": "web"})},
        **extra,
    }


def term(key: str, selector: Mapping[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "topologyKey": key,
        "labelSelector": {"matchLabels": selector or {"app": "web"}},
        **extra,
    }


def zones_of(result: SchedulingResult, existing: Mapping[str, str] | None = None) -> Counter[str]:
    """Pods per zone: new NodeClaims must be pinned to one zone to count."""
    counts: Counter[str] = Counter()
    for claim in result.new_node_claims:
        zones = claim.requirements[ZONE_LABEL].values
        assert len(zones) == 1, f"NodeClaim not pinned to one zone: {sorted(zones)}"
        counts[next(iter(zones))] += len(claim.pods)
    for node, pods in result.existing_nodes.items():
        counts[(existing or {})[node]] += len(pods)
    return counts


def existing_node(name: str, zone: str, *, cpu: str = "4", used: str = "0") -> ExistingNode:
    return ExistingNode(
        name=name,
        labels={ZONE_LABEL: zone, HOSTNAME_LABEL: name},
        taints=(),
        allocatable=resources(cpu=cpu, memory="4Gi", pods=110),
        requested=resources(cpu=used),
    )


def placed(node: ExistingNode, labels: Mapping[str, str], **extra: Any) -> PlacedPod:
    return PlacedPod("default", dict(labels), node.name, node.labels, **extra)


# -- topology spread -----------------------------------------------------------------------


def test_zonal_spread_balances_pods_across_zones() -> None:
    # Karpenter: "should balance pods across zones (match labels)"
    pods = [make_pod(labels={"app": "web"}, spread=[spread(ZONE_LABEL)]) for _ in range(4)]
    result = solve(pods, [], [node_pool()])
    assert not result.errors
    assert sorted(zones_of(result).values()) == [1, 1, 2]


def test_spread_never_exceeds_max_skew_and_leaves_the_rest_pending() -> None:
    # Karpenter: "should not violate max-skew when unsat = do not schedule": one pod already
    # runs in zone 1 on a full node, the pool may only use zones 2 and 3.
    full = existing_node("zone-1-node", Z1, cpu="1", used="1")
    pods = [
        make_pod(labels={"app": "web"}, cpu="1100m", spread=[spread(ZONE_LABEL)]) for _ in range(10)
    ]
    pool = node_pool(requirements=[(ZONE_LABEL, "In", [Z2, Z3])])
    result = solve(pods, [full], [pool], placed=[placed(full, {"app": "web"})])
    counts = zones_of(result) + Counter({Z1: 1})
    assert sorted(counts.values()) == [1, 2, 2]
    assert len(result.errors) == 6
    assert all("unsatisfiable topology constraint" in e for e in result.errors.values())


def test_min_domains_holds_pods_back_when_too_few_zones_exist() -> None:
    # Karpenter: "should respect minDomains constraints"
    pods = [
        make_pod(labels={"app": "web"}, spread=[spread(ZONE_LABEL, minDomains=3)]) for _ in range(3)
    ]
    pool = node_pool(requirements=[(ZONE_LABEL, "In", [Z1, Z2])])
    result = solve(pods, [], [pool])
    assert sorted(zones_of(result).values()) == [1, 1]
    assert len(result.errors) == 1


def test_hostname_spread_gives_each_node_at_most_max_skew_pods() -> None:
    pods = [make_pod(labels={"app": "web"}, spread=[spread(HOSTNAME_LABEL)]) for _ in range(4)]
    result = solve(pods, [], [node_pool()])
    assert [len(c.pods) for c in result.new_node_claims] == [1, 1, 1, 1]
    skew_two = [
        make_pod(labels={"app": "api"}, spread=[spread(HOSTNAME_LABEL, 2, selector={"app": "api"})])
        for _ in range(5)
    ]
    result = solve(skew_two, [], [node_pool()])
    assert sorted(len(c.pods) for c in result.new_node_claims) == [1, 2, 2]


def test_spread_only_counts_pods_its_selector_matches() -> None:
    others = [make_pod(labels={"app": "db"}) for _ in range(6)]
    web = [make_pod(labels={"app": "web"}, spread=[spread(ZONE_LABEL)]) for _ in range(3)]
    result = solve([*others, *web], [], [node_pool()])
    assert not result.errors
    web_zones = Counter(
        next(iter(c.requirements[ZONE_LABEL].values))
        for c in result.new_node_claims
        for p in c.pods
        if p.labels.get("app") == "web"
    )
    assert sorted(web_zones.values()) == [1, 1, 1]


def test_schedule_anyway_spread_is_relaxed_when_it_cannot_be_met() -> None:
    # A node in zone 2 is full; the pool only launches in zone 1. A second pod would
    # put zone 1 two pods ahead of zone 2.
    full = existing_node("zone-2-node", Z2, cpu="1", used="1")
    pool = node_pool(requirements=[(ZONE_LABEL, "In", [Z1])])

    def pods(when: str) -> list[PodRequest]:
        return [
            make_pod(labels={"app": "web"}, spread=[spread(ZONE_LABEL, when=when)])
            for _ in range(2)
        ]

    strict = solve(pods("DoNotSchedule"), [full], [pool])
    assert strict.scheduled_count() == 1
    assert len(strict.errors) == 1
    lenient = solve(pods("ScheduleAnyway"), [full], [pool])
    assert lenient.scheduled_count() == 2
    assert not lenient.errors
    ignored = solve(pods("ScheduleAnyway"), [full], [pool], SolverOptions("Ignore"))
    assert ignored.scheduled_count() == 2


def test_node_taints_policy_honor_skips_domains_the_pod_cannot_use() -> None:
    tainted = node_pool(
        "tainted",
        weight=10,
        requirements=[(ZONE_LABEL, "In", [Z1])],
        taints=[Taint("dedicated", "NoSchedule", "gpu")],
    )
    open_pool = node_pool("open", requirements=[(ZONE_LABEL, "In", [Z2])])

    def pods(policy: str) -> list[PodRequest]:
        constraint = spread(ZONE_LABEL, nodeTaintsPolicy=policy)
        return [make_pod(labels={"app": "web"}, spread=[constraint]) for _ in range(3)]

    # Ignore (default): zone 1 is a domain with no pods, so zone 2 may hold only one.
    assert solve(pods("Ignore"), [], [tainted, open_pool]).scheduled_count() == 1
    # Honor: zone 1 only has nodes the pod does not tolerate, so it is not a domain.
    assert solve(pods("Honor"), [], [tainted, open_pool]).scheduled_count() == 3


def test_node_affinity_policy_decides_whether_other_nodes_pods_count() -> None:
    # Three matching pods run on a full zone-2 node of another instance type. Pods that
    # require the default instance type count them only under nodeAffinityPolicy Ignore.
    busy = ExistingNode(
        name="z2-node",
        labels={ZONE_LABEL: Z2, HOSTNAME_LABEL: "z2-node", INSTANCE_TYPE_LABEL: "other"},
        taints=(),
        allocatable=resources(cpu="1", memory="1Gi", pods=110),
        requested=resources(cpu="1"),
    )
    running = [placed(busy, {"app": "web"}) for _ in range(3)]

    def zones(policy: str) -> Counter[str]:
        pods = [
            make_pod(
                labels={"app": "web"},
                node_selector={INSTANCE_TYPE_LABEL: "default-instance-type"},
                spread=[spread(ZONE_LABEL, nodeAffinityPolicy=policy)],
            )
            for _ in range(5)
        ]
        result = solve(pods, [busy], [node_pool()], placed=running)
        assert not result.errors
        return zones_of(result)

    assert zones("Honor") == Counter({Z1: 2, Z2: 2, Z3: 1})
    assert zones("Ignore") == Counter({Z1: 2, Z3: 3})


def test_match_label_keys_spread_each_revision_separately() -> None:
    pods = [
        make_pod(
            labels={"app": "web", "pod-template-hash": revision},
            spread=[spread(ZONE_LABEL, matchLabelKeys=["pod-template-hash"])],
        )
        for revision in ("v1", "v1", "v1", "v2", "v2", "v2")
    ]
    result = solve(pods, [], [node_pool()])
    assert not result.errors
    per_revision: Counter[tuple[str, str]] = Counter()
    for claim in result.new_node_claims:
        zone = next(iter(claim.requirements[ZONE_LABEL].values))
        for p in claim.pods:
            per_revision[(p.labels["pod-template-hash"], zone)] += 1
    assert all(count == 1 for count in per_revision.values())


# -- pod affinity ------------------------------------------------------------------------------


def test_required_zonal_self_affinity_keeps_replicas_in_one_zone() -> None:
    # Seed 000 (1): eight replicas with required pod affinity on the zone land in one zone,
    # even though they need several nodes.
    affinity = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE_LABEL)]}
    }
    pods = [make_pod(labels={"app": "web"}, cpu="1", affinity=affinity) for _ in range(8)]
    result = solve(pods, [], [node_pool()])
    assert not result.errors
    assert len(result.new_node_claims) > 1
    assert len(zones_of(result)) == 1


def test_pod_affinity_follows_pods_already_running() -> None:
    node = existing_node("cache-node", Z3, cpu="1", used="1")
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE_LABEL, {"app": "cache"})]
        }
    }
    pods = [make_pod(labels={"app": "web"}, affinity=affinity) for _ in range(3)]
    result = solve(pods, [node], [node_pool()], placed=[placed(node, {"app": "cache"})])
    assert zones_of(result) == Counter({Z3: 3})


def test_pod_affinity_to_a_pod_that_nowhere_runs_stays_pending() -> None:
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE_LABEL, {"app": "cache"})]
        }
    }
    result = solve([make_pod(labels={"app": "web"}, affinity=affinity)], [], [node_pool()])
    assert result.scheduled_count() == 0
    assert "pod affinity" in next(iter(result.errors.values()))


def test_affinity_to_pods_in_the_same_batch_converges() -> None:
    # The web pods are larger, so they are tried first and wait for the cache pod.
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                term(HOSTNAME_LABEL, {"app": "cache"})
            ]
        }
    }
    web = [make_pod(labels={"app": "web"}, cpu="500m", affinity=affinity) for _ in range(2)]
    cache = make_pod(labels={"app": "cache"}, cpu="100m")
    result = solve([*web, cache], [], [node_pool()])
    assert not result.errors
    assert len(result.new_node_claims) == 1


# -- pod anti-affinity -------------------------------------------------------------------------


def test_zonal_anti_affinity_blocks_every_occupied_zone() -> None:
    # Karpenter: "should not violate pod anti-affinity on zone"
    nodes = [existing_node(f"n{i}", zone, cpu="2", used="2") for i, zone in enumerate(ZONES)]
    running = [placed(n, {"security": "s2"}) for n in nodes]
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE_LABEL, {"security": "s2"})]
        }
    }
    result = solve([make_pod(affinity=anti)], nodes, [node_pool()], placed=running)
    assert result.scheduled_count() == 0
    assert "pod anti-affinity" in next(iter(result.errors.values()))


def test_hostname_anti_affinity_puts_one_replica_per_node() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME_LABEL)]
        }
    }
    pods = [make_pod(labels={"app": "web"}, affinity=anti) for _ in range(5)]
    result = solve(pods, [], [node_pool()])
    assert [len(c.pods) for c in result.new_node_claims] == [1] * 5


def test_anti_affinity_of_running_pods_keeps_selected_pods_away() -> None:
    # The inverse case: the running pod states the anti-affinity, the new pods do not.
    guarded = existing_node("guarded", Z1)
    roomy = existing_node("roomy", Z2)
    anti = make_pod(
        labels={"app": "db"},
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME_LABEL)]
            }
        },
    )
    running = placed(guarded, {"app": "db"}, anti_affinity=anti.required_anti_affinity)
    web = [make_pod(labels={"app": "web"}) for _ in range(3)]
    result = solve(web, [guarded, roomy], [node_pool()], placed=[running])
    assert set(result.existing_nodes) == {"roomy"}
    assert not result.new_node_claims


def test_new_pods_anti_affinity_also_repels_pods_it_selects_in_the_same_batch() -> None:
    lonely = make_pod(
        labels={"app": "lonely"},
        cpu="2",
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    term(HOSTNAME_LABEL, {"app": "web"})
                ]
            }
        },
    )
    web = [make_pod(labels={"app": "web"}) for _ in range(2)]
    result = solve([lonely, *web], [], [node_pool()])
    assert not result.errors
    for claim in result.new_node_claims:
        apps = {p.labels["app"] for p in claim.pods}
        assert not ({"lonely", "web"} <= apps)


def test_preferred_zonal_anti_affinity_spreads_then_relaxes() -> None:
    # Seed 000 (2): with nodes in two zones, replicas with preferred zonal anti-affinity
    # take one each, one new node opens in the third zone, and once every zone holds one
    # the preference is dropped rather than leaving pods pending.
    nodes = [existing_node("a", Z1), existing_node("b", Z2)]
    anti = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": term(ZONE_LABEL)}
            ]
        }
    }
    pods = [make_pod(labels={"app": "web"}, cpu="1", affinity=anti) for _ in range(5)]
    result = solve(pods, nodes, [node_pool()])
    assert not result.errors
    assert len(result.new_node_claims) == 1
    assert result.new_node_claims[0].requirements[ZONE_LABEL].values == {Z3}
    assert len(result.new_node_claims[0].pods) == 1
    assert sorted(len(p) for p in result.existing_nodes.values()) == [1, 3]


def test_anti_affinity_on_an_unpinned_node_claim_blocks_every_zone_it_may_use() -> None:
    # Karpenter's "Schrödinger" case: a NodeClaim that may still land in any zone counts
    # as occupying all of them, so a second required replica cannot be placed.
    anti = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE_LABEL)]}
    }
    pods = [make_pod(labels={"app": "web"}, affinity=anti) for _ in range(2)]
    result = solve(pods, [], [node_pool()])
    assert result.scheduled_count() == 1
    assert result.new_node_claims[0].requirements[ZONE_LABEL].values == set(ZONES)


def test_anti_affinity_namespace_selector_reaches_other_namespaces() -> None:
    node = existing_node("n", Z1)
    other = PlacedPod("team-b", {"app": "web"}, node.name, node.labels)
    namespaces = {"default": {"team": "a"}, "team-b": {"team": "b"}}
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                term(HOSTNAME_LABEL, namespaceSelector={"matchLabels": {"team": "b"}})
            ]
        }
    }
    pod = make_pod(labels={"app": "web"}, affinity=anti, namespaces=namespaces)
    result = solve([pod], [node], [node_pool()], placed=[other])
    assert not result.existing_nodes
    assert len(result.new_node_claims) == 1
    same_namespace_only = make_pod(
        labels={"app": "web"},
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME_LABEL)]
            }
        },
    )
    result = solve([same_namespace_only], [node], [node_pool()], placed=[other])
    assert set(result.existing_nodes) == {"n"}


def test_limits_with_anti_affinity_schedule_what_fits() -> None:
    # Karpenter: "should partially schedule if limits would be exceeded"
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME_LABEL)]
        }
    }
    pods = [make_pod(labels={"app": "web"}, cpu="1500m", affinity=anti) for _ in range(2)]
    result = solve(pods, [], [node_pool(remaining=resources(cpu="3"))])
    assert result.scheduled_count() == 1
    assert "exceed limits" in next(iter(result.errors.values()))


def test_plain_pods_are_unaffected_by_unrelated_topology() -> None:
    pods = [plain_pod("1") for _ in range(3)]
    result = solve(pods, [], [node_pool()])
    assert not result.errors
    assert len(result.new_node_claims) == 1


def test_spread_over_a_custom_label_the_node_pools_set() -> None:
    # Two pools label their nodes rack=a and rack=b; a spread on "rack" balances them.
    pools = [node_pool("rack-a", labels={"rack": "a"}), node_pool("rack-b", labels={"rack": "b"})]
    pods = [make_pod(labels={"app": "web"}, spread=[spread("rack")]) for _ in range(4)]
    result = solve(pods, [], pools)
    assert not result.errors
    per_rack = Counter(c.node_pool for c in result.new_node_claims for _ in c.pods)
    assert per_rack == Counter({"rack-a": 2, "rack-b": 2})


def test_anti_affinity_on_capacity_type_blocks_both_until_a_claim_is_pinned() -> None:
    # Like zones, a NodeClaim that may still be spot or on-demand occupies both.
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term("karpenter.sh/capacity-type")]
        }
    }
    spot_only = node_pool(
        "spot", weight=10, requirements=[("karpenter.sh/capacity-type", "In", ["spot"])]
    )
    on_demand = node_pool("od", requirements=[("karpenter.sh/capacity-type", "In", ["on-demand"])])
    pods = [make_pod(labels={"app": "web"}, affinity=anti) for _ in range(3)]
    result = solve(pods, [], [spot_only, on_demand])
    assert sorted(c.node_pool for c in result.new_node_claims) == ["od", "spot"]
    assert len(result.errors) == 1
