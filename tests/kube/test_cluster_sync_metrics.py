"""``karpenter_cluster_state_synced`` and ``karpenter_cluster_state_unsynced_time_seconds`` at
``nodewright run``'s /metrics: while a cache has not listed (here the API server is slow to
answer the first LIST of Nodes) the state is not synced and the time grows; once every cache
has listed and passes run, the state is synced and the time is back to zero."""

from __future__ import annotations

import threading
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from nodewright.cluster.kube import KubeCluster
from nodewright.plugin.host import PluginHost
from nodewright.service.runner import UNCACHED_KINDS, RunService
from nodewright.settings.run import RunSettings
from nodewright_kwok.plugin import KWOKPlugin
from nodewright_kwok.provider import KWOKProvider
from tests.kube.conftest import FAST
from tests.kube.fake_apiserver import FakeApiServer, Fault
from tests.kube.polling import eventually

#: How long the API server holds each of the first two LISTs of Nodes: longer than the
#: client waits (2 s), so the Node cache lists on the third try, some 4 s in.
SLOW_LIST = 4.0


def read(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("karpenter_cluster_state_")
    }


def test_the_cluster_state_is_unsynced_until_every_cache_has_listed(
    apiserver: FakeApiServer,
) -> None:
    apiserver.inject(Fault("GET", "/api/v1/nodes", delay=SLOW_LIST, times=2))
    settings = RunSettings(
        kubeconfig=str(apiserver.kubeconfig),
        disable_leader_election=True,
        metrics_port=0,
        health_probe_port=0,
        bind_address="127.0.0.1",
    )
    cluster = KubeCluster(
        KubeCluster.connect(str(apiserver.kubeconfig))._client, FAST, uncached=UNCACHED_KINDS
    )
    host = PluginHost.load(entry_points=False, plugins={"kwok": KWOKPlugin(KWOKProvider())})
    service = RunService(settings, cluster, host, identity="sync")
    service.start_endpoints()
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    try:
        eventually(
            lambda: (
                read(service.metrics_port).get("karpenter_cluster_state_unsynced_time_seconds", 0)
                >= 1.0
            ),
            "the unsynced time grows while the Node cache waits for its LIST",
            10.0,
        )
        assert read(service.metrics_port)["karpenter_cluster_state_synced"] == 0
        eventually(lambda: service.passes > 0, "a first pass", 20.0)
        synced = read(service.metrics_port)
        assert synced["karpenter_cluster_state_synced"] == 1
        assert synced["karpenter_cluster_state_unsynced_time_seconds"] == 0
    finally:
        service.request_stop()
        thread.join(10)
