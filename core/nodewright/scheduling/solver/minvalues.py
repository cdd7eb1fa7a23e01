"""minValues on a NodeClaim's requirements: which keys its remaining types fall short on, and
the BestEffort policy's lowering of them to what is achievable."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.solver.instancetypes import InstanceTypeOption


def min_values_shortfall(
    requirements: Requirements, options: Sequence[InstanceTypeOption]
) -> dict[str, int]:
    """Keys whose minValues ``options`` cannot meet, with how many values they do offer."""
    short: dict[str, int] = {}
    for key, requirement in requirements.items():
        if requirement.min_values is None:
            continue
        values: set[str] = set()
        for option in options:
            found = option.instance_type.requirements.get(key)
            if found is not None and not found.complement:
                values |= found.values
        if len(values) < requirement.min_values:
            short[key] = len(values)
    return short


def min_values_text(short: Mapping[str, int]) -> str:
    return f"minValues requirement is not met for label(s) [{' '.join(sorted(short))}]"


def lower_min_values(requirements: Requirements, short: Mapping[str, int]) -> Requirements:
    """BestEffort: minValues lowered to what the remaining types offer."""
    return Requirements(
        replace(r, min_values=short[key]) if key in short else r for key, r in requirements.items()
    )


def min_values_lowered(template: Requirements, final: Requirements) -> bool:
    for key, requirement in template.items():
        if requirement.min_values is None:
            continue
        now = final.get(key)
        if (
            now is not None
            and now.min_values is not None
            and now.min_values < requirement.min_values
        ):
            return True
    return False
