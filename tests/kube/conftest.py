"""Fixtures: a loopback fake API server and a KubeCluster pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodewright.cluster.kube import ClientSettings, KubeCluster
from tests.kube.fake_apiserver import FakeApiServer

#: Short timeouts and backoffs so failure paths finish quickly.
FAST = ClientSettings(
    qps=1000,
    burst=1000,
    connect_timeout=2.0,
    request_timeout=2.0,
    max_attempts=4,
    backoff_base=0.01,
    backoff_max=0.2,
    watch_timeout=5.0,
    resync_period=60.0,
    sync_timeout=5.0,
)


@pytest.fixture
def apiserver(tmp_path: Path) -> Iterator[FakeApiServer]:
    server = FakeApiServer(tmp_path).start()
    yield server
    server.stop()


@pytest.fixture
def kube(apiserver: FakeApiServer) -> Iterator[KubeCluster]:
    cluster = KubeCluster.connect(str(apiserver.kubeconfig), settings=FAST)
    yield cluster
    cluster.close()
