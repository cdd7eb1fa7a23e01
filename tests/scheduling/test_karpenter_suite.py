"""More of Karpenter's scheduling suite, one constraint at a time: NodePool labels and
requirements, instance type selection, pod resources, taints, limits and weights, existing
nodes. Built and asserted as in ``test_karpenter_scenarios``.
"""

from __future__ import annotations

import dataclasses

import pytest

from nodewright.api import core as api
from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    OS_LABEL,
    ZONE_LABEL,
)
from nodewright.scheduling.instancetype import Offering
from nodewright.scheduling.model import (
    ExistingNode,
    NodePoolTemplate,
)
from nodewright.scheduling.resources import resources
from nodewright.scheduling.taints import Taint
from nodewright.testing.catalog import (
    CPU_LABEL,
    GPU_A,
    GPU_B,
    SIZE_LABEL,
    SPECIAL_LABEL,
    fake_instance_type,
)
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
    provision,
    scheduled,
    zone_of,
)

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
