from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from nodewright.plugin import (
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    SIMULATED_CONDITIONS_ANNOTATION,
    ZONE_LABEL,
    Condition,
    Instance,
    InstanceNotFoundError,
    Node,
    NodeClaim,
    NodeClassNotReadyError,
    NodeSpec,
    ObjectMeta,
    Pod,
    PodSpec,
)
from nodewright.testing import MemoryCluster, SimulatedClock, launched_instance
from nodewright_kwok.provider import KWOKProvider
from providers.kwok.tests.kwok_helpers import launch_request, node_class

# -- choosing what to buy ----------------------------------------------------------------------


def test_launch_buys_the_cheapest_offering_spot_when_allowed(provider: KWOKProvider) -> None:
    instance = launched_instance(provider.launch(launch_request(provider)))
    assert (instance.instance_type, instance.zone, instance.capacity_type) == (
        "c-1x-amd64-linux",
        "test-zone-a",
        "spot",
    )
    assert instance.price == pytest.approx(0.7 * 0.027147483648)


def test_launch_honours_capacity_type_and_zone_requirements(provider: KWOKProvider) -> None:
    request = launch_request(
        provider,
        "default-xyz",
        (CAPACITY_TYPE_LABEL, "In", ["on-demand"]),
        (ZONE_LABEL, "In", ["test-zone-c", "test-zone-d"]),
        ("kubernetes.io/arch", "In", ["arm64"]),
    )
    instance = launched_instance(provider.launch(request))
    assert (instance.instance_type, instance.zone, instance.capacity_type) == (
        "c-1x-arm64-linux",
        "test-zone-c",
        "on-demand",
    )
    assert instance.labels[CAPACITY_TYPE_LABEL] == "on-demand"
    assert instance.labels[ZONE_LABEL] == "test-zone-c"
    assert instance.labels["kubernetes.io/arch"] == "arm64"


def test_launch_picks_the_cheapest_of_the_requested_types(provider: KWOKProvider) -> None:
    request = launch_request(
        provider,
        "default-xyz",
        (INSTANCE_TYPE_LABEL, "In", ["c-8x-amd64-linux", "s-4x-arm64-linux", "m-4x-amd64-linux"]),
    )
    instance = launched_instance(provider.launch(request))
    assert instance.instance_type == "s-4x-arm64-linux"
    assert instance.labels["karpenter.kwok.sh/instance-family"] == "s"
    assert instance.labels["karpenter.kwok.sh/instance-cpu"] == "4"


def test_launch_records_the_instance_with_its_shape(provider: KWOKProvider) -> None:
    instance = launched_instance(
        provider.launch(
            launch_request(provider, "pool-a-1", (INSTANCE_TYPE_LABEL, "In", ["m-2x-amd64-linux"]))
        )
    )
    assert instance.provider_id == "kwok://pool-a-1"
    assert instance.node_claim == "pool-a-1"
    assert instance.node_pool == "default"
    assert instance.node_class == "default"
    assert instance.state == "pending"
    assert instance.capacity["memory"] == 16 * 2**30 * 1000
    assert instance.allocatable["cpu"] == 1900
    assert provider.ledger.instances() == [instance]


def test_launch_is_idempotent_per_node_claim(provider: KWOKProvider) -> None:
    request = launch_request(provider, "default-abc")
    first = launched_instance(provider.launch(request))
    again = launched_instance(provider.launch(request))
    assert again == first
    assert len(provider.ledger.instances()) == 1
    other = launched_instance(provider.launch(launch_request(provider, "default-def")))
    assert other.provider_id != first.provider_id
    assert len(provider.ledger.instances()) == 2


def test_launch_refuses_a_node_class_that_is_not_ready(
    provider: KWOKProvider, clock: SimulatedClock
) -> None:
    nodeclass = node_class()
    nodeclass.status.conditions.append(
        Condition(type="Ready", status="False", reason="Broken", message="no")
    )
    with pytest.raises(NodeClassNotReadyError):
        provider.launch(launch_request(provider, nodeclass=nodeclass))
    assert provider.ledger.instances() == []


# -- registration ------------------------------------------------------------------------------


def _node(cluster: MemoryCluster, name: str) -> Node | None:
    return cluster.get(Node, name)


