"""The NodeClaim lifecycle against the recording fake provider: launch and registration
timeouts, initialization's conditions, and the consistency check. The fake provider creates
no Nodes, so each test plays the kubelet itself."""

from __future__ import annotations

from datetime import timedelta

from nodewright.api.core import Event, Node, NodeCondition, NodeSpec, NodeStatus, Taint
from nodewright.api.karpenter import NodeClaim, NodeClaimResources
from nodewright.api.meta import ObjectMeta, find_condition
from nodewright.cluster.objects import mutable
from nodewright.plugin import TemporaryProviderError
from nodewright.plugin.host import PluginHost
from nodewright.testing import FakeProvider, fake_node_class, make_node_claim
from tests.harness import OperatorHarness


class FakeWorld(OperatorHarness):
    """The operator harness with the recording fake provider; the test plays the kubelet."""

    def __init__(self) -> None:
        self.fake = FakeProvider()
        host = PluginHost.load(entry_points=False, plugins={"fake": self.fake})
        # The tests play the kubelet (register below), so no simulated kubelets.
        super().__init__(host, node_registration_delay=None)
        self.node_class = self.cluster.create(fake_node_class())

    def claim(self, name: str = "claim-1", **requests: str) -> NodeClaim:
        claim = make_node_claim(name, self.node_class)
        claim.spec.resources = NodeClaimResources(requests=requests)
        return self.cluster.create(claim)

    def register(self, claim: NodeClaim, *, ready: bool = True, **capacity: str) -> Node:
        """Create the claim's Node as a kubelet would."""
        current = self.cluster.get(NodeClaim, claim.name)
        assert current is not None
        assert current.status.provider_id
        shape = capacity or dict(current.status.capacity)
        return self.cluster.create(
            Node(
                metadata=ObjectMeta(name=f"node-{claim.name}"),
                spec=NodeSpec(
                    provider_id=current.status.provider_id,
                    taints=[
                        Taint(key="karpenter.sh/unregistered", effect="NoExecute"),
                        *current.spec.startup_taints,
                    ],
                ),
                status=NodeStatus(
                    capacity=shape,
                    allocatable=shape,
                    conditions=[NodeCondition(type="Ready", status="True" if ready else "False")],
                ),
            )
        )

    def condition(self, claim: NodeClaim, kind: str) -> tuple[str, str] | None:
        current = self.cluster.get(NodeClaim, claim.name)
        assert current is not None
        found = find_condition(current.status.conditions, kind)
        return None if found is None else (found.status, found.reason or "")


def test_a_nodeclaim_that_cannot_launch_is_deleted_after_five_minutes() -> None:
    world = FakeWorld()
    world.fake.allowed_launches = 0
    claim = world.claim()
    world.sim.advance(timedelta(minutes=4, seconds=59))
    assert world.condition(claim, "Launched") == ("Unknown", "AllowedLaunchesExceeded")
    world.sim.advance(timedelta(seconds=2))
    assert world.cluster.get(NodeClaim, claim.name) is None


def test_a_nodeclaim_whose_node_never_registers_is_deleted_after_fifteen_minutes() -> None:
    world = FakeWorld()
    claim = world.claim()
    world.sim.advance(timedelta(minutes=14, seconds=59))
    assert world.condition(claim, "Registered") == ("Unknown", "NodeNotFound")
    assert len(world.fake.instances) == 1
    world.sim.advance(timedelta(seconds=2))
    assert world.cluster.get(NodeClaim, claim.name) is None
    assert world.fake.instances == {}, "its instance is deleted with it"


def test_a_registered_nodeclaim_is_never_timed_out() -> None:
    world = FakeWorld()
    claim = world.claim()
    world.sim.advance(timedelta(seconds=1))
    world.register(claim)
    world.sim.advance(timedelta(minutes=20))
    assert world.condition(claim, "Initialized") == ("True", "Initialized")


