"""The embedded binder places pods as kube-scheduler's PodTopologySpread and InterPodAffinity
plugins would, and says so in kube-scheduler's words when it cannot."""

from __future__ import annotations

import pytest

from nodewright.api.core import Namespace, Pod
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.simulation.kubernetes import EmbeddedKubernetes
from tests.builders import deployment
from tests.simulation.kube_builders import (
    HOSTNAME,
    ZONE,
    node,
    pending_messages,
    per_zone,
    placement,
    pod,
    pods_of,
    settle,
    spread,
    term,
    unavailable,
)

SPREAD = "node(s) didn't match pod topology spread constraints"


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster(SimulatedClock(), seed=3)


@pytest.fixture
def kube(cluster: MemoryCluster) -> EmbeddedKubernetes:
    return EmbeddedKubernetes(cluster, SimulatedClock())


def zones_a3_b3_c1(cluster: MemoryCluster, big: str = "2", small: str = "2") -> None:
    """Seed 003's cluster: three nodes in zone a, three in b, one in c."""
    for zone, count in (("a", 3), ("b", 3)):
        for index in range(1, count + 1):
            cluster.create(node(f"{zone}-{index}", zone, cpu=big))
    cluster.create(node("c-1", "c", cpu=small))


SEED_003_SPREADS = [spread(HOSTNAME, 2, "host-spread"), spread(ZONE, 5, "host-spread")]


# -- PodTopologySpread ----------------------------------------------------------------------------


def test_seed_003_fourteen_of_twenty_replicas_schedule(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    zones_a3_b3_c1(cluster)  # room for exactly two pods on each node
    cluster.create(deployment("host-spread", 20, topologySpreadConstraints=SEED_003_SPREADS))
    settle(kube)
    assert per_zone(cluster, "host-spread") == {"a": 6, "b": 6, "c": 2, None: 6}
    assert set(placement(cluster, "host-spread").values()) == {2, 6}
    # Every node is full, and kube-scheduler names the first filter that fails on each node:
    # NodeResourcesFit runs before PodTopologySpread.
    assert pending_messages(cluster, "host-spread") == {unavailable(7, "7 Insufficient cpu")}


def test_seed_003_spreads_stop_replicas_on_roomy_nodes(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    # Zone c's one node holds two pods; a and b may then run at most 2 + 5 each.
    zones_a3_b3_c1(cluster, big="8", small="2")
    cluster.create(deployment("host-spread", 20, topologySpreadConstraints=SEED_003_SPREADS))
    settle(kube)
    assert per_zone(cluster, "host-spread") == {"a": 7, "b": 7, "c": 2, None: 4}
    counts = placement(cluster, "host-spread")
    assert (
        max(n for name, n in counts.items() if name) - min(n for name, n in counts.items() if name)
        <= 2
    )
    assert pending_messages(cluster, "host-spread") == {
        unavailable(7, "1 Insufficient cpu", f"6 {SPREAD}")
    }


def test_zone_spread_places_evenly_within_one_pass(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for zone in "abc":
        cluster.create(node(f"{zone}-1", zone, cpu="16"))
    cluster.create(deployment("web", 9, topologySpreadConstraints=[spread(ZONE, 1, "web")]))
    kube.reconcile()  # one pass: counts follow every bind
    assert per_zone(cluster, "web") == {"a": 3, "b": 3, "c": 3}


def test_without_spread_the_binder_packs_the_fullest_node(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for zone in "abc":
        cluster.create(node(f"{zone}-1", zone, cpu="16"))
    cluster.create(deployment("web", 9))
    kube.reconcile()
    assert per_zone(cluster, "web") == {"a": 9}


def test_min_domains_counts_missing_domains_as_empty(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("a-1", "a", cpu="16"))
    cluster.create(node("b-1", "b", cpu="16"))
    constraint = spread(ZONE, 1, "web", minDomains=3)
    cluster.create(deployment("web", 4, topologySpreadConstraints=[constraint]))
    settle(kube)
    # Fewer zones than minDomains: the global minimum is 0, so each zone takes one pod.
    assert per_zone(cluster, "web") == {"a": 1, "b": 1, None: 2}
    assert pending_messages(cluster, "web") == {unavailable(2, f"2 {SPREAD}")}


def test_node_without_the_topology_key_is_filtered(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("zoneless", None, cpu="16"))
    cluster.create(deployment("web", 1, topologySpreadConstraints=[spread(ZONE, 1, "web")]))
    settle(kube)
    assert pending_messages(cluster, "web") == {
        unavailable(1, f"1 {SPREAD} (missing required label)")
    }


@pytest.mark.parametrize(
    ("policy", "expected"), [(None, {"a": 3, "b": 3}), ("Ignore", {"a": 1, "b": 1, None: 4})]
)
def test_node_affinity_policy_decides_which_zones_count(
    cluster: MemoryCluster,
    kube: EmbeddedKubernetes,
    policy: str | None,
    expected: dict[str | None, int],
) -> None:
    for zone in "abc":
        cluster.create(node(f"{zone}-1", zone, cpu="16"))
    constraint = spread(ZONE, 1, "web", **({"nodeAffinityPolicy": policy} if policy else {}))
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]}
                ]
            }
        }
    }
    cluster.create(deployment("web", 6, topologySpreadConstraints=[constraint], affinity=affinity))
    settle(kube)
    # Honor (the default) ignores zone c, which the pods may not use; Ignore counts it, empty.
    assert per_zone(cluster, "web") == expected


