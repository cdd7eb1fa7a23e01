"""Karpenter's scheduling scenarios (reference §10, 1-16).

Each test builds the pods Karpenter's test builds, as API objects, parses them with
``pod_request`` and runs one provisioning decision (``solve``) against Karpenter's fake
catalog (``karpenter_fakes``). What is asserted is what a Karpenter user sees: how many
NodeClaims, the instance type the fake provider would launch (the cheapest option), the zone
pods land in, which pods stay pending and why.

Scenarios that need solver features not built yet are written in full and marked
``xfail(strict=True, raises=AssertionError)``: they fail on their outcome today, and turn into
XPASS failures the moment the feature lands, so the marker must then be removed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from nodewright.api import core as api
from nodewright.api.apps import (
    CSINode,
    CSINodeDriver,
    CSINodeDriverAllocatable,
    CSINodeSpec,
    StorageClass,
    TopologySelectorLabelRequirement,
    TopologySelectorTerm,
)
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import ObjectMeta
from nodewright.scheduling.model import (
    PlacedPod,
)
from nodewright.scheduling.pods import pod_requests
from nodewright.scheduling.resources import resources
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.volumes import node_volume_limits, pod_volumes
from nodewright.testing import manifests
from tests.conftest import Simulate
from tests.scheduling.karpenter_fakes import (
    AMD64,
    SUITE_POOL,
    claim_of,
    container,
    error_of,
    in_flight,
    launched_type,
    make_pod,
    node_label,
    node_pool,
    pods_per_zone,
    provision,
    requests_for,
    scheduled,
    selector,
    zonal_spread,
    zone_of,
)

# == Reference §10, scenarios 1-16 ===========================================================


def test_01_small_pod_goes_on_the_smallest_instance() -> None:
    result = provision([make_pod(memory="100M")])
    (claim,) = result.new_node_claims
    assert launched_type(claim) == "small-instance-type"


def test_02_small_and_large_pods_pack_together() -> None:
    large = [make_pod(memory="1.8G", node_selector=AMD64) for _ in range(40)]
    small = [make_pod(memory="400M", node_selector=AMD64) for _ in range(20)]
    result = provision(large + small)
    assert not result.errors
    assert len(result.new_node_claims) == 20
    assert {launched_type(c) for c in result.new_node_claims} == {"default-instance-type"}
    assert all(len(c.pods) == 3 for c in result.new_node_claims)


def test_03_pod_slots_force_new_nodes() -> None:
    pods = [make_pod("1m", "1m", node_selector=AMD64) for _ in range(25)]
    result = provision(pods)
    assert len(result.new_node_claims) == 5
    assert {launched_type(c) for c in result.new_node_claims} == {"small-instance-type"}
    assert [len(c.pods) for c in result.new_node_claims] == [5] * 5


def test_04_init_container_requests_count_when_binpacking() -> None:
    pod = make_pod("1", "1Gi", init_containers=[container("2", "1Gi")])
    result = provision([pod])
    assert launched_type(claim_of(result, pod)) == "default-instance-type"


def test_05_ored_required_terms_relax_until_one_works() -> None:
    pod = make_pod(
        required=[
            [(ZONE_LABEL, "In", ["invalid"])],
            [(ZONE_LABEL, "In", ["invalid"])],
            [(ZONE_LABEL, "In", ["test-zone-1"])],
            [(ZONE_LABEL, "In", ["test-zone-2"])],  # never reached
        ]
    )
    result = provision([pod])
    assert zone_of(claim_of(result, pod)) == "test-zone-1"


def test_05_the_final_required_term_is_never_relaxed() -> None:
    pool = node_pool(
        requirements=[
            (ZONE_LABEL, "In", ["test-zone-1"]),
            (INSTANCE_TYPE_LABEL, "In", ["default-instance-type"]),
        ]
    )
    pod = make_pod(required=[[(ZONE_LABEL, "In", ["invalid"])]])
    result = provision([pod], [pool])
    assert not result.new_node_claims
    assert error_of(result, pod) == (
        'incompatible with nodepool "default", incompatible requirements, '
        f"key {ZONE_LABEL}, {ZONE_LABEL} In [invalid] not in {ZONE_LABEL} In [test-zone-1]"
    )


def test_06_preferences_relax_to_lighter_weights() -> None:
    pool = node_pool(requirements=[(ZONE_LABEL, "In", ["test-zone-1", "test-zone-2"])])
    pod = make_pod(
        preferred=[
            (100, [(INSTANCE_TYPE_LABEL, "In", ["test-zone-3"])]),  # no such type
            (50, [(ZONE_LABEL, "In", ["test-zone-2"])]),
            (1, [(ZONE_LABEL, "In", ["test-zone-1"])]),  # never reached
        ]
    )
    result = provision([pod], [pool])
    assert zone_of(claim_of(result, pod)) == "test-zone-2"


def test_07_an_in_flight_node_takes_the_next_pod() -> None:
    first, second = make_pod(limits={"cpu": "10m"}), make_pod(limits={"cpu": "10m"})
    pool = node_pool(requirements=SUITE_POOL)
    (claim,) = provision([first], [pool]).new_node_claims
    node = in_flight(claim, "nodeclaim-1")
    result = provision([second], [pool], existing=[node])
    assert not result.new_node_claims
    assert [p.name for p in result.existing_nodes["nodeclaim-1"]] == [second.name]


def test_07_an_in_flight_node_takes_a_pod_whose_selector_it_meets() -> None:
    first = make_pod(limits={"cpu": "10m"}, required=[[(ZONE_LABEL, "In", ["test-zone-2"])]])
    second = make_pod(
        limits={"cpu": "10m"}, required=[[(ZONE_LABEL, "In", ["test-zone-1", "test-zone-2"])]]
    )
    pool = node_pool(requirements=SUITE_POOL)
    (claim,) = provision([first], [pool]).new_node_claims
    node = in_flight(claim, "nodeclaim-1")
    assert node.labels[ZONE_LABEL] == "test-zone-2"
    result = provision([second], [pool], existing=[node])
    assert not result.new_node_claims
    assert [p.name for p in result.existing_nodes["nodeclaim-1"]] == [second.name]


def test_08_pods_with_the_same_host_port_get_different_nodes() -> None:
    pods = [make_pod(host_ports=[8080]), make_pod(host_ports=[8080])]
    result = provision(pods)
    assert claim_of(result, pods[0]) is not claim_of(result, pods[1])
    assert len(result.new_node_claims) == 2


SPREAD_LABELS = {"test": "test"}


def test_09_zonal_spread_balances_pods() -> None:
    spread = [zonal_spread(SPREAD_LABELS)]
    pods = [make_pod(labels=SPREAD_LABELS, spread=spread) for _ in range(4)]
    pool = node_pool(requirements=[(CAPACITY_TYPE_LABEL, "Exists", [])])
    result = provision(pods, [pool])
    assert result.scheduled_count() == 4
    assert pods_per_zone(result) == [1, 1, 2]


def test_10_spread_never_exceeds_max_skew_when_unsatisfiable() -> None:
    spread = [zonal_spread(SPREAD_LABELS)]

    def spread_pod() -> api.Pod:
        return make_pod("1.1", labels=SPREAD_LABELS, spread=spread)

    first = spread_pod()
    zone_1 = node_pool(requirements=[(ZONE_LABEL, "In", ["test-zone-1"])])
    (claim,) = provision([first], [zone_1]).new_node_claims
    node = in_flight(claim, "nodeclaim-1")
    assert node.labels[ZONE_LABEL] == "test-zone-1"

    zones_2_3 = node_pool(requirements=[(ZONE_LABEL, "In", ["test-zone-2", "test-zone-3"])])
    later = [spread_pod() for _ in range(10)]
    running = PlacedPod(
        namespace=first.namespace,
        labels=dict(first.metadata.labels),
        node_name=node.name,
        node_labels=dict(node.labels),
    )
    result = solve(requests_for(later), [node], [zones_2_3], placed=[running])
    assert result.scheduled_count() == 4
    assert pods_per_zone(result) == [2, 2]  # plus the one in zone 1: {1, 2, 2}
    assert len(result.errors) == 6


def test_11_min_domains_limits_what_fewer_zones_take() -> None:
    spread = [zonal_spread(SPREAD_LABELS, min_domains=3)]
    pods = [make_pod(labels=SPREAD_LABELS, spread=spread) for _ in range(3)]
    pool = node_pool(requirements=[(ZONE_LABEL, "In", ["test-zone-1", "test-zone-2"])])
    result = provision(pods, [pool])
    assert pods_per_zone(result) == [1, 1]
    assert len(result.errors) == 1


def test_12_zonal_anti_affinity_is_not_violated() -> None:
    security = {"security": "s2"}
    zonal = [
        make_pod("2", labels=security, node_selector={ZONE_LABEL: zone})
        for zone in ("test-zone-1", "test-zone-2", "test-zone-3")
    ]
    avoider = make_pod(
        pod_anti_affinity=[
            api.PodAffinityTerm(label_selector=selector(security), topology_key=ZONE_LABEL)
        ]
    )
    result = provision([*zonal, avoider])
    for pod in zonal:  # largest first: one node per zone
        assert scheduled(result, pod)
    assert not scheduled(result, avoider)


def test_13_volume_limits_launch_another_node_in_the_solver() -> None:
    """The in-flight node from a first pass has a CSINode allowing 10 volumes; six pods bring
    two new WaitForFirstConsumer claims each (zone 1), so one more node is launched."""
    pool = node_pool(requirements=SUITE_POOL)
    (claim,) = provision([make_pod()], [pool]).new_node_claims
    csi_node = CSINode(
        metadata=ObjectMeta(name="nodeclaim-1"),
        spec=CSINodeSpec(
            drivers=[
                CSINodeDriver(
                    name=CSI_DRIVER,
                    node_id="fake-node-id",
                    allocatable=CSINodeDriverAllocatable(count=10),
                )
            ]
        ),
    )
    node = dataclasses.replace(
        in_flight(claim, "nodeclaim-1"), volume_limits=node_volume_limits(csi_node)
    )
    storage = StorageClass(
        metadata=ObjectMeta(name="my-storage-class"),
        provisioner=CSI_DRIVER,
        volume_binding_mode="WaitForFirstConsumer",
        allowed_topologies=[
            TopologySelectorTerm(
                match_label_expressions=[
                    TopologySelectorLabelRequirement(key=ZONE_LABEL, values=["test-zone-1"])
                ]
            )
        ],
    )
    claims: dict[str, api.PersistentVolumeClaim] = {}
    pods = []
    for i in range(6):
        names = [f"my-claim-a-{i}", f"my-claim-b-{i}"]
        for name in names:
            claims[f"default/{name}"] = api.PersistentVolumeClaim(
                metadata=ObjectMeta(name=name, namespace="default"),
                spec=api.PersistentVolumeClaimSpec(storage_class_name="my-storage-class"),
            )
        pods.append(make_pod(volumes=names))
    requests = []
    for request, pod in zip(requests_for(pods), pods, strict=True):
        volumes = pod_volumes(pod, claims, {}, {"my-storage-class": storage})
        requests.append(
            dataclasses.replace(
                request, volume_requirements=volumes.requirements, volumes=volumes.usage
            )
        )
    result = solve(requests, [node], [pool])
    assert not result.errors
    (second,) = result.new_node_claims  # two nodes in all, as in Karpenter
    assert zone_of(second) == "test-zone-1"
    # The small type's 5 pod slots bind first here (1 + 4); with slots to spare the
    # 10-volume limit is what stops the sixth pod.
    assert len(result.existing_nodes["nodeclaim-1"]) == 4
    roomy = dataclasses.replace(node, allocatable={**node.allocatable, "pods": 110_000})
    result = solve(requests, [roomy], [pool])
    assert len(result.existing_nodes["nodeclaim-1"]) == 5
    (second,) = result.new_node_claims
    assert len(second.pods) == 1


CSI_DRIVER = "fake.csi.provider"


def test_13_volume_limits_launch_another_node(simulate: Simulate) -> None:
    """Simulated end to end: a node whose CSINode allows 10 volumes, six pods with two new
    WaitForFirstConsumer claims each. Five pods fit the limit; the sixth needs a new node."""
    manifests = [KWOK_BASICS, EXISTING_NODE, CSI_NODE, STORAGE_CLASS]
    for i in range(6):
        manifests.append(claim_manifest(f"my-claim-a-{i}"))
        manifests.append(claim_manifest(f"my-claim-b-{i}"))
        manifests.append(volume_pod(f"volume-pod-{i}", [f"my-claim-a-{i}", f"my-claim-b-{i}"]))
    result = simulate("---\n".join(manifests))
    assert result.exit_code == 0, result.stderr
    assert not result.pending()
    assert len(result.nodes()) == 2


KWOK_BASICS = manifests.KWOK_NODE_CLASS + manifests.node_pool(weight=None)
EXISTING_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: existing-node
  labels:
    kubernetes.io/hostname: existing-node
    topology.kubernetes.io/zone: test-zone-a
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
status:
  capacity: {cpu: "16", memory: 64Gi, pods: "110"}
  allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
  conditions:
    - {type: Ready, status: "True"}
"""
CSI_NODE = """
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: existing-node}
spec:
  drivers:
    - name: fake.csi.provider
      nodeID: fake-node-id
      allocatable: {count: 10}
"""
STORAGE_CLASS = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: my-storage-class}
provisioner: fake.csi.provider
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions:
      - {key: topology.kubernetes.io/zone, values: [test-zone-a]}