def test_the_node_registers_after_the_delay_looking_like_a_kwok_node(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = make_provider(registration_delay="5s")
    request = launch_request(
        provider, "default-abc", (INSTANCE_TYPE_LABEL, "In", ["s-2x-amd64-linux"])
    )
    request.node_claim.metadata.labels["team"] = "blue"
    instance = launched_instance(provider.launch(request))

    assert provider.reconcile(clock.now()) == timedelta(seconds=5)
    assert _node(cluster, "default-abc") is None
    clock.advance(timedelta(seconds=4))
    provider.reconcile(clock.now())
    assert _node(cluster, "default-abc") is None

    clock.advance(timedelta(seconds=1))
    provider.reconcile(clock.now())
    node = _node(cluster, "default-abc")
    assert node is not None
    assert node.spec.provider_id == "kwok://default-abc"
    assert [(t.key, t.effect) for t in node.spec.taints] == [
        ("karpenter.sh/unregistered", "NoExecute")
    ]
    assert node.metadata.annotations["kwok.x-k8s.io/node"] == "fake"
    labels = node.metadata.labels
    assert labels[INSTANCE_TYPE_LABEL] == "s-2x-amd64-linux"
    assert labels[ZONE_LABEL] == instance.zone
    assert labels[CAPACITY_TYPE_LABEL] == "spot"
    assert labels["kubernetes.io/arch"] == "amd64"
    assert labels["kubernetes.io/os"] == "linux"
    assert labels[HOSTNAME_LABEL] == "default-abc"
    assert labels["kwok.x-k8s.io/node"] == "fake"
    assert labels[NODEPOOL_LABEL] == "default"
    assert labels["karpenter.kwok.sh/kwoknodeclass"] == "default"
    assert labels["karpenter.kwok.sh/instance-memory"] == "8Gi"
    assert labels["team"] == "blue"
    assert node.status.capacity == {
        "cpu": "2",
        "memory": "8Gi",
        "pods": "32",
        "ephemeral-storage": "20Gi",
    }
    assert node.status.allocatable["cpu"] == "1900m"
    assert node.ready
    assert provider.get("kwok://default-abc").state == "running"


def test_the_node_class_delay_applies_unless_the_option_overrides_it(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = make_provider()
    provider.launch(launch_request(provider, "slow", nodeclass=node_class(delay="1m")))
    # the emulated kubelets want to run every 10s anyway
    assert provider.reconcile(clock.now()) == timedelta(seconds=10)
    clock.advance(timedelta(seconds=59))
    provider.reconcile(clock.now())
    assert _node(cluster, "slow") is None
    clock.advance(timedelta(seconds=1))
    provider.reconcile(clock.now())
    assert _node(cluster, "slow") is not None

    overridden = make_provider(registration_delay="0s")
    overridden.launch(launch_request(overridden, "fast", nodeclass=node_class(delay="1m")))
    overridden.reconcile(clock.now())
    assert _node(cluster, "fast") is not None


def test_reconcile_asks_for_the_default_period_when_nothing_is_pending(
    provider: KWOKProvider, clock: SimulatedClock
) -> None:
    assert provider.reconcile(clock.now()) == timedelta(seconds=10)


def test_registration_adopts_a_node_already_there_and_skips_a_foreign_one(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    cluster.create(Node(metadata=ObjectMeta(name="taken")))
    provider.launch(launch_request(provider, "taken"))
    # retried later, without spinning
    assert provider.reconcile(clock.now()) == timedelta(seconds=5)
    assert provider.get("kwok://taken").state == "pending"
    node = _node(cluster, "taken")
    assert node is not None
    assert node.spec.provider_id is None

    cluster.create(Node(metadata=ObjectMeta(name="mine"), spec=NodeSpec(provider_id="kwok://mine")))
    provider.launch(launch_request(provider, "mine"))
    provider.reconcile(clock.now())
    assert provider.get("kwok://mine").state == "running"


# -- kubelet emulation -------------------------------------------------------------------------


def _registered(provider: KWOKProvider, clock: SimulatedClock, name: str = "n1") -> Instance:
    instance = launched_instance(provider.launch(launch_request(provider, name)))
    provider.reconcile(clock.now())
    return instance


def test_pods_bound_to_its_nodes_start_running(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    _registered(provider, clock)
    cluster.create(Pod(metadata=ObjectMeta(name="web"), spec=PodSpec(node_name="n1")))
    cluster.create(Pod(metadata=ObjectMeta(name="elsewhere"), spec=PodSpec(node_name="other")))
    cluster.create(Pod(metadata=ObjectMeta(name="pending")))
    provider.reconcile(clock.now())

    web = cluster.get(Pod, "web", "default")
    assert web is not None
    assert web.status.phase == "Running"
    ready = web.condition("Ready")
    assert ready is not None
    assert ready.status == "True"
    for untouched in ("elsewhere", "pending"):
        pod = cluster.get(Pod, untouched, "default")
        assert pod is not None
        assert pod.status.phase == "Pending"

    version = cluster.resource_version()
    provider.reconcile(clock.now())
    assert cluster.resource_version() == version  # nothing changed, nothing written


def test_its_nodes_are_kept_ready(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    _registered(provider, clock)
    stored = _node(cluster, "n1")
    assert stored is not None
    node = stored.clone()
    node.status.conditions[0].status = "Unknown"
    cluster.update_status(node)
    provider.reconcile(clock.now())
    kept = _node(cluster, "n1")
    assert kept is not None
    assert kept.ready


def test_a_ready_condition_a_simulation_set_is_kept(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    _registered(provider, clock)
    stored = _node(cluster, "n1")
    assert stored is not None
    node = stored.clone()
    node.metadata.annotations[SIMULATED_CONDITIONS_ANNOTATION] = "Ready"
    node = cluster.update(node).status_copy()
    node.status.conditions[0].status = "False"
    cluster.update_status(node)
    clock.advance(timedelta(minutes=10))
    provider.reconcile(clock.now())
    kept = _node(cluster, "n1")
    assert kept is not None
    assert not kept.ready, "a broken machine's kubelet keeps reporting it"
    assert kept.status.phase == "Running"


def test_without_manage_nodes_nodes_wait_for_a_kwok_controller(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = make_provider(manage_nodes="false")
    _registered(provider, clock)
    cluster.create(Pod(metadata=ObjectMeta(name="web"), spec=PodSpec(node_name="n1")))
    provider.reconcile(clock.now())
    node = _node(cluster, "n1")
    assert node is not None
    assert not node.ready
    assert node.status.phase == "Pending"
    pod = cluster.get(Pod, "web", "default")
    assert pod is not None
    assert pod.status.phase == "Pending"


# -- get, list, delete, labels, drift ----------------------------------------------------------


def test_get_and_list_read_the_ledger(provider: KWOKProvider, clock: SimulatedClock) -> None:
    first = launched_instance(provider.launch(launch_request(provider, "a")))
    second = _registered(provider, clock, "b")
    assert provider.get("kwok://a").provider_id == first.provider_id
    assert provider.get("kwok://a").state == "running"
    assert [i.provider_id for i in provider.list_instances()] == [
        first.provider_id,
        second.provider_id,
    ]
    with pytest.raises(InstanceNotFoundError):
        provider.get("kwok://nothing")


def test_delete_removes_the_node_and_terminates_the_instance(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    _registered(provider, clock, "doomed")
    assert _node(cluster, "doomed") is not None

    provider.delete("kwok://doomed")
    assert _node(cluster, "doomed") is None
    with pytest.raises(InstanceNotFoundError):
        provider.get("kwok://doomed")
    with pytest.raises(InstanceNotFoundError):
        provider.delete("kwok://doomed")
    assert provider.list_instances() == []
    (terminated,) = provider.ledger.instances(include_terminated=True)
    assert terminated.state == "terminated"


def test_deleting_a_pending_instance_means_its_node_never_appears(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = make_provider(registration_delay="30s")
    provider.launch(launch_request(provider, "early"))
    provider.delete("kwok://early")
    clock.advance(timedelta(minutes=1))
    provider.reconcile(clock.now())
    assert _node(cluster, "early") is None


def test_delete_leaves_a_foreign_node_of_the_same_name_alone(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    _registered(provider, clock, "shared")
    cluster.delete(Node, "shared")
    cluster.create(Node(metadata=ObjectMeta(name="shared")))
    provider.delete("kwok://shared")
    assert _node(cluster, "shared") is not None


def test_a_node_deleted_behind_the_clouds_back_leaves_the_instance_running(
    provider: KWOKProvider, cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    _registered(provider, clock, "leaky")
    cluster.delete(Node, "leaky")
    provider.reconcile(clock.now())
    assert [i.provider_id for i in provider.list_instances()] == ["kwok://leaky"]
    assert _node(cluster, "leaky") is None


def test_node_labels_are_given_only_for_its_own_instances(
    provider: KWOKProvider, clock: SimulatedClock
) -> None:
    instance = _registered(provider, clock, "mine")
    claim = NodeClaim(metadata=ObjectMeta(name="mine"))
    assert provider.node_labels(claim, instance) == {
        "karpenter.kwok.sh/instance-size": "1",
        "karpenter.kwok.sh/instance-family": "c",
        "karpenter.kwok.sh/instance-cpu": "1",
        "karpenter.kwok.sh/instance-memory": "2Gi",
    }
    foreign = Instance(
        provider_id="aws:///us-east-1a/i-123",
        node_claim="x",
        node_pool="p",
        node_class="c",
        instance_type="m5.large",
        zone="us-east-1a",
        capacity_type="spot",
        price=0.1,
        created_at=clock.now(),
    )
    assert provider.node_labels(claim, foreign) is None
    assert provider.is_drifted(claim, node_class()) is None


def test_node_class_is_always_ready(provider: KWOKProvider) -> None:
    assert provider.node_class_status(node_class()).ready
