"""Karpenter's scheduling scenarios (reference §10, 1-16) and more of its scheduling suite.

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
from collections import Counter
from collections.abc import Sequence

import pytest
from karpenter_fakes import (
    ALL_CAPACITY_TYPES,
    container,
    launched_type,
    make_pod,
    node_pool,
    requests_for,
    selector,
    zonal_spread,
    zone_of,
)

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
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    OS_LABEL,
    WELL_KNOWN_LABELS,
    ZONE_LABEL,
)
from nodewright.api.meta import ObjectMeta
from nodewright.scheduling.instancetype import Offering
from nodewright.scheduling.model import (
    ExistingNode,
    NewNodeClaim,
    NodePoolTemplate,
    PlacedPod,
    SchedulingResult,
    SolverOptions,
)
from nodewright.scheduling.pods import pod_requests
from nodewright.scheduling.resources import resources
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.taints import Taint
from nodewright.scheduling.volumes import node_volume_limits, pod_volumes
from nodewright.testing.catalog import (
    CPU_LABEL,
    GPU_A,
    GPU_B,
    SIZE_LABEL,
    SPECIAL_LABEL,
    fake_instance_type,
)
from tests.conftest import Simulate

#: Karpenter's fake provider makes its own labels well known.
FAKE_OPTIONS = SolverOptions(
    well_known_labels=WELL_KNOWN_LABELS | {SIZE_LABEL, SPECIAL_LABEL, CPU_LABEL}
)
#: The scheduling suite's NodePool: every capacity type, nothing else.
SUITE_POOL = [ALL_CAPACITY_TYPES]
AMD64 = {ARCH_LABEL: "amd64"}


def provision(
    pods: Sequence[api.Pod],
    pools: Sequence[NodePoolTemplate] | None = None,
    existing: Sequence[ExistingNode] = (),
) -> SchedulingResult:
    """One provisioning pass: pods parsed from their spec, the suite's NodePool by default."""
    templates = pools if pools is not None else [node_pool(requirements=SUITE_POOL)]
    return solve(requests_for(pods), existing, templates, FAKE_OPTIONS)


def claim_of(result: SchedulingResult, pod: api.Pod) -> NewNodeClaim:
    """The NodeClaim ``pod`` was placed on (fails if it stayed pending or went elsewhere)."""
    for claim in result.new_node_claims:
        if any(p.name == pod.name for p in claim.pods):
            return claim
    raise AssertionError(f"{pod.name} is not on a new NodeClaim; errors: {result.errors}")


def scheduled(result: SchedulingResult, pod: api.Pod) -> bool:
    placed = [p for c in result.new_node_claims for p in c.pods]
    placed += [p for pods in result.existing_nodes.values() for p in pods]
    return any(p.name == pod.name for p in placed)


def error_of(result: SchedulingResult, pod: api.Pod) -> str:
    return result.errors[f"default/{pod.name}"]


def pods_per_zone(result: SchedulingResult) -> list[int]:
    """Karpenter's ``ExpectSkew`` on zones: pods per zone, smallest first. A NodeClaim not
    pinned to one zone counts under ``None`` (and so breaks a zonal expectation)."""
    counts: Counter[str | None] = Counter()
    for claim in result.new_node_claims:
        counts[zone_of(claim)] += len(claim.pods)
    assert None not in counts, f"NodeClaims not pinned to a zone: {counts}"
    return sorted(counts.values())


def node_label(claim: NewNodeClaim, key: str) -> str | None:
    """The label a node launched for ``claim`` would carry: set by its requirements, else by
    the launched instance type."""
    requirement = claim.requirements.get(key)
    if requirement is not None and not requirement.complement and len(requirement.values) == 1:
        return next(iter(requirement.values))
    found = claim.instance_types[0].requirements.get(key)
    if found is not None and not found.complement and len(found.values) == 1:
        return next(iter(found.values))
    return None


