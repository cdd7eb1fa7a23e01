"""Seed 001 end to end on a live control plane, as a user runs it (``cluster`` suite).

The seed's default NodePool and KWOKNodeClass and its ``inflate`` Deployment are applied
with kubectl; ``nodewright run`` runs in this process under the chart's ServiceAccount (its
RBAC rendered from charts/nodewright and applied, a token from ``kubectl create token``);
``inflate`` is scaled to 10 and, once its pods run and the cluster has been watched for
:data:`~tests.kube.live.HOLD` seconds, to 0. Nodes are kept alive by the KWOK provider's own
emulation (the default) or, with ``NODEWRIGHT_TEST_KWOK_CONTROLLER=1``, by a KWOK controller.

One run per module; each test checks one thing a user would see.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nodewright.api.coordination import Lease
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.meta import find_condition
from nodewright.cluster.kube import KubeCluster
from nodewright.plugin.host import PluginHost
from nodewright.service.runner import RunService, connect
from nodewright_kwok.heartbeat import NODE_LEASE_NAMESPACE
from tests.kube import live
from tests.kube.live import HOLD, KWOK_CONTROLLER, Identity, Request, RequestLog
from tests.kube.polling import eventually

pytestmark = live.LIVE

POOL_LABEL = "karpenter.sh/nodepool"
REPLICAS = 10


def _manifests(pool: str, namespace: str) -> str:
    """Seed 001's NodePool ("default"), its KWOKNodeClass and the inflate Deployment (as in
    examples/inflate), named for this run; the pods select this run's NodePool."""
    return live.run_manifests(
        pool,
        "[{key: kubernetes.io/arch, operator: In, values: [amd64, arm64]},"
        " {key: kubernetes.io/os, operator: In, values: [linux]},"
        " {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}]",
        live.inflate(pool, namespace, replicas=0),
        template_spec="expireAfter: 720h",
        limits="{cpu: 1000, memory: 1000Gi}",
    )


@dataclasses.dataclass
class Sample:
    at: float
    ready: bool
    deleting: bool
    taints: tuple[str, ...]


@dataclasses.dataclass
class Seed001:
    """What one run showed."""

    pool: str
    namespace: str
    identity: Identity
    pod_name: str
    requests: RequestLog
    outcome: list[object] = dataclasses.field(default_factory=list)
    #: per Node of the pool, what the watcher saw each second
    samples: dict[str, list[Sample]] = dataclasses.field(default_factory=dict)
    running: list[Pod] = dataclasses.field(default_factory=list)
    claims_at_peak: list[NodeClaim] = dataclasses.field(default_factory=list)
    pool_at_peak: NodePool | None = None
    nodes_at_peak: list[Node] = dataclasses.field(default_factory=list)
    leases_at_peak: dict[str, Lease | None] = dataclasses.field(default_factory=dict)
    held: float = 0.0
    scale_down_at: float = 0.0
    events: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    metrics: str = ""
    left_after: tuple[list[str], list[str], list[str]] = ([], [], [])


def _watch_nodes(admin: KubeCluster, run: Seed001, stop: threading.Event) -> None:
    while not stop.is_set():
        now = time.monotonic()
        for node in admin.list(Node, labels={POOL_LABEL: run.pool}):
            ready = next((c for c in node.status.conditions if c.type == "Ready"), None)
            run.samples.setdefault(node.name, []).append(
                Sample(
                    now,
                    ready is not None and ready.status == "True",
                    node.deleting,
                    tuple(t.key for t in node.spec.taints),
                )
            )
        stop.wait(1.0)


def _ready_span(run: Seed001, names: Iterable[str]) -> float:
    """The shortest time the watcher has seen any Node of ``names`` Ready so far, counted from
    its first Ready sample of that Node."""
    spans = []
    for name in names:
        samples = list(run.samples.get(name, ()))
        first = next((s.at for s in samples if s.ready), None)
        spans.append(0.0 if first is None else samples[-1].at - first)
    return min(spans, default=0.0)


def _pods_running(admin: KubeCluster, namespace: str) -> list[Pod]:
    pods = admin.list(Pod, namespace, labels={"app": "inflate"})
    running = [
        p
        for p in pods
        if p.status.phase == "Running"
        and p.spec.node_name
        and (ready := p.condition("Ready")) is not None
        and ready.status == "True"
    ]
    return running if len(running) == REPLICAS == len(pods) else []