def test_registration_waits_for_a_label_the_provider_does_not_know_yet() -> None:
    # Karpenter's registration hooks (AWS's placement group partition): while the provider
    # cannot say a label yet, the Node keeps its unregistered taint; then the label lands on
    # the Node and fills the NodeClaim's empty placeholder.
    world = FakeWorld()
    rack = "testing.nodewright.dev/rack"
    claim = make_node_claim("claim-1", world.node_class)
    claim.metadata.labels[rack] = ""
    claim = world.cluster.create(claim)
    for _ in range(2):
        world.fake.next_error("node_labels", TemporaryProviderError("rack not reported yet"))
    world.fake.extra_node_labels = {rack: "r1"}
    world.sim.advance(timedelta(seconds=1))
    node = world.register(claim)
    world.sim.advance(timedelta(seconds=1))
    assert world.condition(claim, "Registered") == ("Unknown", "RegistrationHookPending")
    current = world.cluster.get(NodeClaim, claim.name)
    assert current is not None
    found = find_condition(current.status.conditions, "Registered")
    assert found is not None
    assert found.message == "plugin 'fake': rack not reported yet"
    waiting = world.cluster.get(Node, node.name)
    assert waiting is not None
    assert [t.key for t in waiting.spec.taints] == ["karpenter.sh/unregistered"]
    world.sim.advance(timedelta(seconds=10))
    assert world.condition(claim, "Registered") == ("True", "Registered")
    registered = world.cluster.get(Node, node.name)
    assert registered is not None
    assert registered.spec.taints == []
    assert registered.metadata.labels[rack] == "r1"
    current = world.cluster.get(NodeClaim, claim.name)
    assert current is not None
    assert current.metadata.labels[rack] == "r1"
    assert len(world.fake.calls_to("node_labels")) == 3


def test_initialization_waits_for_readiness_startup_taints_and_extended_resources() -> None:
    world = FakeWorld()
    claim = world.claim(**{"example.com/gpu": "1"})
    world.sim.advance(timedelta(seconds=1))
    node = world.register(claim, ready=False)
    world.sim.advance(timedelta(seconds=1))
    assert world.condition(claim, "Initialized") == ("Unknown", "NodeNotReady")

    found = world.cluster.get(Node, node.name)
    assert found is not None
    node = mutable(found)
    node.spec.taints.append(
        Taint(key="node.cloudprovider.kubernetes.io/uninitialized", effect="NoSchedule")
    )
    node = mutable(world.cluster.update(node))
    node.status.conditions = [NodeCondition(type="Ready", status="True")]
    node = mutable(world.cluster.update_status(node))
    world.sim.advance(timedelta(seconds=1))
    assert world.condition(claim, "Initialized") == ("Unknown", "KnownEphemeralTaintsExist")

    node.spec.taints = [t for t in node.spec.taints if not t.key.startswith("node.cloudprovider")]
    node = mutable(world.cluster.update(node))
    world.sim.advance(timedelta(seconds=1))
    assert world.condition(claim, "Initialized") == ("Unknown", "ResourceNotRegistered")

    node.status.allocatable["example.com/gpu"] = "1"
    world.cluster.update_status(node)
    world.sim.advance(timedelta(seconds=1))
    assert world.condition(claim, "Initialized") == ("True", "Initialized")
    initialized = world.cluster.get(Node, node.name)
    assert initialized is not None
    assert initialized.metadata.labels["karpenter.sh/initialized"] == "true"


def test_a_node_with_much_less_capacity_than_launched_fails_the_consistency_check() -> None:
    world = FakeWorld()
    claim = world.claim(cpu="1", memory="1Gi")
    world.sim.advance(timedelta(seconds=1))
    launched = world.cluster.get(NodeClaim, claim.name)
    assert launched is not None
    expected_memory = launched.status.capacity["memory"]
    world.register(claim, cpu=launched.status.capacity["cpu"], memory="1Gi", pods="10")
    world.sim.advance(timedelta(seconds=5))
    assert world.condition(claim, "ConsistentStateFound") == ("False", "ConsistencyCheckFailed")
    messages = [
        e.message for e in world.cluster.list(Event) if e.reason == "FailedConsistencyCheck"
    ]
    assert messages == [
        f"expected {expected_memory} of resource memory, but found 1Gi "
        f"({100 / (int(expected_memory.removesuffix('Gi'))):0.1f}% of expected)"
    ]


def test_a_node_as_launched_passes_the_consistency_check() -> None:
    world = FakeWorld()
    claim = world.claim(cpu="1")
    world.sim.advance(timedelta(seconds=1))
    world.register(claim)
    world.sim.advance(timedelta(seconds=5))
    assert world.condition(claim, "ConsistentStateFound") == ("True", "ConsistentStateFound")