def in_flight(claim: NewNodeClaim, name: str) -> ExistingNode:
    """The not-yet-ready node the fake provider makes of ``claim``: cheapest type, first
    offering that fits the claim's requirements, its pods already counted."""
    chosen = claim.instance_types[0]
    offering = next(o for o in chosen.offerings if o.matches(claim.requirements))
    labels = {
        **{k: v for k, v in claim.requirements.labels().items() if k != HOSTNAME_LABEL},
        **chosen.requirements.labels(),
        ZONE_LABEL: offering.zone,
        CAPACITY_TYPE_LABEL: offering.capacity_type,
        HOSTNAME_LABEL: name,
    }
    return ExistingNode(
        name=name,
        labels=labels,
        taints=(),
        allocatable=chosen.allocatable(),
        requested=claim.requests,
        initialized=False,
        node_claim=name,
        node_pool=claim.node_pool,
        in_flight=True,
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


KWOK_BASICS = """
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements: []
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
"""
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


# == More of Karpenter's scheduling suite ====================================================

LABELLED_POOL = node_pool(requirements=SUITE_POOL, labels={"test-key": "test-value"})


def test_unconstrained_pods_get_the_node_pool_labels() -> None:
    pod = make_pod()
    result = provision([pod], [LABELLED_POOL])
    assert node_label(claim_of(result, pod), "test-key") == "test-value"


@pytest.mark.parametrize(
    ("pool", "pod", "expected"),
    [
        # conflicting node selector
        (LABELLED_POOL, make_pod(node_selector={"test-key": "different-value"}), None),
        # a custom key the NodePool does not define
        (None, make_pod(node_selector={"test-key": "test-value"}), None),
        # matching requirement (In with one allowed value)
        (
            LABELLED_POOL,
            make_pod(required=[[("test-key", "In", ["test-value", "another-value"])]]),
            "test-value",
        ),
        # conflicting requirement
        (LABELLED_POOL, make_pod(required=[[("test-key", "In", ["another-value"])]]), None),
        # NotIn and DoesNotExist on an undefined key need nothing from the NodePool
        (None, make_pod(required=[[("test-key", "NotIn", ["test-value"])]]), "absent"),
        (None, make_pod(required=[[("test-key", "DoesNotExist", [])]]), "absent"),
        # In and Exists on an undefined key do
        (None, make_pod(required=[[("test-key", "In", ["test-value"])]]), None),
        (None, make_pod(required=[[("test-key", "Exists", [])]]), None),
        # defined key: Exists keeps the value, NotIn/DoesNotExist of it fail
        (LABELLED_POOL, make_pod(required=[[("test-key", "Exists", [])]]), "test-value"),
        (LABELLED_POOL, make_pod(required=[[("test-key", "NotIn", ["test-value"])]]), None),
        (LABELLED_POOL, make_pod(required=[[("test-key", "DoesNotExist", [])]]), None),
        (LABELLED_POOL, make_pod(required=[[("test-key", "NotIn", ["other"])]]), "test-value"),
        # a pod may never pick its node by hostname
        (None, make_pod(node_selector={HOSTNAME_LABEL: "red-node"}), None),
    ],
)
def test_node_pool_labels_and_pod_selectors(
    pool: NodePoolTemplate | None, pod: api.Pod, expected: str | None
) -> None:
    result = provision([pod], [pool] if pool is not None else None)
    if expected is None:
        assert not scheduled(result, pod)
        assert not result.new_node_claims
        return
    claim = claim_of(result, pod)
    assert node_label(claim, "test-key") == (None if expected == "absent" else expected)


def test_undefined_custom_label_is_reported_like_karpenter() -> None:
    pod = make_pod(node_selector={"test-key": "test-value"})
    result = provision([pod])
    assert error_of(result, pod) == (
        'incompatible with nodepool "default", incompatible requirements, '
        'label "test-key" does not have known values'
    )


def test_exists_does_not_overwrite_an_impossible_value() -> None:
    pod = make_pod(
        required=[[(ZONE_LABEL, "In", ["non-existent-zone"]), (ZONE_LABEL, "Exists", [])]]
    )
    assert not scheduled(provision([pod]), pod)


@pytest.mark.parametrize(
    ("pool_zones", "pod", "zone"),
    [
        (["test-zone-2"], make_pod(), "test-zone-2"),
        (
            ["test-zone-1", "test-zone-2"],
            make_pod(node_selector={ZONE_LABEL: "test-zone-2"}),
            "test-zone-2",
        ),
        (None, make_pod(required=[[(ZONE_LABEL, "In", ["test-zone-3"])]]), "test-zone-3"),
        (["test-zone-1"], make_pod(node_selector={ZONE_LABEL: "unknown"}), None),
        (["test-zone-1"], make_pod(node_selector={ZONE_LABEL: "test-zone-2"}), None),
        (
            None,
            make_pod(required=[[(ZONE_LABEL, "NotIn", ["test-zone-1", "test-zone-2"])]]),
            "test-zone-3",
        ),
    ],
)
def test_zone_constraints(pool_zones: list[str] | None, pod: api.Pod, zone: str | None) -> None:
    requirements = [*SUITE_POOL]
    if pool_zones is not None:
        requirements.append((ZONE_LABEL, "In", pool_zones))
    result = provision([pod], [node_pool(requirements=requirements)])
    if zone is None:
        assert not scheduled(result, pod)
    else:
        assert zone_of(claim_of(result, pod)) == zone


def test_zone_3_is_on_demand_only() -> None:
    pod = make_pod(node_selector={ZONE_LABEL: "test-zone-3"})
    claim = claim_of(provision([pod]), pod)
    assert claim.requirements[CAPACITY_TYPE_LABEL].values == {"on-demand"}


@pytest.mark.parametrize(
    ("operator", "value", "integer"),
    [("Gt", "8", "16"), ("Lt", "8", "2"), ("Gte", "16", "16"), ("Lte", "2", "2")],
)
def test_numeric_node_pool_requirements(operator: str, value: str, integer: str) -> None:
    pool = node_pool(requirements=[(CPU_LABEL, operator, [value])])
    pod = make_pod()
    claim = claim_of(provision([pod], [pool]), pod)
    assert node_label(claim, CPU_LABEL) == integer


@pytest.mark.parametrize(
    ("node_selector", "launched"),
    [({SIZE_LABEL: "large"}, "arm-instance-type"), ({SIZE_LABEL: "small"}, "small-instance-type")],
)
def test_pods_may_select_provider_labels_the_node_pool_does_not_name(
    node_selector: dict[str, str], launched: str
) -> None:
    """Karpenter's fake provider adds ``size``, ``special`` and ``integer`` to the well-known
    labels, so a pod may select them without the NodePool mentioning them."""
    pod = make_pod(node_selector=node_selector)
    assert launched_type(claim_of(provision([pod]), pod)) == launched


@pytest.mark.parametrize(
    ("operator", "launched", "has_special"),
    [("Exists", "arm-instance-type", True), ("DoesNotExist", "small-instance-type", False)],
)
def test_optional_instance_type_labels(operator: str, launched: str, has_special: bool) -> None:
    """Only large types carry ``special``. Karpenter's pool need not name it (the fake makes
    it well known); here the pool allows it explicitly too."""
    pool = node_pool(requirements=[*SUITE_POOL, (SPECIAL_LABEL, "Exists", [])])
    if operator == "DoesNotExist":  # needs nothing from the pool
        pool = node_pool(requirements=SUITE_POOL)
    pod = make_pod(required=[[(SPECIAL_LABEL, operator, [])]])
    claim = claim_of(provision([pod], [pool]), pod)
    assert launched_type(claim) == launched
    assert (node_label(claim, SPECIAL_LABEL) is not None) is has_special


# -- instance type selection -----------------------------------------------------------------


def test_pods_with_different_archs_get_different_nodes() -> None:
    pool = node_pool(requirements=[(ARCH_LABEL, "In", ["arm64", "amd64"])])
    amd, arm = make_pod(node_selector=AMD64), make_pod(node_selector={ARCH_LABEL: "arm64"})
    result = provision([amd, arm], [pool])
    assert launched_type(claim_of(result, amd)) == "small-instance-type"
    assert launched_type(claim_of(result, arm)) == "arm-instance-type"


def test_pod_affinity_to_an_operating_system_narrows_types() -> None:
    pod = make_pod(required=[[(OS_LABEL, "In", ["ios"])]])
    claim = claim_of(provision([pod]), pod)
    assert [it.name for it in claim.instance_types] == ["arm-instance-type"]


def test_instance_type_affinity_excludes_the_others() -> None:
    pod = make_pod(
        required=[[(INSTANCE_TYPE_LABEL, "In", ["arm-instance-type", "single-pod-instance-type"])]]
    )
    claim = claim_of(provision([pod]), pod)
    assert {it.name for it in claim.instance_types} == {
        "arm-instance-type",
        "single-pod-instance-type",
    }
    assert launched_type(claim) == "single-pod-instance-type"


def test_a_node_claim_lists_every_type_cheapest_first() -> None:
    """``should select for valid instance types, regardless of price``."""
    offering = [("test-zone-1a", 3.0), ("test-zone-1a", 2.0), ("test-zone-1a", 1.0)]
    types = [
        fake_instance_type(
            name, cpu=cpu, memory=memory, offerings=[Offering(zone, "on-demand", price)]
        )
        for (name, cpu, memory), (zone, price) in zip(
            [("medium", "2", "2Gi"), ("small", "1", "1Gi"), ("large", "4", "4Gi")],
            offering,
            strict=True,
        )
    ]
    pod = make_pod(limits={"cpu": "1m", "memory": "1Mi"})
    claim = claim_of(provision([pod], [node_pool(instance_types=types)]), pod)
    assert [it.name for it in claim.instance_types] == ["large", "small", "medium"]


@pytest.mark.parametrize(
    ("requests", "fits"),
    [
        ({"memory": "2Ti"}, False),  # bigger than every type
        ({"foo.com/weird-resources": "0"}, True),  # zero of an unknown resource is fine
        ({GPU_A: "1"}, True),
        ({GPU_A: "3"}, False),  # types have 2
        ({GPU_A: "1", GPU_B: "1"}, False),  # no type has both
    ],
)
def test_resource_requests_against_the_catalog(requests: dict[str, str], fits: bool) -> None:
    pod = make_pod(extra=requests, limits=requests)
    result = provision([pod])
    assert scheduled(result, pod) is fits
    if not fits:
        assert "no instance type" in error_of(result, pod)


def test_gpu_pods_of_two_vendors_get_two_nodes() -> None:
    a, b = make_pod(limits={GPU_A: "1"}), make_pod(limits={GPU_B: "1"})
    result = provision([a, b])
    assert launched_type(claim_of(result, a)) == "gpu-vendor-instance-type"
    assert launched_type(claim_of(result, b)) == "gpu-vendor-b-instance-type"


def test_cpu_typo_is_pointed_out() -> None:
    pod = make_pod("2000000")  # two million CPUs, "m" meant
    message = error_of(provision([pod]), pod)
    assert "(CPU request >= 1 Million, m vs M typo?)" in message


# -- pod resources ---------------------------------------------------------------------------


def test_runtime_class_overhead_counts() -> None:
    """``should take pod runtime class into consideration``: 1 CPU + 2 CPU overhead."""
    pod = make_pod("1", overhead={"cpu": "2"})
    assert launched_type(claim_of(provision([pod]), pod)) == "default-instance-type"


def test_init_container_larger_than_any_type_blocks_the_pod() -> None:
    pod = make_pod("1", "1Gi", init_containers=[container("2", "1Ti")])
    assert not scheduled(provision([pod]), pod)


def test_sidecars_add_to_the_app_containers() -> None:
    """A restartable init container runs beside the app: 1 + 1 CPU needs a 4-CPU type."""
    pod = make_pod("1", init_containers=[container("1", restart_policy="Always")])
    assert launched_type(claim_of(provision([pod]), pod)) == "default-instance-type"
    plain = make_pod("1", init_containers=[container("1")])
    assert launched_type(claim_of(provision([plain]), plain)) == "small-instance-type"


def test_multiple_small_pods_share_the_smallest_type() -> None:
    pods = [make_pod(memory="10M") for _ in range(5)]
    result = provision(pods)
    (claim,) = result.new_node_claims
    assert launched_type(claim) == "small-instance-type"
    assert len(claim.pods) == 5


# -- taints and tolerations ------------------------------------------------------------------

TAINTED = node_pool(requirements=SUITE_POOL, taints=[Taint("test-key", "NoSchedule", "test-value")])


@pytest.mark.parametrize(
    ("tolerations", "fits"),
    [
        ([], False),
        (
            [
                api.Toleration(
                    key="test-key", operator="Equal", value="test-value", effect="NoSchedule"
                )
            ],
            True,
        ),
        ([api.Toleration(key="test-key", operator="Exists")], True),
        ([api.Toleration(operator="Exists")], True),
        ([api.Toleration(key="test-key", operator="Equal", value="other")], False),
        ([api.Toleration(key="test-key", operator="Exists", effect="NoExecute")], False),
    ],
)
def test_node_pool_taints_need_tolerations(tolerations: list[api.Toleration], fits: bool) -> None:
    pod = make_pod(tolerations=tolerations)
    result = provision([pod], [TAINTED])
    assert scheduled(result, pod) is fits
    if not fits:
        assert "did not tolerate taint" in error_of(result, pod)


def test_prefer_no_schedule_taints_are_relaxed_last() -> None:
    soft = node_pool(requirements=SUITE_POOL, taints=[Taint("spare", "PreferNoSchedule")])
    pod = make_pod()
    claim = claim_of(provision([pod], [soft]), pod)
    assert claim.node_pool == "default"


def test_a_pool_without_prefer_no_schedule_taints_wins_over_one_with() -> None:
    soft = node_pool("soft", weight=100, taints=[Taint("spare", "PreferNoSchedule")])
    plain = node_pool("plain", weight=1)
    pod = make_pod()
    assert claim_of(provision([pod], [soft, plain]), pod).node_pool == "plain"


# -- NodePools: limits and weights -----------------------------------------------------------


def test_node_pool_limits_exclude_types_that_would_breach_them() -> None:
    pool = node_pool(remaining=resources(cpu="2"))
    pod = make_pod("1.5")
    claim = claim_of(provision([pod], [pool]), pod)
    assert [it.name for it in claim.instance_types] == ["small-instance-type"]


def test_exhausted_node_limits_are_reported() -> None:
    pool = node_pool(remaining={"nodes": 0})
    pod = make_pod()
    assert error_of(provision([pod], [pool]), pod) == (
        'node limits have been exhausted for nodepool: "default"'
    )


def test_a_pod_selecting_a_lighter_pool_goes_there() -> None:
    """``should schedule to explicitly selected nodepool even if other nodePools are higher
    priority``."""
    pools = [node_pool("target"), node_pool("twenty", weight=20), node_pool("hundred", weight=100)]
    pod = make_pod(node_selector={NODEPOOL_LABEL: "target"})
    assert claim_of(provision([pod], pools), pod).node_pool == "target"


def test_a_pool_whose_requirements_the_pod_cannot_meet_is_skipped() -> None:
    pools = [
        node_pool("heavy", weight=100, requirements=[(ARCH_LABEL, "In", ["arm64"])]),
        node_pool("light", weight=1),
    ]
    pod = make_pod(node_selector=AMD64)
    assert claim_of(provision([pod], pools), pod).node_pool == "light"


# -- existing nodes --------------------------------------------------------------------------


def unowned_node(name: str = "existing", **labels: str) -> ExistingNode:
    return ExistingNode(
        name=name,
        labels={HOSTNAME_LABEL: name, **labels},
        taints=(),
        allocatable=resources(cpu="10", memory="10Gi", pods=110),
        requested={},
    )


def test_pods_go_to_an_existing_node_unowned_by_karpenter() -> None:
    pods = [make_pod("10m") for _ in range(3)]
    result = provision(pods, existing=[unowned_node()])
    assert not result.new_node_claims
    assert len(result.existing_nodes["existing"]) == 3


def test_a_pod_incompatible_with_an_existing_node_gets_a_new_one() -> None:
    node = unowned_node(**{ZONE_LABEL: "test-zone-1"})
    pod = make_pod(node_selector={ZONE_LABEL: "test-zone-2"})
    result = provision([pod], existing=[node])
    assert zone_of(claim_of(result, pod)) == "test-zone-2"


def test_a_pod_too_big_for_an_in_flight_node_gets_a_second() -> None:
    first = make_pod(memory="1Gi")
    pool = node_pool(requirements=SUITE_POOL)
    (claim,) = provision([first], [pool]).new_node_claims
    big = make_pod("3")
    result = provision([big], [pool], existing=[in_flight(claim, "nodeclaim-1")])
    assert launched_type(claim_of(result, big)) == "default-instance-type"
    assert not result.existing_nodes


def test_an_uninitialized_node_ignores_its_startup_taints() -> None:
    pool = node_pool(requirements=SUITE_POOL)
    (claim,) = provision([make_pod()], [pool]).new_node_claims
    startup = Taint("example.com/booting", "NoSchedule")
    node = dataclasses.replace(
        in_flight(claim, "nodeclaim-1"), taints=(startup,), startup_taints=(startup,)
    )
    pod = make_pod()
    result = provision([pod], [pool], existing=[node])
    assert [p.name for p in result.existing_nodes["nodeclaim-1"]] == [pod.name]