@pytest.fixture(scope="module")
def seed001(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seed001]:
    live.install_crds()
    tag = live.suffix()
    pool, namespace = f"seed001-{tag}", f"seed001-{tag}"
    admin = live.connect()
    with (
        live.chart_identity(tmp_path_factory.mktemp("identity"), f"nodewright-{tag}") as identity,
        pytest.MonkeyPatch.context() as env,
    ):
        live.kubectl("create", "namespace", namespace)
        pod_name = f"nodewright-{tag}-5c8d9-x2k9q"
        env.setenv("POD_NAME", pod_name)  # as the chart's downward API sets it
        settings = identity.run_settings()
        cluster = connect(settings)
        run = Seed001(pool, namespace, identity, pod_name, RequestLog(cluster))
        host = PluginHost.load(only=["kwok"])
        service = RunService(settings, cluster, host, identity=pod_name)
        service.start_endpoints()
        loop = threading.Thread(target=lambda: run.outcome.append(service.run()), daemon=True)
        watching = threading.Event()
        watcher = threading.Thread(target=_watch_nodes, args=(admin, run, watching), daemon=True)
        try:
            loop.start()
            watcher.start()
            live.apply(_manifests(pool, namespace))
            live.kubectl("scale", "deploy/inflate", "-n", namespace, f"--replicas={REPLICAS}")
            eventually(
                lambda: bool(_pods_running(admin, namespace)),
                f"{REPLICAS} inflate pods run",
                live.TIMEOUT,
                live.POLL,
            )
            run.running = _pods_running(admin, namespace)
            # Hold until the watcher itself has seen every Node Ready for HOLD seconds: its
            # samples come a second apart and lag the pods, so a fixed sleep could end early.
            nodes = {p.spec.node_name for p in run.running if p.spec.node_name}
            eventually(
                lambda: _ready_span(run, nodes) >= HOLD,
                f"the watcher sees every Node Ready for {HOLD} s",
                HOLD + live.TIMEOUT,
                live.POLL,
            )
            run.held = _ready_span(run, nodes)
            run.claims_at_peak = admin.list(NodeClaim, labels={POOL_LABEL: pool})
            run.pool_at_peak = admin.read(NodePool, pool)
            run.nodes_at_peak = admin.list(Node, labels={POOL_LABEL: pool})
            run.leases_at_peak = {
                n.name: admin.read(Lease, n.name, NODE_LEASE_NAMESPACE) for n in run.nodes_at_peak
            }
            path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
            run.events = admin._api.call("GET", path).body.get("items") or []
            url = f"http://127.0.0.1:{service.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as answer:
                run.metrics = answer.read().decode()

            run.scale_down_at = time.monotonic()
            live.kubectl("scale", "deploy/inflate", "-n", namespace, "--replicas=0")

            def emptied() -> bool:
                return not admin.list(NodeClaim, labels={POOL_LABEL: pool}) and not admin.list(
                    Node, labels={POOL_LABEL: pool}
                )

            eventually(
                emptied, "scaled to zero: every NodeClaim and Node gone", live.TIMEOUT, live.POLL
            )
            time.sleep(2.0)  # the garbage collector deletes the Nodes' Leases
            run.left_after = (
                [c.name for c in admin.list(NodeClaim, labels={POOL_LABEL: pool})],
                [n.name for n in admin.list(Node, labels={POOL_LABEL: pool})],
                [
                    name
                    for name in (n.name for n in run.nodes_at_peak)
                    if admin.read(Lease, name, NODE_LEASE_NAMESPACE) is not None
                ],
            )
        finally:
            watching.set()
            service.request_stop()
            loop.join(60)
            watcher.join(10)
            live.kubectl(
                "delete", "--ignore-not-found", "--wait=false",
                "nodepool/" + pool, "kwoknodeclass/" + pool, "namespace/" + namespace,
            )  # fmt: skip
            admin.close()
        yield run


def test_nodewright_ran_and_stopped_cleanly(seed001: Seed001) -> None:
    assert seed001.outcome == [0]


def test_the_pods_run_on_new_nodes_of_the_pool(seed001: Seed001) -> None:
    assert len(seed001.running) == REPLICAS
    nodes = {n.name for n in seed001.nodes_at_peak}
    assert {p.spec.node_name for p in seed001.running} <= nodes
    claims = seed001.claims_at_peak
    assert 1 <= len(claims) <= REPLICAS
    assert {c.status.node_name for c in claims} == nodes  # one Node per NodeClaim
    assert len({c.status.provider_id for c in claims}) == len(claims)


def test_the_nodes_stay_ready_throughout(seed001: Seed001) -> None:
    assert seed001.held >= HOLD
    assert seed001.samples, "the watcher saw no Nodes"
    for name, samples in seed001.samples.items():
        alive = [s for s in samples if not s.deleting and s.at < seed001.scale_down_at]
        first_ready = next((i for i, s in enumerate(alive) if s.ready), None)
        assert first_ready is not None, f"Node {name} never became Ready"
        after = alive[first_ready:]
        not_ready = [round(s.at - after[0].at) for s in after if not s.ready]
        assert not_ready == [], f"Node {name} went NotReady at +{not_ready} s"
        unreachable = [s.taints for s in after if "node.kubernetes.io/unreachable" in s.taints]
        assert unreachable == [], f"Node {name} was tainted unreachable"
        assert after[-1].at - after[0].at >= HOLD, f"Node {name} was watched too briefly"


