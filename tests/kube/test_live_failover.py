"""High availability on a live control plane (``cluster`` suite): a leader killed mid-launch
hands over with no node launched twice, and SIGTERM releases the Lease at once."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodewright.api.coordination import Lease
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.cluster.kube import KubeCluster, ServerUnavailableError
from nodewright.cluster.kube.transport import Answer
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import ProviderContext
from nodewright.service.runner import RunService, connect
from nodewright.settings.run import RunSettings
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


#: Quick leader election for the crash test: a dead leader's Lease expires in 4 s.
QUICK_LEASE: dict[str, Any] = {
    "leader_election_lease_duration": "4s",
    "leader_election_renew_deadline": "3s",
    "leader_election_retry_period": "500ms",
}


class Replica:
    def __init__(
        self,
        provider: KWOKProvider,
        name: str,
        namespace: str,
        lease: dict[str, Any] | None = None,
    ) -> None:
        settings = RunSettings(
            kubeconfig=live.KUBECONFIG,
            metrics_port=0,
            health_probe_port=0,
            bind_address="127.0.0.1",
            batch_idle_duration="500ms",
            batch_max_duration="2s",
            leader_election_namespace=namespace,
            leader_election_name="nodewright-failover",
            provider_options=live.PROVIDER_OPTIONS,
            log_format="text",
            **(QUICK_LEASE if lease is None else lease),
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


@dataclasses.dataclass(frozen=True)
class Create:
    """One NodeClaim create a replica sent."""

    status: int  # 0: no answer came (the request timed out)
    name: str  # the name the server gave it, when it answered
    left: float  # seconds the sender's fence still had to run when the answer came
    open_for: float  # seconds the sender's fence still had to run as it sent the request


class NodeClaimCreates:
    """Every NodeClaim create one replica sends, and what came of it."""

    def __init__(self, replica: Replica) -> None:
        self.sent: list[Create] = []
        transport = replica.service.cluster._api
        call, fence = transport.call, replica.service.cluster.fence
        assert fence is not None

        def recorded(method: str, path: str, *args: Any, **kwargs: Any) -> Answer:
            if not (method == "POST" and path.endswith("/nodeclaims")):
                return call(method, path, *args, **kwargs)
            open_for = fence.remaining()
            try:
                answer = call(method, path, *args, **kwargs)
            except ServerUnavailableError:
                self.sent.append(Create(0, "", fence.remaining(), open_for))
                raise
            name = str((answer.body.get("metadata") or {}).get("name") or "")
            self.sent.append(Create(answer.status, name, fence.remaining(), open_for))
            return answer

        transport.call = recorded  # type: ignore[method-assign]


def _api_server_pid() -> int:
    home = os.environ.get("REALK8S_HOME") or os.path.join(
        os.environ.get("TMPDIR", "/tmp"), "realk8s"
    )
    return int(Path(home, "run", "kube-apiserver.pid").read_text(encoding="utf-8").strip())


@pytest.mark.skipif(
    not os.path.exists(
        os.path.join(os.environ.get("REALK8S_HOME", "/tmp/realk8s"), "run", "kube-apiserver.pid")
    ),
    reason="needs realk8s's kube-apiserver on this machine (REALK8S_HOME) to pause it",
)
def test_a_leader_cut_off_by_a_paused_api_server_stops_acting_and_nothing_launches_twice(
    namespace: str, admin: KubeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The API server stops (SIGSTOP) for 30 s while the leader scales up: the leader warns,
    steps down at its renew deadline and exits; the standby takes over once the server is
    back; every NodeClaim on the server was created by a replica whose Lease was valid, and
    no instance was launched twice."""
    pool = namespace
    ledger = Ledger()
    default_lease: dict[str, Any] = {
        "leader_election_lease_duration": "15s",
        "leader_election_renew_deadline": "10s",
        "leader_election_retry_period": "2s",
    }
    first = Replica(KWOKProvider(ledger=ledger), "replica-a", namespace, default_lease)
    second: Replica | None = None
    pid = _api_server_pid()
    try:
        eventually(
            lambda: _holder(admin, namespace) == "replica-a", "replica-a leads", 60, live.POLL
        )
        second = Replica(KWOKProvider(ledger=ledger), "replica-b", namespace, default_lease)
        eventually(second.service.cluster.synced, "the standby's caches", 60, live.POLL)
        creates = {"replica-a": NodeClaimCreates(first), "replica-b": NodeClaimCreates(second)}
        live.apply(_manifests(pool, namespace, replicas=40))
        eventually(
            lambda: any(c.status == 201 for c in creates["replica-a"].sent),
            "replica-a creates NodeClaims",
            120,
            0.1,
        )
        with caplog.at_level(logging.INFO, logger="nodewright"):
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(30)
            finally:
                os.kill(pid, signal.SIGCONT)
            first.thread.join(60)
            assert first.outcome == [1]  # stepped down and exited, to restart as a standby
            eventually(
                lambda: _holder(admin, namespace) == "replica-b",
                "replica-b takes over",
                live.TIMEOUT,
                live.POLL,
            )
        lines = [(r.threadName, r.levelname, r.getMessage()) for r in caplog.records]
        steps = [(level, text) for thread, level, text in lines if thread == "leader-election"]
        assert any(level == "WARNING" and "Lease" in text for level, text in steps), lines
        assert any(level == "ERROR" and "stepping down" in text for level, text in steps), lines

        def settled() -> bool:
            claims = admin.list(NodeClaim, labels={POOL_LABEL: pool})
            nodes = {n.spec.provider_id for n in admin.list(Node, labels={POOL_LABEL: pool})}
            pods = admin.list(Pod, namespace)
            return (
                bool(claims)
                and all(c.status.provider_id in nodes for c in claims)
                and len(pods) == 40
                and all(p.status.phase == "Running" for p in pods)
            )

        eventually(settled, "every pod running on launched nodes", live.TIMEOUT, live.POLL)
        time.sleep(3.0)  # more passes: nothing more may launch
        claims = admin.list(NodeClaim, labels={POOL_LABEL: pool})
        sent = [create for record in creates.values() for create in record.sent]
        # every create the server answered was answered while its sender's fence was open ...
        assert [c for c in sent if c.status and c.left <= 0] == []
        # ... and every NodeClaim on the server was sent by a replica: answered, or sent while
        # its fence was open and left unanswered when the server froze. A frozen server may
        # carry out a request it had already read when it wakes, after the sender's fence
        # closed (it would for any client: nothing fences a create on the server's side);
        # what nodewright promises is that it sends nothing once its fence has closed, which
        # the check above shows, and that such a NodeClaim is launched once (the ledger).
        answered = {c.name for c in sent if c.status == 201}
        unanswered = [c for c in sent if c.status == 0]
        assert all(c.open_for > 0 for c in sent), sent
        for claim in claims:
            if claim.name not in answered:
                assert unanswered, f"NodeClaim {claim.name}: nobody sent it"
        assert len({c.status.provider_id for c in claims}) == len(claims)
        assert len(ledger.entries()) == len(claims)  # no instance launched twice
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
        if second is not None:
            second.stop()
        first.stop()
        live.kubectl(
            "delete", "--ignore-not-found", "--wait=false", f"nodepool/{pool}",
            f"kwoknodeclass/{pool}",
        )  # fmt: skip
