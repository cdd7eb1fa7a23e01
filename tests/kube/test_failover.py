"""Two ``nodewright run`` services against one (fake) API server: leader election, failover
after the leader dies mid-provisioning, graceful shutdown, probes and metrics."""

from __future__ import annotations

import dataclasses
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodewright.api.coordination import Lease
from nodewright.api.core import Node, Pod, PodCondition, PodStatus
from nodewright.api.karpenter import NodeClaim
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_text
from nodewright.cluster.kube import KubeCluster
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import ProviderContext
from nodewright.service.runner import UNCACHED_KINDS, RunService
from nodewright.settings.run import RunSettings
from nodewright.testing.manifests import KWOK_NODE_CLASS, node_pool, pod
from nodewright_kwok.faults import Crash
from nodewright_kwok.ledger import Ledger
from nodewright_kwok.nodeclass import KWOKNodeClass
from nodewright_kwok.plugin import KWOKPlugin
from nodewright_kwok.provider import KWOKProvider
from tests.kube.conftest import FAST
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.polling import eventually

#: Seconds a replica may take to lead, sync its caches, launch or clean up.
WAIT = 20.0

MANIFESTS = KWOK_NODE_CLASS + node_pool(
    weight=None,
    requirements="[{key: kubernetes.io/os, operator: In, values: [linux]},"
    " {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]},"
    ' {key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["4"]}]',
)


class CrashingKWOK(KWOKProvider):
    """A KWOK provider whose process "dies" right after its first launch is recorded."""

    def configure(self, context: ProviderContext) -> None:
        super().configure(context)
        self.faults.crash_at("launch.after")


@dataclasses.dataclass
class Replica:
    service: RunService
    thread: threading.Thread
    outcome: list[object]


def _settings(apiserver: FakeApiServer, **changes: object) -> RunSettings:
    values: dict[str, object] = {
        "kubeconfig": str(apiserver.kubeconfig),
        "batch_idle_duration": "200ms",
        "batch_max_duration": "1s",
        "leader_election_namespace": "kube-system",
        "leader_election_lease_duration": "2s",
        "leader_election_renew_deadline": "1500ms",
        "leader_election_retry_period": "200ms",
        "metrics_port": 0,
        "health_probe_port": 0,
        "bind_address": "127.0.0.1",
    }
    values.update(changes)
    return RunSettings(**values)  # type: ignore[arg-type]


def _start(
    apiserver: FakeApiServer, provider: KWOKProvider, name: str, **changes: object
) -> Replica:
    host = PluginHost.load(entry_points=False, plugins={"kwok": KWOKPlugin(provider)})
    assert not host.errors
    cluster = KubeCluster(
        KubeCluster.connect(str(apiserver.kubeconfig))._client,
        FAST,
        uncached=UNCACHED_KINDS,
    )
    service = RunService(_settings(apiserver, **changes), cluster, host, identity=name)
    service.start_endpoints()
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(service.run())
        except Crash as crash:
            outcome.append(crash)

    thread = threading.Thread(target=run, name=f"replica-{name}", daemon=True)
    thread.start()
    return Replica(service, thread, outcome)


@pytest.fixture
def user(apiserver: FakeApiServer) -> Iterator[KubeCluster]:
    """What ``kubectl`` would do: apply the NodePool, the NodeClass and pending pods."""
    cluster = KubeCluster.connect(str(apiserver.kubeconfig), settings=FAST)
    registry = KindRegistry()
    registry.register(KWOKNodeClass)
    for obj in load_text(MANIFESTS, "test", registry):
        cluster.create(obj)
    yield cluster
    cluster.close()


def _pending_pods(user: KubeCluster, count: int) -> None:
    registry = KindRegistry()
    for index in range(count):
        (loaded,) = load_text(
            pod(f"inflate-{index}", labels="{app: inflate}", memory="100Mi"), "test", registry
        )
        created = user.create(loaded)
        assert isinstance(created, Pod)
        created.status = PodStatus(
            phase="Pending",
            conditions=[PodCondition(type="PodScheduled", status="False", reason="Unschedulable")],
        )
        user.update_status(created)


def _holder(user: KubeCluster) -> str | None:
    lease = user.read(Lease, "karpenter-leader-election", "kube-system")
    return None if lease is None else lease.spec.holder_identity


def test_standby_takes_over_a_leader_killed_mid_provisioning(
    apiserver: FakeApiServer, user: KubeCluster
) -> None:
    ledger = Ledger()  # the fake cloud, shared by both replicas
    first = _start(apiserver, CrashingKWOK(ledger=ledger), "replica-a")
    eventually(lambda: _holder(user) == "replica-a", "replica-a leads", WAIT)
    second = _start(apiserver, KWOKProvider(ledger=ledger), "replica-b")
    try:
        eventually(second.service.cluster.synced, "standby caches", WAIT)
        assert not second.service.leading
        _pending_pods(user, 6)

        # replica-a creates NodeClaims, launches one instance and dies before recording it
        first.thread.join(20)
        assert first.outcome
        assert isinstance(first.outcome[0], Crash)
        assert len(ledger.entries()) == 1
        assert second.service.passes == 0  # the standby never ran a pass while a led

        # replica-b takes the Lease once it expires and finishes the job
        eventually(lambda: _holder(user) == "replica-b", "replica-b takes over", WAIT)

        def settled() -> bool:
            claims = user.list(NodeClaim)
            nodes = {n.spec.provider_id for n in user.list(Node)}
            return bool(claims) and all(
                c.status.provider_id and c.status.provider_id in nodes for c in claims
            )

        eventually(settled, "every NodeClaim launched and registered", WAIT)
        time.sleep(1.0)  # a few more passes: nothing more may launch
        claims = user.list(NodeClaim)
        provider_ids = [c.status.provider_id for c in claims]
        assert len(set(provider_ids)) == len(claims)
        assert len(ledger.entries()) == len(claims)  # nothing launched twice
        assert len(user.list(Node)) == len(claims)
        assert second.service.passes > 0
        lease = user.read(Lease, "karpenter-leader-election", "kube-system")
        assert lease is not None
        assert lease.spec.lease_transitions == 1
    finally:
        second.service.request_stop()
        second.thread.join(10)
    assert second.outcome == [0]
    assert _holder(user) == ""  # released on shutdown