@live.EMULATION
def test_each_emulated_node_renews_a_lease_it_owns(seed001: Seed001) -> None:
    for node in seed001.nodes_at_peak:
        lease = seed001.leases_at_peak[node.name]
        assert lease is not None, f"no Lease for Node {node.name}"
        assert lease.spec.holder_identity == node.name
        assert [r.uid for r in lease.metadata.owner_references] == [node.metadata.uid]


def test_scale_to_zero_removes_every_node_and_nodeclaim(seed001: Seed001) -> None:
    claims, nodes, leases = seed001.left_after
    assert claims == []
    assert nodes == []
    assert leases == []  # gone with their Nodes (owner references)


def test_events_go_through_events_k8s_io(seed001: Seed001) -> None:
    nominated = [e for e in seed001.events if e.get("reason") == "Nominated"]
    assert nominated, "no Nominated events for the pods"
    for event in nominated:
        assert event["reportingController"] == "karpenter"
        assert event["reportingInstance"] == seed001.pod_name  # POD_NAME
        assert event["action"] == "Nominate"
        assert event["regarding"]["kind"] == "Pod"
        assert re.match(r"Pod should schedule on: (nodeclaim|node)/", event["note"])
    used = seed001.requests.requests()
    assert Request("create", "events.k8s.io", "events", "", seed001.namespace) in used


def test_metrics_are_scraped(seed001: Seed001) -> None:
    created = re.findall(
        rf'^karpenter_nodeclaims_created_total{{[^}}]*nodepool="{seed001.pool}"[^}}]*}} (\S+)$',
        seed001.metrics,
        re.MULTILINE,
    )
    assert created, "no karpenter_nodeclaims_created_total for the NodePool"
    assert sum(float(v) for v in created) >= len(seed001.claims_at_peak)
    assert "karpenter_pods_state" in seed001.metrics


def test_the_pool_reports_its_nodes_register(seed001: Seed001) -> None:
    pool = seed001.pool_at_peak
    assert pool is not None
    healthy = find_condition(pool.status.conditions, "NodeRegistrationHealthy")
    assert healthy is not None
    assert (healthy.status, healthy.observed_generation) == ("True", pool.metadata.generation)
    assert pool.status.node_class_observed_generation == 1
    ready = find_condition(pool.status.conditions, "Ready")
    assert ready is not None
    assert ready.status == "True"


def test_the_pool_cost_and_the_cluster_state_are_scraped(seed001: Seed001) -> None:
    families = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(seed001.metrics)
        for s in family.samples
    }
    cost = families[("karpenter_nodepools_cost_total", (("nodepool", seed001.pool),))]
    assert cost > 0
    assert families[("karpenter_cluster_state_synced", ())] == 1
    assert families[("karpenter_cluster_state_unsynced_time_seconds", ())] == 0
    assert [name for name, _ in families if name == "karpenter_build_info"] == [
        "karpenter_build_info"
    ]


def test_the_chart_rbac_is_enough_for_everything_the_controller_did(seed001: Seed001) -> None:
    """Every request nodewright made, under the chart's ServiceAccount, was allowed, and
    ``kubectl auth can-i`` agrees for each one."""
    identity = seed001.identity
    assert seed001.requests.refused() == []
    used = seed001.requests.requests()
    expected = {
        Request("watch", "", "pods", "", ""),
        Request("watch", "", "nodes", "", ""),
        Request("watch", "karpenter.sh", "nodeclaims", "", ""),
        Request("create", "karpenter.sh", "nodeclaims", "", ""),
        Request("create", "", "nodes", "", ""),
        Request("create", "coordination.k8s.io", "leases", "", identity.namespace),
        Request("update", "coordination.k8s.io", "leases", "", identity.namespace),
    }
    if not KWOK_CONTROLLER:
        expected |= {
            Request("patch", "", "pods", "status", seed001.namespace),
            Request("patch", "", "nodes", "status", ""),
            Request("create", "coordination.k8s.io", "leases", "", NODE_LEASE_NAMESPACE),
            Request("update", "coordination.k8s.io", "leases", "", NODE_LEASE_NAMESPACE),
        }
    missing = sorted(str(r) for r in expected - used)
    assert missing == [], f"the run never did {missing}"
    refused = sorted(str(r) for r in used if not r.can_i(identity.kubeconfig))
    assert refused == [], f"kubectl auth can-i says no to {refused}"
    for broader in (
        Request("get", "", "secrets", "", identity.namespace),
        Request("create", "", "pods", "binding", seed001.namespace),
        Request("delete", "coordination.k8s.io", "leases", "", NODE_LEASE_NAMESPACE),
        Request("update", "coordination.k8s.io", "leases", "", "default"),
    ):
        assert not broader.can_i(identity.kubeconfig), f"the chart allows {broader}"