def test_node_taints_policy_honor_skips_nodes_the_pod_does_not_tolerate(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    cluster.create(node("c-1", "c", cpu="16", taints=[taint]))
    cluster.create(node("a-1", "a", cpu="16"))
    cluster.create(node("b-1", "b", cpu="16"))
    honoured = spread(ZONE, 1, "honour", nodeTaintsPolicy="Honor")
    ignored = spread(ZONE, 1, "ignore")
    cluster.create(deployment("honour", 4, topologySpreadConstraints=[honoured]))
    cluster.create(deployment("ignore", 4, topologySpreadConstraints=[ignored]))
    settle(kube)
    assert per_zone(cluster, "honour") == {"a": 2, "b": 2}
    # Ignore (the default) keeps tainted zone c as an empty domain: one pod per zone.
    assert per_zone(cluster, "ignore") == {"a": 1, "b": 1, None: 2}


def test_match_label_keys_count_only_pods_of_the_same_revision(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for zone in "ab":
        cluster.create(node(f"{zone}-1", zone, cpu="16"))
    constraint = spread(ZONE, 1, "web", matchLabelKeys=["version"])
    for version in ("v1", "v2"):
        web = pod(f"web-{version}", "web", topologySpreadConstraints=[constraint])
        web.metadata.labels["version"] = version
        cluster.create(web)
        settle(kube)
    # Counting v1 too, v2 would have to go to zone b; alone in its revision it may join v1 on
    # the fuller node.
    assert placement(cluster, "web") == {"a-1": 2}


def test_schedule_anyway_spreads_instead_of_packing(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for zone in "abc":
        cluster.create(node(f"{zone}-1", zone, cpu="16"))
    soft = spread(ZONE, 1, "web", when="ScheduleAnyway")
    cluster.create(deployment("web", 6, topologySpreadConstraints=[soft]))
    settle(kube)
    assert per_zone(cluster, "web") == {"a": 2, "b": 2, "c": 2}


def test_schedule_anyway_never_leaves_a_pod_pending(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("a-1", "a", cpu="16"))
    cluster.create(node("b-1", "b", cpu="1"))
    soft = spread(ZONE, 1, "web", when="ScheduleAnyway")
    cluster.create(deployment("web", 5, topologySpreadConstraints=[soft]))
    settle(kube)
    assert per_zone(cluster, "web") == {"a": 4, "b": 1}


# -- InterPodAffinity -----------------------------------------------------------------------------


def test_required_zonal_self_affinity_keeps_replicas_in_one_zone(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for zone in "abc":
        cluster.create(node(f"{zone}-1", zone, cpu="2"))
        cluster.create(node(f"{zone}-2", zone, cpu="2"))
    affinity = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE, "inflate")]}
    }
    cluster.create(deployment("inflate", 6, affinity=affinity))
    settle(kube)
    zones = per_zone(cluster, "inflate")
    (zone,) = (z for z in zones if z is not None)
    assert zones == {zone: 4, None: 2}
    assert pending_messages(cluster, "inflate") == {
        unavailable(6, "2 Insufficient cpu", "4 node(s) didn't match pod affinity rules")
    }