"""


def claim_manifest(name: str) -> str:
    return f"""
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: {name}, namespace: default}}
spec:
  storageClassName: my-storage-class
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 1Gi}}}}
"""


def volume_pod(name: str, claims: Sequence[str]) -> str:
    volumes = "\n".join(
        f"    - {{name: {c}, persistentVolumeClaim: {{claimName: {c}}}}}" for c in claims
    )
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
    - name: app
      image: pause
      resources: {{requests: {{cpu: 100m, memory: 100Mi}}}}
  volumes:
{volumes}
"""


def test_14_daemonset_overhead_picks_a_bigger_type() -> None:
    daemon = make_pod("2", "2Gi")
    pool = node_pool(daemon_overhead=pod_requests(daemon))
    pod = make_pod("1", "1Gi")
    result = provision([pod], [pool])
    chosen = claim_of(result, pod).instance_types[0]
    assert chosen.capacity["cpu"] == 4000
    assert chosen.capacity["memory"] == 4 * 1024**3 * 1000
    assert launched_type(claim_of(result, pod)) == "default-instance-type"


HOSTNAME_ANTI_AFFINITY = [
    api.PodAffinityTerm(label_selector=selector({"app": "foo"}), topology_key=HOSTNAME_LABEL)
]


def test_15_limits_partially_schedule() -> None:
    """Passes without pod anti-affinity too: with 3 CPUs left only the 2-CPU type is under
    the limit, and after one of those 1 CPU is left, so the second pod stays pending either
    way. The companion test below is the one that needs hostname anti-affinity."""
    pool = node_pool(remaining=resources(cpu="3"))
    pods = [
        make_pod("1.5", labels={"app": "foo"}, pod_anti_affinity=HOSTNAME_ANTI_AFFINITY)
        for _ in range(2)
    ]
    result = provision(pods, [pool])
    assert result.scheduled_count() == 1
    (message,) = result.errors.values()
    assert message == 'all available instance types exceed limits for nodepool: "default"'


def test_15_hostname_anti_affinity_gives_each_pod_its_own_node() -> None:
    pool = node_pool(remaining=resources(cpu="2000"))  # test.NodePool()'s default limit
    pods = [
        make_pod("1.5", labels={"app": "foo"}, pod_anti_affinity=HOSTNAME_ANTI_AFFINITY)
        for _ in range(2)
    ]
    result = provision(pods, [pool])
    assert len(result.new_node_claims) == 2
    assert claim_of(result, pods[0]) is not claim_of(result, pods[1])


def test_16_the_heaviest_node_pool_always_wins() -> None:
    pools = [node_pool("plain"), node_pool("twenty", weight=20), node_pool("hundred", weight=100)]
    pods = [make_pod() for _ in range(3)]
    result = provision(pods, pools)
    assert {claim_of(result, p).node_pool for p in pods} == {"hundred"}
    assert all(node_label(claim_of(result, p), NODEPOOL_LABEL) == "hundred" for p in pods)
