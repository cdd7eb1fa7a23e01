"""The embedded Kubernetes controllers and scheduler, observed through the API store."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from nodewright.api.apps import DaemonSet, Deployment, Job, ReplicaSet, StatefulSet, StorageClass
from nodewright.api.core import (
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
)
from nodewright.clock import SimulatedClock
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.scheduling.selectors import node_selector_matches
from nodewright.simulation.kubernetes import EmbeddedKubernetes
from tests.builders import deployment, pod_template
from tests.simulation.kube_builders import (
    ZONE,
    daemon_set,
    node,
    pod,
    pods_of,
    scale,
    scheduled_message,
    settle,
)

# --- workloads ----------------------------------------------------------------------------------


def test_deployment_makes_a_replica_set_and_its_pods(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(deployment("web", 10))
    assert kube.reconcile()
    (rs,) = cluster.list(ReplicaSet)
    assert re.fullmatch(r"web-[0-9a-f]{10}", rs.name)
    assert rs.spec.replicas == 10
    pods = pods_of(cluster, "web")
    assert len(pods) == 10
    for made in pods:
        assert re.fullmatch(rf"{rs.name}-[a-z0-9]{{5}}", made.name)
        (owner,) = made.metadata.owner_references
        assert (owner.kind, owner.name, owner.controller) == ("ReplicaSet", rs.name, True)
        assert made.metadata.labels["pod-template-hash"] == rs.name.rsplit("-", 1)[1]
    settle(kube)
    web = cluster.get(Deployment, "web")
    assert web is not None
    assert web.status.replicas == 10


def test_scaling_down_deletes_pending_pods_first(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1", cpu="3"))
    cluster.create(deployment("web", 10))
    settle(kube)
    bound = {p.name for p in pods_of(cluster, "web") if p.spec.node_name}
    assert len(bound) == 3
    scale(cluster, "web", 3)
    settle(kube)
    remaining = pods_of(cluster, "web")
    assert {p.name for p in remaining} == bound


def test_scaling_down_bound_pods_removes_the_newest(
    cluster: MemoryCluster, kube: EmbeddedKubernetes, clock: SimulatedClock
) -> None:
    cluster.create(node("n1", cpu="8"))
    cluster.create(deployment("web", 2))
    settle(kube)
    first = {p.name for p in pods_of(cluster, "web")}
    clock.advance(timedelta(minutes=1))
    scale(cluster, "web", 4)
    settle(kube)
    assert len({p.name for p in pods_of(cluster, "web") if p.spec.node_name}) == 4
    scale(cluster, "web", 2)
    settle(kube)
    assert {p.name for p in pods_of(cluster, "web")} == first


def test_deleting_a_deployment_removes_its_pods(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(deployment("web", 3))
    cluster.create(pod("other"))
    settle(kube)
    cluster.delete(Deployment, "web")
    settle(kube)
    assert cluster.list(ReplicaSet) == []
    assert pods_of(cluster, "web") == []
    assert [p.name for p in cluster.list(Pod)] == ["other"]


def test_template_change_rolls_to_a_new_replica_set(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(deployment("web", 2))
    settle(kube)
    (old,) = cluster.list(ReplicaSet)
    web = mutable(cluster.get(Deployment, "web"))  # type: ignore[type-var]
    assert web is not None
    web.spec.template.spec.containers[0].image = "web:v2"
    cluster.update(web)
    settle(kube)
    by_name = {rs.name: rs for rs in cluster.list(ReplicaSet)}
    assert by_name[old.name].spec.replicas == 0
    (new,) = [rs for name, rs in by_name.items() if name != old.name]
    assert new.spec.replicas == 2
    pods = pods_of(cluster, "web")
    assert len(pods) == 2
    assert all(p.spec.containers[0].image == "web:v2" for p in pods)


def test_job_runs_parallelism_pods_that_never_restart(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(
        Job.model_validate(
            {
                "metadata": {"name": "batch"},
                "spec": {"parallelism": 3, "template": pod_template("batch")},
            }
        )
    )
    settle(kube)
    pods = pods_of(cluster, "batch")
    assert len(pods) == 3
    assert all(p.spec.restart_policy == "Never" for p in pods)
    assert all(p.metadata.labels["job-name"] == "batch" for p in pods)


def test_generated_names_are_reproducible() -> None:
    def run() -> list[str]:
        clock = SimulatedClock()
        store = MemoryCluster(clock, seed=5)
        store.create(node("n1"))
        store.create(deployment("web", 4))
        settle(EmbeddedKubernetes(store, clock))
        return [f"{p.name}@{p.spec.node_name}" for p in store.list(Pod)]

    assert run() == run()


def test_reconcile_reports_no_writes_once_settled(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1", cpu="2"))
    cluster.create(deployment("web", 4))
    assert settle(kube) >= 1
    before = cluster.resource_version()
    assert not kube.reconcile()
    assert cluster.resource_version() == before


# --- scheduler ----------------------------------------------------------------------------------


def test_binder_places_pods_and_explains_the_rest(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("small", cpu="2"))
    cluster.create(node("starting", cpu="64", ready=False))
    cluster.create(
        node(
            "new",
            cpu="64",
            taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}],
        )
    )
    cluster.create(pod("fits", cpu="1"))
    cluster.create(pod("huge", cpu="8"))
    kube.reconcile()
    fits = cluster.get(Pod, "fits")
    huge = cluster.get(Pod, "huge")
    assert fits is not None
    assert huge is not None
    assert fits.spec.node_name == "small"
    assert huge.spec.node_name is None
    assert scheduled_message(huge) == (
        "0/3 nodes are available: 1 Insufficient cpu, "
        "1 node(s) had untolerated taint {karpenter.sh/unregistered: }, "
        "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    before = cluster.resource_version()
    kube.reconcile()
    assert cluster.resource_version() == before  # the same verdict is not written twice


def test_binder_prefers_the_fullest_node(cluster: MemoryCluster, kube: EmbeddedKubernetes) -> None:
    cluster.create(node("a-empty", cpu="8"))
    cluster.create(node("b-busy", cpu="8"))
    cluster.create(pod("existing", cpu="4", nodeName="b-busy"))
    cluster.create(pod("newcomer", cpu="1"))
    kube.reconcile()
    newcomer = cluster.get(Pod, "newcomer")
    assert newcomer is not None
    assert newcomer.spec.node_name == "b-busy"


def test_binder_honours_taints_and_node_selectors(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("gpu", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]))
    cluster.create(node("zone-a", labels={ZONE: "a"}))
    cluster.create(node("zone-b", labels={ZONE: "b"}))
    cluster.create(pod("in-b", nodeSelector={ZONE: "b"}))
    cluster.create(
        pod(
            "tolerant",
            tolerations=[{"key": "gpu", "operator": "Equal", "value": "true"}],
            nodeSelector={"kubernetes.io/hostname": "gpu"},
        )
    )
    cluster.create(pod("nowhere", nodeSelector={ZONE: "c"}))
    kube.reconcile()
    placed = {p.name: p.spec.node_name for p in cluster.list(Pod)}
    assert placed == {"in-b": "zone-b", "tolerant": "gpu", "nowhere": None}
    nowhere = cluster.get(Pod, "nowhere")
    assert nowhere is not None
    message = scheduled_message(nowhere)
    assert message is not None
    assert message.startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: true}, "
        "2 node(s) didn't match Pod's node affinity/selector."
    )


def test_binder_skips_cordoned_nodes_and_other_schedulers(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("cordoned", unschedulable=True))
    cluster.create(pod("mine"))
    cluster.create(pod("theirs", schedulerName="custom"))
    kube.reconcile()
    mine = cluster.get(Pod, "mine")
    theirs = cluster.get(Pod, "theirs")
    assert mine is not None
    assert theirs is not None
    assert mine.spec.node_name is None
    assert scheduled_message(mine) is not None
    assert "1 node(s) were unschedulable" in (scheduled_message(mine) or "")
    assert theirs.condition("PodScheduled") is None


def test_binder_reports_an_empty_cluster(cluster: MemoryCluster, kube: EmbeddedKubernetes) -> None:
    cluster.create(pod("lonely"))
    kube.reconcile()
    lonely = cluster.get(Pod, "lonely")
    assert lonely is not None
    assert scheduled_message(lonely) == "no nodes available to schedule pods"


def test_binder_serves_higher_priority_first(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(pod("early-low", cpu="3", priority=0))
    cluster.create(pod("late-high", cpu="3", priority=100))
    cluster.create(node("n1", cpu="4"))
    kube.reconcile()
    placed = {p.name: p.spec.node_name for p in cluster.list(Pod)}
    assert placed == {"early-low": None, "late-high": "n1"}


def test_pods_of_a_deleted_node_come_back_pending(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1"))
    cluster.create(deployment("web", 3))
    settle(kube)
    before = {p.name for p in pods_of(cluster, "web")}
    assert all(p.spec.node_name == "n1" for p in pods_of(cluster, "web"))
    cluster.delete(Node, "n1")
    settle(kube)
    after = pods_of(cluster, "web")
    assert len(after) == 3
    assert not {p.name for p in after} & before
    for back in after:
        assert back.spec.node_name is None
        assert scheduled_message(back) == "no nodes available to schedule pods"


# --- kubelet ------------------------------------------------------------------------------------


def test_static_nodes_run_their_pods_and_kwok_nodes_are_left_to_kwok(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("static", cpu="1"))
    cluster.create(node("fake", cpu="1", kwok=True))
    cluster.create(pod("on-static", nodeName="static"))
    cluster.create(pod("on-fake", nodeName="fake"))
    settle(kube)
    on_static = cluster.get(Pod, "on-static")
    on_fake = cluster.get(Pod, "on-fake")
    assert on_static is not None
    assert on_fake is not None
    assert on_static.status.phase == "Running"
    ready = on_static.condition("Ready")
    assert ready is not None
    assert ready.status == "True"
    assert on_fake.status.phase == "Pending"


# --- DaemonSet ----------------------------------------------------------------------------------


def test_daemon_set_runs_one_pod_per_eligible_node(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("linux-1", labels={"kubernetes.io/os": "linux"}))
    cluster.create(node("linux-2", labels={"kubernetes.io/os": "linux"}))
    cluster.create(node("windows", labels={"kubernetes.io/os": "windows"}))
    cluster.create(
        node(
            "unregistered",
            labels={"kubernetes.io/os": "linux"},
            taints=[{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}],
        )
    )
    cluster.create(node("cordoned", labels={"kubernetes.io/os": "linux"}, unschedulable=True))
    cluster.create(daemon_set("agent", nodeSelector={"kubernetes.io/os": "linux"}))
    settle(kube)
    placed = sorted(p.spec.node_name or "" for p in pods_of(cluster, "agent"))
    assert placed == ["cordoned", "linux-1", "linux-2"]
    for daemon in pods_of(cluster, "agent"):
        scheduled = daemon.condition("PodScheduled")
        assert scheduled is not None
        assert scheduled.status == "True"
        assert daemon.status.phase == "Running"  # the static kubelet started it
    agent = cluster.get(DaemonSet, "agent")
    assert agent is not None
    assert agent.status.replicas == 3

    cluster.delete(Node, "linux-2")
    settle(kube)
    assert sorted(p.spec.node_name or "" for p in pods_of(cluster, "agent")) == [
        "cordoned",
        "linux-1",
    ]

    unregistered = mutable(cluster.get(Node, "unregistered"))  # type: ignore[type-var]
    assert unregistered is not None
    unregistered.spec.taints = []
    cluster.update(unregistered)
    settle(kube)
    assert "unregistered" in {p.spec.node_name for p in pods_of(cluster, "agent")}


# --- volumes ------------------------------------------------------------------------------------


def storage_class(name: str, mode: str, zones: list[str] | None = None) -> StorageClass:
    data: dict[str, Any] = {
        "metadata": {"name": name},
        "provisioner": "ebs.csi.aws.com",
        "volumeBindingMode": mode,
    }
    if zones:
        data["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}]
    return StorageClass.model_validate(data)


def stateful_set(name: str, replicas: int, storage: str) -> StatefulSet:
    return StatefulSet.model_validate(
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": pod_template(name),
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "storageClassName": storage,
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "10Gi"}},
                        },
                    }
                ],
            },
        }
    )


def test_stateful_set_claims_bind_in_the_zone_of_their_pods_node(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class("gp3", "WaitForFirstConsumer"))
    cluster.create(node("b-node", cpu="1", labels={ZONE: "zone-b"}))
    cluster.create(stateful_set("db", 2, "gp3"))
    settle(kube)

    pods = {p.name: p for p in pods_of(cluster, "db")}
    assert sorted(pods) == ["db-0", "db-1"]
    claims = {c.name: c for c in cluster.list(PersistentVolumeClaim)}
    assert sorted(claims) == ["data-db-0", "data-db-1"]
    assert [
        v.persistent_volume_claim.claim_name
        for v in pods["db-1"].spec.volumes
        if v.persistent_volume_claim
    ] == ["data-db-1"]

    # One node fits one pod: its claim is bound in the node's zone, the other waits.
    bound_pod = next(p for p in pods.values() if p.spec.node_name)
    waiting_pod = next(p for p in pods.values() if not p.spec.node_name)
    bound_claim = claims[f"data-{bound_pod.name}"]
    assert bound_claim.status.phase == "Bound"
    volume = cluster.get(PersistentVolume, bound_claim.spec.volume_name or "")
    assert volume is not None
    assert volume.spec.node_affinity is not None
    assert node_selector_matches(volume.spec.node_affinity.required, {ZONE: "zone-b"})
    assert not node_selector_matches(volume.spec.node_affinity.required, {ZONE: "zone-a"})
    assert claims[f"data-{waiting_pod.name}"].status.phase != "Bound"

    # A node in another zone takes the waiting pod; its claim follows it there.
    cluster.create(node("a-node", cpu="1", labels={ZONE: "zone-a"}))
    settle(kube)
    waiting_now = cluster.get(Pod, waiting_pod.name)
    assert waiting_now is not None
    assert waiting_now.spec.node_name == "a-node"
    claim = cluster.get(PersistentVolumeClaim, f"data-{waiting_pod.name}")
    assert claim is not None
    assert claim.status.phase == "Bound"
    volume = cluster.get(PersistentVolume, claim.spec.volume_name or "")
    assert volume is not None
    assert volume.spec.node_affinity is not None
    assert node_selector_matches(volume.spec.node_affinity.required, {ZONE: "zone-a"})


def test_pod_follows_its_volume_back_to_its_zone(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class("gp3", "WaitForFirstConsumer"))
    cluster.create(node("b-node", labels={ZONE: "zone-b"}))
    cluster.create(stateful_set("db", 1, "gp3"))
    settle(kube)
    cluster.delete(Node, "b-node")
    cluster.create(node("a-node", labels={ZONE: "zone-a"}))
    settle(kube)
    db = cluster.get(Pod, "db-0")
    assert db is not None
    assert db.spec.node_name is None
    message = scheduled_message(db)
    assert message is not None
    assert "1 node(s) had volume node affinity conflict" in message
    cluster.create(node("b-node-2", labels={ZONE: "zone-b"}))
    settle(kube)
    db = cluster.get(Pod, "db-0")
    assert db is not None
    assert db.spec.node_name == "b-node-2"


def test_stateful_set_scale_down_keeps_claims(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class("gp3", "WaitForFirstConsumer"))
    cluster.create(stateful_set("db", 3, "gp3"))
    settle(kube)
    db = mutable(cluster.get(StatefulSet, "db"))  # type: ignore[type-var]
    assert db is not None
    db.spec.replicas = 1
    cluster.update(db)
    settle(kube)
    assert [p.name for p in pods_of(cluster, "db")] == ["db-0"]
    assert len(cluster.list(PersistentVolumeClaim)) == 3


def test_immediate_claims_bind_at_creation_in_an_allowed_zone(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(storage_class("zonal", "Immediate", zones=["zone-c"]))
    cluster.create(stateful_set("db", 1, "zonal"))
    cluster.create(node("a-node", labels={ZONE: "zone-a"}))
    settle(kube)
    claim = cluster.get(PersistentVolumeClaim, "data-db-0")
    assert claim is not None
    assert claim.status.phase == "Bound"
    volume = cluster.get(PersistentVolume, claim.spec.volume_name or "")
    assert volume is not None
    assert volume.spec.node_affinity is not None
    assert node_selector_matches(volume.spec.node_affinity.required, {ZONE: "zone-c"})
    db = cluster.get(Pod, "db-0")
    assert db is not None
    assert db.spec.node_name is None  # its volume lives where no node does


def test_pod_with_a_missing_claim_is_unschedulable(
    cluster: MemoryCluster, kube: EmbeddedKubernetes
) -> None:
    cluster.create(node("n1"))
    cluster.create(
        pod(
            "orphan",
            volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "gone"}}],
        )
    )
    kube.reconcile()
    orphan = cluster.get(Pod, "orphan")
    assert orphan is not None
    assert scheduled_message(orphan) == (
        '0/1 nodes are available: persistentvolumeclaim "gone" not found. preemption: '
        "0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