def test_graceful_shutdown_releases_the_lease_and_probes_answer(
    apiserver: FakeApiServer, user: KubeCluster
) -> None:
    replica = _start(apiserver, KWOKProvider(), "only")
    try:
        eventually(lambda: replica.service.passes > 0, "a first pass", WAIT)
        base = "http://127.0.0.1"
        health = replica.service.health_port
        with urllib.request.urlopen(f"{base}:{health}/healthz", timeout=5) as answer:
            assert answer.status == 200
        with urllib.request.urlopen(f"{base}:{health}/readyz", timeout=5) as answer:
            assert answer.status == 200
        url = f"{base}:{replica.service.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            text = answer.read().decode()
        assert "karpenter_nodeclaims_created_total" in text
    finally:
        replica.service.request_stop()
        replica.thread.join(10)
    assert not replica.thread.is_alive()
    assert replica.outcome == [0]
    assert _holder(user) == ""


def test_without_leader_election_one_replica_runs_at_once(
    apiserver: FakeApiServer, user: KubeCluster, tmp_path: Path
) -> None:
    replica = _start(apiserver, KWOKProvider(), "solo", disable_leader_election=True)
    try:
        _pending_pods(user, 2)
        eventually(lambda: bool(user.list(NodeClaim)), "a NodeClaim", WAIT)
        assert user.read(Lease, "karpenter-leader-election", "kube-system") is None
    finally:
        replica.service.request_stop()
        replica.thread.join(10)
    assert replica.outcome == [0]


def test_a_leader_that_cannot_renew_steps_down_and_exits(
    apiserver: FakeApiServer, user: KubeCluster
) -> None:
    from tests.kube.fake_apiserver import Fault

    replica = _start(apiserver, KWOKProvider(), "flaky")
    try:
        eventually(lambda: replica.service.passes > 0, "a first pass", WAIT)
        apiserver.inject(Fault("PUT", "/leases/", status=500, times=10_000))
        replica.thread.join(15)
        assert replica.outcome == [1]  # exit status 1: the pod restarts as a standby
        assert replica.service.healthy() == (False, "leadership lost")
    finally:
        apiserver.faults.clear()
        replica.service.request_stop()
        replica.thread.join(10)


def test_a_new_leader_with_its_own_ledger_adopts_and_deletes_the_old_leaders_instances(
    apiserver: FakeApiServer, user: KubeCluster
) -> None:
    """Two processes do not share a fake cloud: the new leader finds the old leader's
    instances through their Nodes, and terminates them when their NodeClaims go."""
    first = _start(apiserver, KWOKProvider(), "replica-a")
    eventually(lambda: _holder(user) == "replica-a", "replica-a leads", WAIT)
    _pending_pods(user, 4)

    def registered() -> bool:
        claims = user.list(NodeClaim)
        nodes = {n.spec.provider_id for n in user.list(Node)}
        return bool(claims) and all(
            c.status.provider_id and c.status.provider_id in nodes for c in claims
        )

    eventually(registered, "replica-a launched and registered its nodes", WAIT)
    launched = sorted(c.status.provider_id or "" for c in user.list(NodeClaim))
    first.service.request_stop()
    first.thread.join(10)
    assert first.outcome == [0]

    successor = KWOKProvider()  # a new process: an empty ledger
    second = _start(apiserver, successor, "replica-b")
    try:
        eventually(lambda: _holder(user) == "replica-b", "replica-b takes over", WAIT)
        eventually(lambda: second.service.passes > 0, "replica-b runs", WAIT)
        assert sorted(i.provider_id for i in successor.list_instances()) == launched
        time.sleep(0.5)  # a few passes: nothing is launched again
        assert sorted(c.status.provider_id or "" for c in user.list(NodeClaim)) == launched
        assert len(user.list(Node)) == len(launched)

        for pod in user.list(Pod):  # the workload goes (nothing binds pods here) ...
            user.delete(Pod, pod.name, pod.namespace)
        for claim in user.list(NodeClaim):  # ... and so do its nodes
            user.delete(NodeClaim, claim.name)
        eventually(lambda: not user.list(NodeClaim), "NodeClaims terminated", WAIT)
        eventually(lambda: not user.list(Node), "their Nodes deleted by replica-b", WAIT)
        assert successor.list_instances() == []
    finally:
        second.service.request_stop()
        second.thread.join(10)
    assert second.outcome == [0]
