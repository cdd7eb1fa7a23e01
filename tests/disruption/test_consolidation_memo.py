"""Karpenter's "consolidated" memo: a consolidation search that found nothing is not run again
until something that can change its answer changes (or five minutes pass). A change to a
PodDisruptionBudget can; a NodeClaim's bookkeeping of its last pod event cannot."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from nodewright.api.apps import PodDisruptionBudget
from nodewright.api.core import Event, Pod
from nodewright.cluster.objects import mutable
from tests.disruption.harness import Harness, fake_type

TYPES = [
    fake_type("small-instance-type", 2, 2, price=1.0),
    fake_type("large-instance-type", 4, 4, price=2.0),
]


def _held_back_by_a_budget(tmp_path: Path) -> tuple[Harness, str, str]:
    """A small node whose one pod a budget guards (``maxUnavailable: 0``), and a large node
    whose big pod fits nowhere cheaper: the search runs over the large node alone and finds
    nothing. Returns the harness, the guarded node and the large node."""
    harness = Harness(tmp_path, types=TYPES)
    guarded = harness.node("small-instance-type")
    large = harness.node("large-instance-type")
    harness.bind_pods(guarded, 1, owner="guarded", labels={"guard": "yes"})
    harness.bind_pods(large, 1, owner="big", cpu="2500m")
    harness.pdb("guard", {"guard": "yes"}, max_unavailable=0)
    harness.run(60)
    assert harness.live_claim_names() == {guarded, large}
    assert ("node/" + large, "Can't replace with a cheaper node") in harness.event_log(
        "Unconsolidatable"
    ), "the search ran and found nothing"
    return harness, guarded, large


def test_relaxing_a_budget_lets_the_next_pass_consolidate(tmp_path: Path) -> None:
    harness, guarded, large = _held_back_by_a_budget(tmp_path)
    current = harness.cluster.get(PodDisruptionBudget, "guard", "default")
    assert current is not None
    budget = mutable(current)
    budget.spec.max_unavailable = 1
    harness.cluster.update(budget)
    harness.run(30)  # a pass (every 10 s) and the command's 15 s validation
    assert guarded not in harness.live_claim_names(), (
        "the guarded node's pod moves to the large node without waiting for the memo's 5 minutes"
    )
    assert large in harness.live_claim_names()


def _replacement_without_capacity(tmp_path: Path) -> tuple[Harness, str]:
    """A node whose one pod a cheaper type could hold, that type out of capacity: the
    replacement fails with InsufficientCapacityError, and the search then finds nothing and
    is remembered. Returns the harness four minutes after the failure (the type has capacity
    again; the memo holds for five) and the node."""
    types = [fake_type("small-instance-type", 2, 2), fake_type("default-instance-type", 4, 4)]
    fault = {"fault-insufficient-capacity": "small-instance-type/*/*"}
    harness = Harness(tmp_path, types=types, kwok_options=fault)
    node = harness.node("default-instance-type")
    harness.bind_pods(node, 1)
    harness.start()
    harness.sim.settle()
    assert len(harness.event_log("InsufficientCapacityError")) == 1
    (failure,) = [e for e in harness.cluster.list(Event) if e.reason == "InsufficientCapacityError"]
    assert failure.last_timestamp is not None
    # The offering is unavailable for 3 minutes; the memo holds for 5 after the search.
    harness.sim.advance(failure.last_timestamp + timedelta(minutes=4) - harness.sim.clock.now())
    return harness, node


def _flip_readiness(harness: Harness, name: str) -> None:
    current = harness.cluster.get(Pod, name, "default")
    assert current is not None
    pod = mutable(current)
    for condition in pod.status.conditions:
        if condition.type == "Ready":
            condition.status = "False" if condition.status == "True" else "True"
    harness.cluster.update_status(pod)


def test_a_pod_readiness_flap_does_not_make_consolidation_search_again(tmp_path: Path) -> None:
    """Only a change a search reads makes it run again before the memo's 5 minutes: a
    readiness flap does not, so the failed replacement is not tried again at once; a pod
    bound to the node does."""
    harness, node = _replacement_without_capacity(tmp_path)
    (pod,) = [p.name for p in harness.cluster.list(Pod) if p.spec.node_name == node]
    _flip_readiness(harness, pod)
    harness.run(10)
    _flip_readiness(harness, pod)
    harness.run(30)
    assert len(harness.event_log("InsufficientCapacityError")) == 1, "no new attempt"

    harness.bind_pods(node, 1)
    harness.run(30)
    assert len(harness.event_log("InsufficientCapacityError")) == 2, "a new pod: a new search"
