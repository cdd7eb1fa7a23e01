"""Which instance types a NodeClaim lists, and why pods stay pending: provider labels,
daemonset overhead per instance type, minValues, truncation and reserved capacity."""

from __future__ import annotations

import dataclasses

from nodewright.api.labels import INSTANCE_TYPE_LABEL, WELL_KNOWN_LABELS
from nodewright.scheduling.instancetype import InstanceType, Offering
from nodewright.scheduling.model import (
    DaemonOverheadGroup,
    HostPort,
    NodePoolTemplate,
    SolverOptions,
)
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.resources import resources
from nodewright.scheduling.solver.scheduler import solve
from tests.scheduling.scheduling_fakes import instance_type, node_pool, pod

FAMILY = "example.com/instance-family"


def _family_catalog() -> list[InstanceType]:
    """Two families of the same shape; the provider labels each type with its family."""
    return [
        _with_label(instance_type("c-large", cpu="4"), FAMILY, "c"),
        _with_label(instance_type("m-large", cpu="4"), FAMILY, "m"),
    ]


def _with_label(it: InstanceType, key: str, value: str) -> InstanceType:
    labelled = it.requirements.add(Requirements.from_labels({key: value}))
    return dataclasses.replace(it, requirements=labelled)


# -- provider well-known labels ------------------------------------------------------------------


def test_a_provider_label_the_pool_does_not_name_is_pending_unless_well_known() -> None:
    wanted = pod("1", node_selector={FAMILY: "m"})
    pool = node_pool(instance_types=_family_catalog())

    core_only = solve([wanted], [], [pool])
    assert not core_only.new_node_claims
    assert f'label "{FAMILY}" does not have known values' in core_only.errors[wanted.key]

    provider = SolverOptions(well_known_labels=WELL_KNOWN_LABELS | {FAMILY})
    result = solve([wanted], [], [pool], provider)
    assert not result.errors
    (claim,) = result.new_node_claims
    assert [it.name for it in claim.instance_types] == ["m-large"]


def test_a_well_known_provider_label_still_excludes_types_without_the_value() -> None:
    wanted = pod("1", node_selector={FAMILY: "x"})
    provider = SolverOptions(well_known_labels=WELL_KNOWN_LABELS | {FAMILY})
    result = solve([wanted], [], [node_pool(instance_types=_family_catalog())], provider)
    assert not result.new_node_claims
    assert "no instance type met all requirements" in result.errors[wanted.key]


# -- daemonset overhead per instance type ------------------------------------------------------


def _arch_catalog() -> list[InstanceType]:
    """An amd64 and a cheaper arm64 type of the same size (2 CPU, 1.9 allocatable)."""
    cheap_arm = [Offering("test-zone-1", "on-demand", 0.01)]
    return [
        instance_type("amd", cpu="2", memory="2Gi"),
        instance_type("arm", cpu="2", memory="2Gi", arch="arm64", offerings=cheap_arm),
    ]


def _pool(
    groups: tuple[DaemonOverheadGroup, ...], catalog: list[InstanceType] | None = None
) -> NodePoolTemplate:
    pool = node_pool(instance_types=catalog if catalog is not None else _arch_catalog())
    return dataclasses.replace(pool, daemon_groups=groups)


def _arm_daemons(cpu: str, ports: tuple[HostPort, ...] = ()) -> DaemonOverheadGroup:
    return DaemonOverheadGroup(resources(cpu=cpu, pods=1), frozenset({"arm"}), ports)


def test_a_daemon_on_some_types_only_weighs_on_those_types() -> None:
    pool = _pool((_arm_daemons("1"),))
    big = pod("1500m")
    (claim,) = solve([big], [], [pool]).new_node_claims
    assert [it.name for it in claim.instance_types] == ["amd"]
    # Only amd is left, and no daemon runs there: the claim asks for the pod alone.
    assert claim.requests == resources(cpu="1500m", pods=1)


def test_node_claim_requests_add_the_smallest_overhead_among_remaining_types() -> None:
    groups = (
        _arm_daemons("500m"),
        DaemonOverheadGroup(resources(cpu="200m", memory="1Gi", pods=2), frozenset({"amd"})),
    )
    pool = _pool(groups)
    small = pod("100m")
    (claim,) = solve([small], [], [pool]).new_node_claims
    assert [it.name for it in claim.instance_types] == ["arm", "amd"]
    # Element-wise minimum of both groups: 200m CPU, no memory, one daemon pod slot.
    assert claim.requests == resources(cpu="300m", pods=2)


def test_types_whose_daemons_leave_no_room_are_not_listed() -> None:
    pool = _pool((_arm_daemons("1900m"),))
    (claim,) = solve([pod("100m")], [], [pool]).new_node_claims
    assert [it.name for it in claim.instance_types] == ["amd"]