def test_required_affinity_to_another_workload_follows_it(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for zone in "abc":
        cluster.create(node(f"{zone}-1", zone, cpu="8"))
    cluster.create(pod("cache-0", "cache", nodeSelector={ZONE: "b"}))
    affinity = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE, "cache")]}
    }
    cluster.create(deployment("web", 3, affinity=affinity))
    settle(kube)
    assert per_zone(cluster, "web") == {"b": 3}


def test_required_affinity_to_pods_that_do_not_exist_waits(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("a-1", "a"))
    cluster.create(node("b-1", "b"))
    affinity = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE, "cache")]}
    }
    cluster.create(deployment("web", 1, affinity=affinity))
    settle(kube)
    assert pending_messages(cluster, "web") == {
        unavailable(2, "2 node(s) didn't match pod affinity rules")
    }


def test_required_hostname_anti_affinity_runs_one_per_node(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for index in range(3):
        cluster.create(node(f"n-{index}", "a", cpu="16"))
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME, "web")]
        }
    }
    cluster.create(deployment("web", 5, affinity=anti))
    kube.reconcile()  # one pass: each bind repels the next pod at once
    assert placement(cluster, "web") == {"n-0": 1, "n-1": 1, "n-2": 1, None: 2}
    assert pending_messages(cluster, "web") == {
        unavailable(3, "3 node(s) didn't match pod anti-affinity rules")
    }


def test_anti_affinity_pods_take_the_fullest_node_left_as_others_fill_them(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for index in range(4):
        cluster.create(node(f"n-{index}", "a"))
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME, "web")]
        }
    }
    # One pass, in name order: a-web takes the first of four empty nodes; b-fill, pinned to
    # n-3, makes it the fullest, so c-web goes there rather than to n-1.
    cluster.create(pod("a-web", "web", cpu="100m", affinity=anti))
    cluster.create(pod("b-fill", "fill", cpu="2", nodeSelector={HOSTNAME: "n-3"}))
    cluster.create(pod("c-web", "web", cpu="100m", affinity=anti))
    kube.reconcile()
    assert {p.name: p.spec.node_name for p in pods_of(cluster, "web")} == {
        "a-web": "n-0",
        "c-web": "n-3",
    }
    # A later pass sees n-0 free again once a-web has gone.
    cluster.delete(Pod, "a-web", "default")
    cluster.create(pod("d-web", "web", cpu="100m", affinity=anti))
    settle(kube)
    assert placement(cluster, "web") == {"n-0": 1, "n-3": 1}


def test_existing_pods_anti_affinity_repels_a_new_pod(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("a-1", "a"))
    anti = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE, "web")]}
    }
    cluster.create(pod("loner", affinity=anti))
    settle(kube)
    cluster.create(pod("web-0", "web"))
    settle(kube)
    assert placement(cluster, "web") == {None: 1}
    assert pending_messages(cluster, "web") == {
        unavailable(1, "1 node(s) didn't satisfy existing pods anti-affinity rules")
    }
    cluster.create(node("b-1", "b"))
    settle(kube)
    assert placement(cluster, "web") == {"b-1": 1}


