"""A snapshot's workloads keep their identity through the run: the ReplicaSets the real
cluster made (named by the pod-template-hash kube-controller-manager computed, not by the
simulator's) stay their Deployment's, and the pods recreated when a node goes are the same
ReplicaSet's, StatefulSet revision's and DaemonSet revision's as the pods they replace."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from nodewright.api.apps import DaemonSet, Deployment, ReplicaSet
from nodewright.api.core import Pod
from nodewright.cluster.objects import mutable
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import karpenter_rules, kind_registry
from nodewright.simulation.limits import DEFAULT
from nodewright.simulation.runner import Simulation
from nodewright.simulation.snapshot import load_snapshot, read_items
from tests.simulation.conftest import DUMP, RunDump, item

#: The hashes the real cluster wrote (kube-controller-manager's, not the simulator's).
WEB_HASH = "6fnrn4lpg4"
OLD_WEB_HASH = "54c8b7f9d6"
DB_REVISION = "db-6b9f7c8d5f"
AGENT_HASH = "6c8f9b5d47"


def _dump() -> dict[str, Any]:
    """The example with the cluster's own hashes, a retired ReplicaSet, a StatefulSet and a
    DaemonSet, and kwok-b drifted (spot in an on-demand NodePool): its pods must move."""
    dump: dict[str, Any] = yaml.safe_load(DUMP.read_text().replace("7d4b9c8f6d", WEB_HASH))
    items = dump["items"]
    item(dump, "Node", "kwok-b")["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot"
    item(dump, "Deployment", "web")["metadata"]["annotations"][
        "deployment.kubernetes.io/revision"
    ] = "2"
    current = item(dump, "ReplicaSet", f"web-{WEB_HASH}")
    current["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "2"
    old = copy.deepcopy(current)
    labels = {"app": "web", "pod-template-hash": OLD_WEB_HASH}
    old["metadata"].update(name=f"web-{OLD_WEB_HASH}", uid="uid-rs-web-old", labels=labels)
    old["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    old["spec"]["replicas"] = 0
    old["spec"]["selector"] = {"matchLabels": dict(labels)}
    old["spec"]["template"]["metadata"] = {"labels": dict(labels)}
    old["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.9"
    old.pop("status")
    items.append(old)
    etcd = item(dump, "Pod", "etcd-static-1")

    def pod(name: str, node: str, owner: tuple[str, str], labels: dict[str, str]) -> None:
        made = copy.deepcopy(etcd)
        made["metadata"].update(
            name=name,
            uid=f"uid-{name}",
            labels=labels,
            ownerReferences=[
                {
                    "apiVersion": "apps/v1",
                    "kind": owner[0],
                    "name": owner[1],
                    "uid": f"uid-{owner[1]}",
                    "controller": True,
                }
            ],
        )
        made["spec"]["nodeName"] = node
        made["spec"]["containers"][0]["resources"] = {}
        made["spec"]["tolerations"] = [{"operator": "Exists"}]
        items.append(made)

    template = {
        "metadata": {"labels": {"app": "db"}},
        "spec": {"containers": [{"name": "db", "image": "db"}]},
    }
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default", "uid": "uid-db"},
            "spec": {
                "replicas": 1,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": template,
            },
            "status": {"currentRevision": DB_REVISION, "updateRevision": DB_REVISION},
        }
    )
    db_labels = {"app": "db", "controller-revision-hash": DB_REVISION}
    pod("db-0", "kwok-b", ("StatefulSet", "db"), db_labels)
    agent_template = {
        "metadata": {"labels": {"app": "agent"}},
        "spec": {
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "agent", "image": "agent"}],
        },
    }
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {
                "name": "agent",
                "namespace": "default",
                "uid": "uid-agent",
                "annotations": {"deprecated.daemonset.template.generation": "2"},
            },
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": agent_template},
        }
    )
    agent_labels = {
        "app": "agent",
        "controller-revision-hash": AGENT_HASH,
        "pod-template-generation": "2",
    }
    for node in ("kwok-a", "kwok-b", "static-1"):  # none on kwok-c yet
        pod(f"agent-{node}", node, ("DaemonSet", "agent"), agent_labels)
    return dump


def _simulate(dump: dict[str, Any]) -> Simulation:
    host = PluginHost.load(only=["kwok"])
    snapshot = read_items(
        dump["items"], "dump.yaml", kind_registry(host), karpenter_rules(host), limits=DEFAULT
    )
    simulation = Simulation(host)
    load_snapshot(simulation, snapshot)
    simulation.settle()
    return simulation


def test_recreated_pods_keep_the_replicaset_statefulset_and_daemonset_revision_they_had() -> None:
    dump = _dump()
    before = {i["metadata"]["name"] for i in dump["items"] if i["kind"] == "Pod"}
    simulation = _simulate(dump)
    cluster = simulation.cluster
    pods = {pod.name: pod for pod in cluster.list(Pod)}
    # kwok-b went (drifted); its pods run elsewhere
    assert "kwok-b" not in {pod.spec.node_name for pod in pods.values()}

    # no ReplicaSet of the simulator's: the current one kept its replicas, the old none
    replica_sets = {rs.name: rs.spec.replicas for rs in cluster.list(ReplicaSet)}
    assert replica_sets == {f"web-{WEB_HASH}": 5, f"web-{OLD_WEB_HASH}": 0}
    web = [pod for name, pod in pods.items() if pod.metadata.labels.get("app") == "web"]
    assert len(web) == 5
    recreated = [pod for pod in web if pod.name not in before]
    assert len(recreated) == 2  # kwok-b's two
    for each in web:
        assert each.name.startswith(f"web-{WEB_HASH}-")
        assert each.metadata.labels["pod-template-hash"] == WEB_HASH
        (owner,) = each.metadata.owner_references
        assert (owner.kind, owner.name) == ("ReplicaSet", f"web-{WEB_HASH}")

    db = pods["db-0"]
    assert db.spec.node_name != "kwok-b"
    assert db.metadata.labels["controller-revision-hash"] == DB_REVISION

    agents = {
        pod.spec.node_name: pod
        for pod in pods.values()
        if pod.metadata.labels.get("app") == "agent"
    }
    assert set(agents) == {"kwok-a", "kwok-c", "static-1"}
    assert agents["kwok-c"].name not in before  # made by the run, as its siblings were
    for agent in agents.values():
        labels = agent.metadata.labels
        assert labels["controller-revision-hash"] == AGENT_HASH
        assert labels["pod-template-generation"] == "2"


def test_a_template_changed_over_the_snapshot_is_a_new_revision() -> None:
    host = PluginHost.load(only=["kwok"])
    items = _dump()["items"]
    snapshot = read_items(
        items, "dump.yaml", kind_registry(host), karpenter_rules(host), limits=DEFAULT
    )
    simulation = Simulation(host)
    load_snapshot(simulation, snapshot)
    cluster = simulation.cluster
    # what if the Deployment and the DaemonSet ran another image (a manifest over the dump)?
    deployment = cluster.get(Deployment, "web", "default")
    daemon_set = cluster.get(DaemonSet, "agent", "default")
    assert deployment is not None
    assert daemon_set is not None
    for stored in (deployment, daemon_set):
        changed = mutable(stored)
        changed.spec.template.spec.containers[0].image = "registry.k8s.io/pause:3.11"
        cluster.update(changed)
    simulation.settle()
    replica_sets = {rs.name: rs.spec.replicas for rs in cluster.list(ReplicaSet)}
    new = [name for name in replica_sets if name not in (f"web-{WEB_HASH}", f"web-{OLD_WEB_HASH}")]
    assert len(new) == 1  # rolled: the simulator's ReplicaSet has the replicas
    assert replica_sets == {new[0]: 5, f"web-{WEB_HASH}": 0, f"web-{OLD_WEB_HASH}": 0}
    agents = [pod for pod in cluster.list(Pod) if pod.metadata.labels.get("app") == "agent"]
    new_agent = next(pod for pod in agents if pod.spec.node_name == "kwok-c")
    assert new_agent.metadata.labels["controller-revision-hash"] not in ("", AGENT_HASH)
    assert "pod-template-generation" not in new_agent.metadata.labels


def test_the_report_names_recreated_pods_after_the_clusters_replicaset(run_dump: RunDump) -> None:
    run = run_dump(_dump())
    assert run.exit_code == 0, run.stderr
    web = [p for p in run.report["pods"] if p["name"].startswith("web-")]
    assert len(web) == 5
    assert all(p["name"].startswith(f"web-{WEB_HASH}-") for p in web)
    assert {p["node"] for p in web} == {"kwok-a", "kwok-c"}
