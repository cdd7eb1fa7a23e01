"""The simulated kubelet: Nodes for providers that leave registration to the machine.

KWOK creates its own Nodes; every other provider (the recording FakeProvider here, AWS and
Azure in their own suites) relies on the kubelet of the machine it launched.
"""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.apps import Deployment
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.api.labels import HOSTNAME_LABEL, INSTANCE_TYPE_LABEL
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_text
from nodewright.plugin import TemporaryProviderError
from nodewright.plugin.host import PluginHost
from nodewright.simulation.runner import Simulation
from nodewright.testing import FakeProvider
from nodewright.testing.manifests import deployment, node_pool

FAKE_POOL = """
apiVersion: testing.nodewright.dev/v1
kind: FakeNodeClass
metadata: {name: default}
---
""" + node_pool(
    weight=None,
    taints="[{key: example.com/dedicated, value: batch, effect: NoSchedule}]",
    node_class_ref={"group": "testing.nodewright.dev", "kind": "FakeNodeClass", "name": "default"},
)

TOLERANT = """
tolerations: [{key: example.com/dedicated, operator: Exists}]
"""


def _simulation(
    provider: FakeProvider, delay: timedelta | None = timedelta(seconds=30)
) -> Simulation:
    host = PluginHost.load(entry_points=False, plugins={"fake": provider})
    registry = KindRegistry()
    for kind in host.node_class_kinds():
        registry.register(kind.model, kind.extra_versions)
    simulation = Simulation(host, node_registration_delay=delay)
    objects = load_text(
        FAKE_POOL + deployment("web", 3, extra_spec=TOLERANT), "kubelet.yaml", registry
    )
    simulation.apply(objects)
    return simulation


def test_a_launched_instance_registers_its_node_after_the_delay_and_pods_bind() -> None:
    provider = FakeProvider()
    provider.node_name_prefix = "ip-10-0-0-"
    simulation = _simulation(provider)

    simulation.advance(timedelta(seconds=20))
    claims = simulation.cluster.list(NodeClaim)
    assert len(claims) == 1
    assert claims[0].status.provider_id
    assert simulation.cluster.list(Node) == []  # launched, still booting

    simulation.settle()
    (node,) = simulation.cluster.list(Node)
    (claim,) = simulation.cluster.list(NodeClaim)
    assert node.name == "ip-10-0-0-1"
    assert node.spec.provider_id == claim.status.provider_id
    assert node.metadata.labels[HOSTNAME_LABEL] == "ip-10-0-0-1"
    assert node.metadata.labels[INSTANCE_TYPE_LABEL] == claim.metadata.labels[INSTANCE_TYPE_LABEL]
    assert claim.status.node_name == "ip-10-0-0-1"
    taints = {(t.key, t.effect) for t in node.spec.taints}
    assert ("example.com/dedicated", "NoSchedule") in taints
    assert ("karpenter.sh/unregistered", "NoExecute") not in taints  # Karpenter registered it
    assert all(p.spec.node_name == "ip-10-0-0-1" for p in simulation.cluster.list(Pod))


def test_the_node_is_named_after_the_nodeclaim_when_the_provider_gives_no_name() -> None:
    simulation = _simulation(FakeProvider())
    simulation.settle()
    (node,) = simulation.cluster.list(Node)
    (claim,) = simulation.cluster.list(NodeClaim)
    assert node.name == claim.name


def test_annotations_the_launch_returns_are_written_on_the_nodeclaim() -> None:
    provider = FakeProvider()
    provider.launch_annotations = {"testing.nodewright.dev/nodeclass-hash": "1234"}
    simulation = _simulation(provider)
    simulation.settle()
    (claim,) = simulation.cluster.list(NodeClaim)
    assert claim.metadata.annotations["testing.nodewright.dev/nodeclass-hash"] == "1234"


def test_no_node_registers_for_an_instance_the_provider_no_longer_has() -> None:
    provider = FakeProvider()
    simulation = _simulation(provider)
    simulation.advance(timedelta(seconds=10))
    (claim,) = simulation.cluster.list(NodeClaim)
    assert claim.status.provider_id
    del provider.instances[claim.status.provider_id]  # terminated behind nodewright's back

    simulation.advance(timedelta(seconds=40))
    assert all(
        n.spec.provider_id != claim.status.provider_id for n in simulation.cluster.list(Node)
    )


def test_without_simulated_kubelets_nothing_registers() -> None:
    simulation = _simulation(FakeProvider(), delay=None)
    simulation.advance(timedelta(minutes=5))
    assert simulation.cluster.list(Node) == []
    assert len(simulation.cluster.list(NodeClaim)) == 1


def test_scale_to_zero_removes_the_node_and_deletes_the_instance() -> None:
    provider = FakeProvider()
    simulation = _simulation(provider)
    simulation.settle()
    assert len(simulation.cluster.list(Node)) == 1

    simulation.cluster.delete(Deployment, "web", "default")
    simulation.settle()
    assert simulation.cluster.list(Node) == []
    assert simulation.cluster.list(NodeClaim) == []
    assert provider.instances == {}
    assert len(provider.delete_calls) >= 1


def test_a_provider_that_fails_to_answer_delays_registration_without_crashing() -> None:
    provider = FakeProvider()
    simulation = _simulation(provider)
    simulation.advance(timedelta(seconds=29))
    assert simulation.cluster.list(Node) == []
    provider.next_error("get", TemporaryProviderError("throttled"))
    provider.next_error("get", RuntimeError("provider bug"))
    simulation.settle()
    (node,) = simulation.cluster.list(Node)
    (claim,) = simulation.cluster.list(NodeClaim)
    assert node.spec.provider_id == claim.status.provider_id
    assert len(provider.get_calls) >= 3