def test_a_finished_pod_repels_no_more(cluster: MemoryCluster, kube: EmbeddedKubernetes) -> None:
    cluster.create(node("a-1", "a"))
    anti = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(ZONE, "web")]}
    }
    cluster.create(pod("loner", affinity=anti))
    cluster.create(pod("web-0", "web"))
    settle(kube)
    assert placement(cluster, "web") == {None: 1}
    loner = cluster.get(Pod, "loner", "default")
    assert loner is not None
    finished = mutable(loner)
    finished.status.phase = "Succeeded"
    cluster.update_status(finished)
    settle(kube)
    assert placement(cluster, "web") == {"a-1": 1}


def test_pods_bound_earlier_in_a_pass_repel_a_pod_later_in_it(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n-1"))
    cluster.create(node("n-2"))
    cluster.create(pod("a-web", "web"))  # first in the queue: no constraint of its own
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME, "web")]
        }
    }
    cluster.create(pod("b-guard", "guard", affinity=anti))
    kube.reconcile()  # one pass binds both
    assert placement(cluster, "web") == {"n-1": 1}
    assert placement(cluster, "guard") == {"n-2": 1}  # not the fuller n-1


def test_anti_affinity_looks_only_at_the_namespaces_its_term_names(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("a-1", "a"))
    cluster.create(
        Namespace.model_validate({"metadata": {"name": "batch", "labels": {"team": "x"}}})
    )
    cluster.create(pod("other-0", "other", namespace="batch"))
    settle(kube)
    same_namespace = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME, "other")]
        }
    }
    by_selector = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                term(HOSTNAME, "other", namespaceSelector={"matchLabels": {"team": "x"}})
            ]
        }
    }
    cluster.create(pod("near", affinity=same_namespace))
    cluster.create(pod("far", affinity=by_selector))
    settle(kube)
    assert placement(cluster, "near") == {"a-1": 1}  # "other" lives in another namespace
    assert placement(cluster, "far") == {None: 1}
    assert pending_messages(cluster, "far") == {
        unavailable(1, "1 node(s) didn't match pod anti-affinity rules")
    }


def test_preferred_anti_affinity_spreads_over_zones(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for zone in "abc":
        cluster.create(node(f"{zone}-1", zone, cpu="16"))
    preferred = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": term(ZONE, "inflate")}
            ]
        }
    }
    cluster.create(deployment("inflate", 3, affinity=preferred))
    settle(kube)
    assert per_zone(cluster, "inflate") == {"a": 1, "b": 1, "c": 1}


def test_preferred_affinity_draws_pods_to_their_partner(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("a-1", "a", cpu="16"))
    cluster.create(node("b-1", "b", cpu="16"))
    cluster.create(pod("cache-0", "cache", nodeSelector={ZONE: "b"}))
    settle(kube)
    # MostAllocated alone would also pick b-1 (it runs cache-0); fill b-1 more than a-1 so
    # the preference has to outweigh packing.
    cluster.create(pod("filler", cpu="6", nodeSelector={ZONE: "a"}))
    settle(kube)
    preferred = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": term(ZONE, "cache")}
            ]
        }
    }
    cluster.create(deployment("web", 2, affinity=preferred))
    settle(kube)
    assert per_zone(cluster, "web") == {"b": 2}


def test_binding_thousands_of_spread_pods_stays_fast(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    for zone in "abc":
        for index in range(50):
            cluster.create(node(f"{zone}-{index:02}", zone, cpu="8"))
    constraints = [spread(ZONE, 1, "web"), spread(HOSTNAME, 1, "web")]
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(HOSTNAME, "solo")]
        }
    }
    cluster.create(deployment("web", 1000, cpu="100m", topologySpreadConstraints=constraints))
    cluster.create(deployment("solo", 200, cpu="100m", affinity=anti))
    settle(kube)
    assert per_zone(cluster, "web") == {"a": 334, "b": 333, "c": 333}
    counts = placement(cluster, "web")
    assert max(counts.values()) - min(counts.values()) <= 1
    assert placement(cluster, "solo")[None] == 50
