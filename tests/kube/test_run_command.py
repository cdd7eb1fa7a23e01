"""``nodewright run`` as a user starts it: a process, JSON logs, probes, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from nodewright.api.coordination import Lease
from nodewright.cluster.kube import KubeCluster
from tests.kube.conftest import FAST
from tests.kube.fake_apiserver import TOKEN, FakeApiServer
from tests.kube.polling import LogLines


@pytest.mark.slow
def test_run_serves_probes_and_stops_cleanly_on_sigterm(apiserver: FakeApiServer) -> None:
    env = dict(os.environ, NODEWRIGHT_PLUGINS="kwok", LOG_LEVEL="debug")
    env.pop("KUBECONFIG", None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nodewright.commands",
            "run",
            "--kubeconfig",
            str(apiserver.kubeconfig),
            "--metrics-port",
            "0",
            "--health-probe-port",
            "0",
            "--bind-address",
            "127.0.0.1",
            "--leader-election-namespace",
            "kube-system",
            "--leader-election-retry-period",
            "200ms",
        ],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    log = LogLines(process.stderr)
    user = KubeCluster.connect(str(apiserver.kubeconfig), settings=FAST)
    try:
        # the address it is bound to, not ":PORT" as if it listened everywhere
        ports = log.wait_for(
            r"/healthz and /readyz on 127\.0\.0\.1:(\d+), /metrics on 127\.0\.0\.1:(\d+)"
        )
        health, metrics = int(ports[1]), int(ports[2])
        log.wait_for("became leader")
        with urllib.request.urlopen(f"http://127.0.0.1:{health}/healthz", timeout=5) as answer:
            assert answer.status == 200
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{health}/readyz", timeout=5
                ) as answer:
                    assert answer.status == 200
                    break
            except urllib.error.HTTPError as not_ready:
                not_ready.close()
                assert time.monotonic() < deadline, "never ready"
                time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=5) as answer:
            assert "karpenter_nodeclaims_created_total" in answer.read().decode()
        lease = user.read(Lease, "karpenter-leader-election", "kube-system")
        assert lease is not None
        assert lease.spec.holder_identity

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        log.wait_for("released Lease")
        released = user.read(Lease, "karpenter-leader-election", "kube-system")
        assert released is not None
        assert released.spec.holder_identity == ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        user.close()
        seen = log.close()
    for line in seen:
        entry = json.loads(line)  # every line is a JSON object
        assert {"level", "time", "logger", "message"} <= set(entry)
    assert TOKEN not in "".join(seen)
