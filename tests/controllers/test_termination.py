"""Node termination, as a user sees it: a Node or NodeClaim deleted by hand is tainted,
drained through the Eviction API in Karpenter's order, waits for PDBs, ``do-not-disrupt``
pods (until the termination deadline) and volume attachments, and its instance is deleted
before the Node goes."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from nodewright.api.apps import VolumeAttachment
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import (
    DISRUPTED_TAINT_KEY,
    EXCLUDE_FROM_LB_LABEL,
    TERMINATION_TIMESTAMP_ANNOTATION,
)
from nodewright.api.meta import find_condition
from nodewright.cluster import ClusterError
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, pod_disruption_budget
from nodewright_kwok.ledger import TERMINATED
from tests.controllers.kwok_world import Availability, KWOKWorld, four_cpu_pool


def _world(pool: str = "", *workloads: str) -> KWOKWorld:
    world = KWOKWorld()
    world.apply(four_cpu_pool(pool), KWOK_NODE_CLASS, *workloads)
    world.settle()
    return world


def test_a_node_deleted_by_hand_is_tainted_drained_and_its_instance_terminated() -> None:
    world = _world("", deployment("web", 3))
    (node,) = world.nodes()
    (claim,) = world.claims()
    world.cluster.delete(Node, node.name)
    world.advance(timedelta(seconds=2))

    draining = world.cluster.get(Node, node.name)
    assert draining is not None, "the drain lasts at least 5 seconds"
    assert any(
        t.key == DISRUPTED_TAINT_KEY and t.effect == "NoSchedule" for t in draining.spec.taints
    )
    assert draining.metadata.labels[EXCLUDE_FROM_LB_LABEL] == "karpenter"
    deleting = world.cluster.get(NodeClaim, claim.name)
    assert deleting is not None
    assert deleting.deleting, "deleting the Node deletes its NodeClaim"
    drained = find_condition(deleting.status.conditions, "Drained")
    assert drained is not None
    assert (drained.status, drained.reason) == ("Unknown", "Draining")
    evicted = world.events("Evicted", "Pod")
    assert len(evicted) == 3
    assert {e.message for e in evicted} == {"Evicted pod: Forceful Termination"}

    world.settle()
    assert world.cluster.get(Node, node.name) is None
    assert world.cluster.get(NodeClaim, claim.name) is None
    (entry,) = [
        e
        for e in world.ledger.entries(include_terminated=True)
        if e.instance.provider_id == node.spec.provider_id
    ]
    assert entry.state == TERMINATED
    nodes = {n.name for n in world.nodes()}
    assert all(p.spec.node_name in nodes for p in world.pods("web")), "pods re-bound elsewhere"


def test_a_nodeclaim_deleted_by_hand_drains_its_node_the_same_way() -> None:
    world = _world("", deployment("web", 2))
    (node,) = world.nodes()
    (claim,) = world.claims()
    world.cluster.delete(NodeClaim, claim.name)
    world.settle()
    assert world.cluster.get(Node, node.name) is None
    assert world.cluster.get(NodeClaim, claim.name) is None
    assert len(world.events("Evicted", "Pod")) == 2
    assert node.spec.provider_id not in world.live_instances()
    assert all(p.spec.node_name for p in world.pods("web"))


def test_the_drain_never_breaks_a_pod_disruption_budget() -> None:
    world = _world("", deployment("web", 6), pod_disruption_budget("web", 1))
    assert len(world.nodes()) == 2
    availability = Availability(world, "web")
    victim = world.nodes()[0]
    world.cluster.delete(Node, victim.name)
    world.settle()

    assert world.cluster.get(Node, victim.name) is None
    blocked = world.messages("FailedDraining", "Node")
    assert any(
        m.startswith("Failed to drain node, evicting pod violates a PDB (Pod=default/web-")
        for m in blocked
    ), blocked
    assert any(m.endswith("pods are waiting to be evicted") for m in blocked)
    assert availability.fewest() >= 5
    assert all(p.spec.node_name for p in world.pods("web"))


def test_critical_pods_are_evicted_only_after_the_other_pods_are_gone() -> None:
    critical = deployment(
        "critical", 1, cpu="500m", extra_spec="priorityClassName: system-node-critical"
    )
    world = _world("", critical, deployment("web", 2))
    (node,) = world.nodes()
    since = world.cluster.resource_version()
    world.cluster.delete(Node, node.name)
    world.settle()

    gone = [
        e.object.metadata.labels["app"]
        for e in world.cluster.watch(since)
        if e.type == "DELETED"
        and isinstance(e.object, Pod)
        and e.object.spec.node_name == node.name
    ]
    assert gone == ["web", "web", "critical"]


def test_do_not_disrupt_pods_hold_the_drain_until_the_termination_deadline() -> None:
    world = _world(
        "terminationGracePeriod: 2m",
        deployment("web", 1, annotations='{"karpenter.sh/do-not-disrupt": "true"}'),
    )
    (node,) = world.nodes()
    (claim,) = world.claims()
    (pod,) = world.pods("web")
    world.cluster.delete(NodeClaim, claim.name)
    world.advance(timedelta(minutes=1))

    deleting = world.cluster.get(NodeClaim, claim.name)
    assert deleting is not None
    assert deleting.metadata.deletion_timestamp is not None
    deadline = deleting.metadata.deletion_timestamp + timedelta(minutes=2)
    stamp = deleting.metadata.annotations[TERMINATION_TIMESTAMP_ANNOTATION]
    assert stamp == deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
    expected = f"All pods will be deleted by {stamp}"
    assert world.messages("TerminationGracePeriodExpiring", "NodeClaim") == [expected]
    assert world.messages("TerminationGracePeriodExpiring", "Node") == [expected]
    assert world.cluster.get(Pod, pod.name, pod.namespace) is not None, "never evicted"
    assert world.cluster.get(Node, node.name) is not None
    assert "Failed to drain node, 1 pods are waiting to be evicted" in world.messages(
        "FailedDraining", "Node"
    )
    assert world.events("Evicted") == []

    world.settle()
    (disrupted,) = world.events("Disrupted", "Pod")
    assert disrupted.message.startswith("Deleting the pod to accommodate the terminationTime ")
    assert disrupted.message.endswith(
        "This bypasses the PDB of the pod and the do-not-disrupt annotation."
    )
    assert disrupted.first_timestamp is not None
    assert disrupted.first_timestamp > deadline - timedelta(seconds=31), "not before its grace"
    assert world.cluster.get(Node, node.name) is None
    assert world.cluster.get(NodeClaim, claim.name) is None


def test_termination_waits_for_volume_attachments_to_go() -> None:
    world = _world("", deployment("web", 1))
    (node,) = world.nodes()
    world.create(
        VolumeAttachment.model_validate(
            {
                "metadata": {"name": "csi-attachment-1"},
                "spec": {
                    "attacher": "ebs.csi.aws.com",
                    "nodeName": node.name,
                    "source": {"persistentVolumeName": "pv-1"},
                },
            }
        )
    )
    world.cluster.delete(Node, node.name)
    world.advance(timedelta(seconds=30))
    assert world.cluster.get(Node, node.name) is not None
    assert world.messages("AwaitingVolumeDetachment", "Node") == [
        "Awaiting deletion of bound volumeattachments (csi-attachment-1)"
    ]
    assert node.spec.provider_id in world.live_instances(), "the instance waits too"

    world.cluster.delete(VolumeAttachment, "csi-attachment-1")
    world.settle()
    assert world.cluster.get(Node, node.name) is None
    assert node.spec.provider_id not in world.live_instances()


def test_a_not_ready_node_whose_instance_is_gone_is_released_without_draining() -> None:
    world = KWOKWorld({"manage-nodes": "false"})
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, deployment("web", 1))
    world.settle()
    (node,) = world.nodes()
    assert not node.ready
    (entry,) = world.ledger.entries()
    entry.set_state(TERMINATED)  # the cloud lost the machine; nodewright was not told
    since = world.cluster.resource_version()
    world.cluster.delete(Node, node.name)
    world.advance(timedelta(seconds=1))
    assert world.cluster.get(Node, node.name) is None
    tainted = [
        e
        for e in world.cluster.watch(since)
        if isinstance(e.object, Node)
        and any(t.key == DISRUPTED_TAINT_KEY for t in e.object.spec.taints)
    ]
    assert tainted == [], "released at once, without cordoning or draining"


def test_a_refused_eviction_holds_back_only_its_own_pod(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    world = _world("", deployment("web", 3))
    (node,) = world.nodes()
    refused = sorted(p.name for p in world.pods("web"))[0]
    evict = world.cluster.evict

    def evict_unless_refused(name: str, namespace: str) -> None:
        if name == refused:  # as a real API server answers while the namespace is deleted
            raise ClusterError(
                f'Pod "{name}" in namespace "{namespace}": HTTP 403 unable to create new '
                f"content in namespace {namespace} because it is being terminated"
            )
        evict(name, namespace)

    monkeypatch.setattr(world.cluster, "evict", evict_unless_refused)
    world.cluster.delete(Node, node.name)
    with caplog.at_level(logging.ERROR, logger="nodewright.node.termination"):
        world.advance(timedelta(seconds=2))
    evicted = {e.involved_object.name for e in world.events("Evicted", "Pod")}
    assert len(evicted) == 2
    assert refused not in evicted
    errors = [
        r.getMessage()
        for r in caplog.records
        if r.name == "nodewright.node.termination" and r.levelno >= logging.ERROR
    ]
    assert errors, "the refusal is logged"
    assert set(errors) == {"failed to evict pod"}
    monkeypatch.undo()
    world.settle()
    assert world.cluster.get(Node, node.name) is None, "the drain finishes once evictions pass"
