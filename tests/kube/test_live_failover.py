"""High availability on a live control plane (``cluster`` suite): a leader killed mid-launch
hands over with no node launched twice, and SIGTERM releases the Lease at once."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from nodewright.api.coordination import Lease
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.cluster.kube import KubeCluster
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import ProviderContext
from nodewright.service.runner import RunService, connect
from nodewright.settings import RunSettings
from nodewright_kwok.faults import Crash
from nodewright_kwok.ledger import Ledger
from nodewright_kwok.plugin import KWOKPlugin
from nodewright_kwok.provider import KWOKProvider
from tests.kube import live
from tests.kube.polling import LogLines, eventually

pytestmark = live.LIVE

POOL_LABEL = "karpenter.sh/nodepool"


class CrashingKWOK(KWOKProvider):
    """A KWOK provider whose process "dies" right after its first launch is recorded."""

    def configure(self, context: ProviderContext) -> None:
        super().configure(context)
        self.faults.crash_at("launch.after")


def _manifests(pool: str, namespace: str, replicas: int) -> str:
    return live.run_manifests(
        pool,
        "[{key: kubernetes.io/os, operator: In, values: [linux]},"
        " {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]},"
        ' {key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["4"]}]',
        live.inflate(pool, namespace, replicas),
        disruption="{consolidationPolicy: WhenEmpty, consolidateAfter: 0s}",
    )


@pytest.fixture
def namespace() -> Iterator[str]:
    live.install_crds()
    name = f"failover-{live.suffix()}"
    live.kubectl("create", "namespace", name)
    yield name
    live.kubectl("delete", "namespace", name, "--ignore-not-found", "--wait=false")


@pytest.fixture
def admin() -> Iterator[KubeCluster]:
    cluster = live.connect()
    yield cluster
    cluster.close()


class Replica:
    def __init__(self, provider: KWOKProvider, name: str, namespace: str) -> None:
        settings = RunSettings(
            kubeconfig=live.KUBECONFIG,
            metrics_port=0,
            health_probe_port=0,
            bind_address="127.0.0.1",
            batch_idle_duration="500ms",
            batch_max_duration="2s",
            leader_election_namespace=namespace,
            leader_election_name="nodewright-failover",
            leader_election_lease_duration="4s",
            leader_election_renew_deadline="3s",
            leader_election_retry_period="500ms",
            provider_options=live.PROVIDER_OPTIONS,
            log_format="text",
        )
        host = PluginHost.load(entry_points=False, plugins={"kwok": KWOKPlugin(provider)})
        assert not host.errors
        self.service = RunService(settings, connect(settings), host, identity=name)
        self.outcome: list[object] = []
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.outcome.append(self.service.run())
        except Crash as crash:
            self.outcome.append(crash)

    def stop(self) -> None:
        self.service.request_stop()
        self.thread.join(60)


def _holder(admin: KubeCluster, namespace: str) -> str | None:
    lease = admin.read(Lease, "nodewright-failover", namespace)
    return None if lease is None else lease.spec.holder_identity


def test_a_leader_killed_mid_launch_hands_over_with_no_node_launched_twice(
    namespace: str, admin: KubeCluster
) -> None:
    pool = namespace
    ledger = Ledger()  # the cloud: it outlives the process that dies
    first = Replica(CrashingKWOK(ledger=ledger), "replica-a", namespace)
    second: Replica | None = None
    try:
        eventually(
            lambda: _holder(admin, namespace) == "replica-a", "replica-a leads", 60, live.POLL
        )
        second = Replica(KWOKProvider(ledger=ledger), "replica-b", namespace)
        eventually(second.service.cluster.synced, "the standby's caches", 60, live.POLL)
        live.apply(_manifests(pool, namespace, replicas=4))

        first.thread.join(120)
        assert first.outcome, "replica-a is still running"
        assert isinstance(first.outcome[0], Crash), first.outcome
        assert len(ledger.entries()) == 1  # launched, then died before recording it
        assert second.service.passes == 0  # the standby never ran while a led

        eventually(
            lambda: _holder(admin, namespace) == "replica-b",
            "replica-b takes over",
            live.TIMEOUT,
            live.POLL,
        )

        def settled() -> bool:
            claims = admin.list(NodeClaim, labels={POOL_LABEL: pool})
            nodes = {n.spec.provider_id for n in admin.list(Node, labels={POOL_LABEL: pool})}
            pods = admin.list(Pod, namespace)
            return (
                bool(claims)
                and all(c.status.provider_id in nodes for c in claims)
                and len(pods) == 4
                and all(p.status.phase == "Running" for p in pods)
            )

        eventually(
            settled,
            "every NodeClaim launched, registered, its pods running",
            live.TIMEOUT,
            live.POLL,
        )
        time.sleep(3.0)  # more passes: nothing more may launch
        claims = admin.list(NodeClaim, labels={POOL_LABEL: pool})
        nodes = admin.list(Node, labels={POOL_LABEL: pool})
        assert len({c.status.provider_id for c in claims}) == len(claims)
        assert len(ledger.entries()) == len(claims)  # nothing launched twice
        assert sorted(n.spec.provider_id or "" for n in nodes) == sorted(
            c.status.provider_id or "" for c in claims
        )
        lease = admin.read(Lease, "nodewright-failover", namespace)
        assert lease is not None
        assert lease.spec.lease_transitions == 1

        live.kubectl("scale", "deploy/inflate", "-n", namespace, "--replicas=0")
        eventually(
            lambda: not admin.list(Node, labels={POOL_LABEL: pool}),
            "the empty nodes removed",
            live.TIMEOUT,
            live.POLL,
        )
    finally:
        if second is not None:
            second.stop()
        first.stop()
        live.kubectl(
            "delete", "--ignore-not-found", "--wait=false", f"nodepool/{pool}",
            f"kwoknodeclass/{pool}",
        )  # fmt: skip
    assert second is not None
    assert second.outcome == [0]
    assert _holder(admin, namespace) == ""  # released on shutdown


def test_sigterm_releases_the_lease(namespace: str, admin: KubeCluster) -> None:
    """``nodewright run`` as a process: SIGTERM, exit 0, the Lease free for a standby."""
    env = dict(os.environ, NODEWRIGHT_PLUGINS="kwok", LOG_FORMAT="text")
    env.pop("KUBECONFIG", None)
    process = subprocess.Popen(
        [
            sys.executable, "-m", "nodewright.commands", "run", "--kubeconfig", live.KUBECONFIG,
            "--metrics-port", "0", "--health-probe-port", "0", "--bind-address", "127.0.0.1",
            "--leader-election-namespace", namespace,
            "--leader-election-name", "nodewright-failover",
        ],
        env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    log = LogLines(process.stderr)

    try:
        log.wait_for(re.escape("serving /healthz and /readyz on 127.0.0.1:"), 60.0)
        log.wait_for("became leader", 60.0)
        lease = admin.read(Lease, "nodewright-failover", namespace)
        assert lease is not None
        assert lease.spec.holder_identity
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        log.wait_for("released Lease", 60.0)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        log.close()
    released = admin.read(Lease, "nodewright-failover", namespace)
    assert released is not None
    assert released.spec.holder_identity == ""
