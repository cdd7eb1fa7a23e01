"""Watches that expire on a live control plane (``cluster`` suite): after the API server
restarts, a cache's watch resumes from a resourceVersion the server no longer has (410 Gone);
the cache lists again, says so in the log, and misses no pod.

It restarts realk8s's kube-apiserver, so it runs only when the suite names the kit
(``NODEWRIGHT_REALK8S``) and its home (``REALK8S_HOME``); ``.ci/cluster-suite`` runs it on a
control plane that compacts etcd every 10 s (``--etcd-compaction-interval=10s``).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodewright.api.core import Pod
from nodewright.cluster.kube import KubeCluster
from tests.kube import live
from tests.kube.polling import eventually

REALK8S = os.environ.get("NODEWRIGHT_REALK8S", "")
HOME = os.environ.get("REALK8S_HOME", "")

pytestmark = [
    *live.LIVE,
    pytest.mark.skipif(
        not (REALK8S and HOME), reason="needs NODEWRIGHT_REALK8S and REALK8S_HOME to restart"
    ),
]

#: A scheduler nobody runs: the pods stay Pending and nothing else touches them.
NO_SCHEDULER = "nodewright-test-nobody"


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"expiry-{live.suffix()}"
    live.kubectl("create", "namespace", name)
    yield name
    live.kubectl("delete", "namespace", name, "--ignore-not-found", "--wait=false")


def _pods(namespace: str, names: list[str]) -> None:
    live.apply(
        "".join(
            f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  schedulerName: {NO_SCHEDULER}
  containers: [{{name: c, image: pause}}]
"""
            for name in names
        )
    )


def _on_server(namespace: str) -> set[str]:
    return set(live.kubectl("get", "pods", "-n", namespace, "-o", "name").split())


def _restart_api_server() -> None:
    """Kill kube-apiserver at once (no goodbye to its watchers) and start it again."""
    pid = int(Path(HOME, "run", "kube-apiserver.pid").read_text().strip())
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    subprocess.run([str(Path(REALK8S, "up.sh"))], check=True, capture_output=True, timeout=180)


def test_a_watch_that_expired_lists_again_logs_it_and_misses_no_pod(
    namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    cluster = KubeCluster.connect(live.KUBECONFIG)
    try:
        cluster.start([Pod])
        assert cluster.wait_synced(60)
        _pods(namespace, [f"early-{i}" for i in range(10)])

        def cached() -> set[str]:
            return {f"pod/{p.name}" for p in cluster.list(Pod, namespace)}

        eventually(lambda: len(cached()) == 10, "the cache holds the first pods", 60)
        with caplog.at_level(logging.INFO, logger="nodewright.cluster.kube"):
            # etcd moves past what the pod watch has seen; the new server's watch cache
            # starts there, so the watch's resourceVersion is too old for it
            live.kubectl("create", "configmap", "moved-on", "-n", namespace)
            _restart_api_server()
            _pods(namespace, [f"late-{i}" for i in range(10)])
            live.kubectl("delete", "pod", "-n", namespace, "early-0", "early-1", "--wait=false")
            eventually(
                lambda: cluster.informer_stats(Pod)[1] >= 1, "the watch expires (410 Gone)", 120
            )
            eventually(
                lambda: cached() == _on_server(namespace), "the cache matches the server", 120
            )
        lines = [r.getMessage() for r in caplog.records]
        assert any("watch of pods expired (410 Gone" in line for line in lines), lines
        assert len(cached()) == 18
    finally:
        cluster.close()