def test_daemon_host_ports_are_reserved_on_their_types() -> None:
    port = HostPort(8080)
    pool = _pool((_arm_daemons("100m", (port,)),))
    wants_port = pod("100m", host_ports=[port])
    other_port = pod("100m", host_ports=[HostPort(9090)])
    result = solve([wants_port], [], [pool])
    assert [it.name for it in result.new_node_claims[0].instance_types] == ["amd"]
    result = solve([other_port], [], [pool])
    assert [it.name for it in result.new_node_claims[0].instance_types] == ["arm", "amd"]

    only_arm = _pool((_arm_daemons("100m", (port,)),), _arch_catalog()[1:])
    result = solve([wants_port], [], [only_arm])
    assert not result.new_node_claims
    assert "Port=8080" in result.errors[wants_port.key]
    assert "held by daemonset pods" in result.errors[wants_port.key]


def test_failure_names_the_daemonset_overhead_range() -> None:
    groups = (
        _arm_daemons("500m"),
        DaemonOverheadGroup(resources(cpu="200m", pods=1), frozenset({"amd"})),
    )
    pool = _pool(groups)
    huge = pod("3")
    error = solve([huge], [], [pool]).errors[huge.key]
    assert 'daemonset overhead=min={"cpu":"200m","pods":"1"} max={"cpu":"500m","pods":"1"}' in (
        error
    )
    assert "no instance type has enough resources" in error


# -- minValues and truncation ------------------------------------------------------------------


def _sized_catalog() -> list[InstanceType]:
    """Four types of 2, 4, 8 and 16 CPU, cheapest smallest."""
    return [instance_type(f"cpu-{n}", cpu=str(n), memory=f"{n}Gi") for n in (2, 4, 8, 16)]


def _min_types(count: int) -> NodePoolTemplate:
    pool = node_pool(instance_types=_sized_catalog())
    at_least = Requirement.of(INSTANCE_TYPE_LABEL, "Exists", min_values=count)
    return dataclasses.replace(pool, requirements=pool.requirements.add(at_least))


BEST_EFFORT = SolverOptions(min_values_policy="BestEffort")


def test_strict_min_values_leave_a_pod_pending_when_too_few_types_hold_it() -> None:
    big = pod("7")  # only the 8 and 16 CPU types hold it
    result = solve([big], [], [_min_types(3)])
    assert not result.new_node_claims
    assert (
        "minValues requirement is not met for label(s) [node.kubernetes.io/instance-type]"
        in result.errors[big.key]
    )


def test_best_effort_lowers_min_values_to_what_remains_and_says_so() -> None:
    big = pod("7")
    (claim,) = solve([big], [], [_min_types(3)], BEST_EFFORT).new_node_claims
    assert [it.name for it in claim.instance_types] == ["cpu-8", "cpu-16"]
    assert claim.requirements[INSTANCE_TYPE_LABEL].min_values == 2
    assert claim.min_values_relaxed


def test_min_values_met_are_not_relaxed() -> None:
    (claim,) = solve([pod("1")], [], [_min_types(3)], BEST_EFFORT).new_node_claims
    assert len(claim.instance_types) == 4
    assert claim.requirements[INSTANCE_TYPE_LABEL].min_values == 3
    assert not claim.min_values_relaxed


def test_truncation_keeps_the_cheapest_types() -> None:
    pool = node_pool(instance_types=_sized_catalog())
    options = SolverOptions(max_instance_types=2)
    (claim,) = solve([pod("1")], [], [pool], options).new_node_claims
    assert [it.name for it in claim.instance_types] == ["cpu-2", "cpu-4"]
    assert claim.requirements[INSTANCE_TYPE_LABEL].values == {"cpu-2", "cpu-4"}


def test_truncation_that_breaks_strict_min_values_leaves_the_pods_pending() -> None:
    pods = [pod("1"), pod("1")]
    options = SolverOptions(max_instance_types=2)
    result = solve(pods, [], [_min_types(3)], options)
    assert not result.new_node_claims
    for placed in pods:
        assert "couldn't meet minValues requirements" in result.errors[placed.key]


def test_truncation_under_best_effort_lowers_min_values() -> None:
    options = SolverOptions(max_instance_types=2, min_values_policy="BestEffort")
    (claim,) = solve([pod("1")], [], [_min_types(3)], options).new_node_claims
    assert [it.name for it in claim.instance_types] == ["cpu-2", "cpu-4"]
    assert claim.requirements[INSTANCE_TYPE_LABEL].min_values == 2
    assert claim.min_values_relaxed
