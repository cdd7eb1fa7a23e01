"""Which instance types a NodeClaim lists, and why pods stay pending: provider labels,
daemonset overhead per instance type, minValues, truncation and reserved capacity."""

from __future__ import annotations

import dataclasses

from scheduling_fakes import instance_type, node_pool, pod

from nodewright.api.labels import WELL_KNOWN_LABELS
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import SolverOptions
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.scheduler import solve

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
