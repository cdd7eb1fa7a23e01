"""Nomination: a node a provisioning pass plans a pending pod onto is not a disruption candidate
for ``max(2 x BATCH_MAX_DURATION, 10s)`` after the pass (Karpenter's ``nominatedUntil``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from nodewright.api.core import Node, Pod
from nodewright.controllers.options import Options
from nodewright.controllers.state.nominations import nomination_window
from tests.disruption.harness import Harness

NOMINATED = "Node is nominated for a pending pod"
SECOND = timedelta(seconds=1)


def _provider_id(harness: Harness, name: str) -> str:
    node = harness.cluster.get(Node, name)
    assert node is not None
    assert node.spec.provider_id
    return node.spec.provider_id


def _blocked(harness: Harness, name: str) -> bool:
    return ("node/" + name, NOMINATED) in harness.event_log("DisruptionBlocked") and (
        "nodeclaim/" + name,
        NOMINATED,
    ) in harness.event_log("DisruptionBlocked")


def test_the_window_is_twice_the_longest_batch_and_at_least_ten_seconds() -> None:
    assert nomination_window(timedelta(seconds=10)) == timedelta(seconds=20)
    assert nomination_window(timedelta(seconds=3)) == timedelta(seconds=10)
    assert nomination_window(timedelta(minutes=1)) == timedelta(minutes=2)


def test_a_node_a_pending_pod_is_planned_onto_stays_until_its_nomination_ends(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    node = harness.node()
    pending = harness.cluster.create(
        Pod.model_validate(
            {
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"containers": [{"name": "web", "image": "pause"}]},
                "status": {"phase": "Pending"},
            }
        )
    )
    pod = pending.name
    # The provisioning pass plans the pod onto the existing node (before kube-scheduler binds
    # it), which nominates the node for 20 s.
    harness.operator.provisioner.provision([pending])
    assert (f"pod/{pod}", f"Pod should schedule on: nodeclaim/{node}, node/{node}") in (
        harness.event_log("Nominated")
    )
    harness.run(2)
    bound = harness.cluster.get(Pod, pod, "default")
    assert bound is not None
    assert bound.spec.node_name == node
    harness.cluster.delete(Pod, pod, "default")
    harness.run(10)
    assert node in harness.live_claim_names(), "empty, but nominated: not a candidate"
    assert _blocked(harness, node)
    harness.run(60)
    assert node not in harness.claim_names(), "once the nomination ends, the empty node goes"


def test_without_a_nomination_the_same_empty_node_goes_at_once(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    node = harness.node()
    harness.run(25)
    assert node not in harness.claim_names()
    assert not _blocked(harness, node)


def test_a_longer_batch_makes_a_longer_window(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=Options(batch_max_duration=timedelta(seconds=30)))
    node = harness.node()
    harness.operator.nominations.nominate([_provider_id(harness, node)])
    harness.run(50)
    assert node in harness.live_claim_names(), "nominated for 60 s"
    harness.run(40)
    assert node not in harness.claim_names()


def test_nominating_again_extends_the_window(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    node = harness.node()
    provider_id = _provider_id(harness, node)
    harness.operator.nominations.nominate([provider_id])
    harness.run(15)
    harness.operator.nominations.nominate([provider_id])  # now until 35 s from the start
    harness.run(15)
    assert node in harness.live_claim_names(), "the first window alone would have ended"
    assert _blocked(harness, node)
    harness.run(40)
    assert node not in harness.claim_names()


def test_validation_refuses_an_empty_node_nominated_while_it_waits(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    node = harness.node()
    harness.run(1)
    pending = harness.operator.disruption.pending
    assert pending is not None, "emptiness found the node and waits 15 s to validate"
    assert [c.name for c in pending.command.candidates] == [node]
    harness.operator.nominations.nominate([_provider_id(harness, node)])
    harness.run(15)
    assert harness.operator.disruption.pending is None, "validated: and refused"
    assert node in harness.live_claim_names()
    assert harness.event_log("DisruptionTerminating") == []
    harness.run(60)
    assert node not in harness.claim_names(), "found again once the nomination ended"


def test_validation_refuses_a_consolidation_whose_candidate_got_nominated(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    small, big = harness.node(), harness.node()
    harness.bind_pods(small, 1)
    harness.bind_pods(big, 1)
    harness.run(1)
    pending = harness.operator.disruption.pending
    assert pending is not None, "consolidation found what to do with the two nodes"
    command = pending.command
    first = command.candidates[0]
    harness.operator.nominations.nominate([first.provider_id])
    harness.run(15)
    assert harness.operator.disruption.pending is None
    assert harness.live_claim_names() >= {small, big}
    assert harness.event_log("DisruptionTerminating") == []
    for candidate in command.candidates:
        assert (
            "node/" + candidate.name,
            f"Consolidation rejected: {command.describe_for(candidate)}, reason: churn "
            f"(savings: ${command.savings():.2f})",
        ) in harness.event_log("ConsolidationRejected")


def test_starting_a_consolidation_nominates_where_its_pods_go(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    nodes = harness.node("small-instance-type"), harness.node("small-instance-type")
    pods = {nodes[0]: harness.bind_pods(nodes[0], 1, owner="one")[0]}
    pods[nodes[1]] = harness.bind_pods(nodes[1], 1, owner="two")[0]
    harness.run(20)
    (kept,) = harness.live_claim_names()
    (gone,) = set(nodes) - {kept}
    assert harness.event_log("Nominated") == [
        (f"pod/{pods[gone]}", f"Pod should schedule on: nodeclaim/{kept}, node/{kept}")
    ], "the deleted node's pod is told where it should go"
    assert _blocked(harness, kept), "and the node it goes to is nominated"


class _NominateAt:
    """Nominates one node in the first pass at or after ``at``, and changes nothing else: as a
    provisioning pass does when it plans a pending pod onto a node that exists."""

    name = "test.nominate"

    def __init__(self, harness: Harness, provider_id: str, at: datetime) -> None:
        self._harness = harness
        self._provider_id = provider_id
        self._at = at
        self.done = False

    def reconcile(self) -> timedelta | None:
        now = self._harness.clock.now()
        if self.done:
            return None
        if now < self._at:
            return self._at - now
        self._harness.operator.nominations.nominate([self._provider_id])
        self.done = True
        return None

    def resync(self) -> None:
        return None


def test_a_node_nominated_in_a_pass_that_changes_nothing_else_is_blocked_in_that_pass(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    node = harness.node("small-instance-type")
    harness.bind_pods(node, 1)
    harness.run(30)
    assert node in harness.live_claim_names(), "one pod on the smallest type: nothing to do"
    assert not _blocked(harness, node)
    nominate = _NominateAt(harness, _provider_id(harness, node), harness.clock.now() + SECOND * 5)
    harness.run_before_disruption(nominate)
    harness.run(5)
    assert nominate.done
    assert _blocked(harness, node), "the disruption pass right after the nomination tells it"
