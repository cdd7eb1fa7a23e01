"""The fence: a replica that may not act sends no write to the API server and makes no
provider call, and a write in flight never outlives the fence."""

from __future__ import annotations

import time

import pytest

from nodewright.api.core import Node
from nodewright.api.meta import ObjectMeta
from nodewright.cluster.fence import Fence, NotLeaderError
from nodewright.cluster.kube import KubeCluster, ServerUnavailableError
from nodewright.testing import FakeProvider, fake_node_class, launch_request, make_node_claim
from tests.kube.fake_apiserver import FakeApiServer, Fault
from tests.kube.polling import eventually
from tests.plugin.hook_hosts import fake_host


def test_a_closed_fence_refuses_writes_without_sending_them_and_reads_go_on(
    apiserver: FakeApiServer, kube: KubeCluster
) -> None:
    kube.create(Node(metadata=ObjectMeta(name="n1")))
    kube.fence = Fence(open_=False)
    before = len(apiserver.requests)
    with pytest.raises(NotLeaderError, match="not leading"):
        kube.create(Node(metadata=ObjectMeta(name="n2")))
    with pytest.raises(NotLeaderError):
        kube.delete(Node, "n1")
    assert [r for r in apiserver.requests[before:] if r[0] != "GET"] == []
    assert kube.read(Node, "n1") is not None  # reading is always allowed
    assert [n.name for n in kube.list(Node)] == ["n1"]


def test_a_write_waits_for_its_answer_no_longer_than_the_fence_stays_open(
    apiserver: FakeApiServer, kube: KubeCluster
) -> None:
    apiserver.faults.append(Fault("POST", "/nodes", delay=1.5))
    fence = Fence()
    fence.open_until(time.monotonic() + 0.3)
    kube.fence = fence
    # without the fence the answer would come after 1.5 s, within the 2 s request timeout
    with pytest.raises(ServerUnavailableError, match="timed out"):
        kube.create(Node(metadata=ObjectMeta(name="late")))
    # and the server, which read the request at once but got to it only after the fence's
    # time, gave it up (the request carried the fence's time as its timeout)
    eventually(lambda: apiserver.count("POST", "/nodes") == 1, "the server's answer", 5)
    assert next(r for r in apiserver.requests if r[0] == "POST")[2] == 504
    assert apiserver.stored("nodes", "late") is None


def test_a_closed_fence_stops_provider_calls() -> None:
    provider = FakeProvider()
    host = fake_host(provider)
    node_class = fake_node_class()
    request = launch_request(host, make_node_claim("claim-1", node_class), node_class)
    host.fence = Fence(open_=False)
    with pytest.raises(NotLeaderError, match="nodewright_launch of provider fake"):
        host.launch(request)
    with pytest.raises(NotLeaderError):
        host.list_instances("fake")
    assert provider.launch_calls == []
    host.fence = Fence()
    assert host.launch(request).provider_id
