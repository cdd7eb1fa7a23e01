"""What a PodDisruptionBudget allows, worked out as kube-controller-manager's disruption
controller does: the pods that must stay healthy (``minAvailable``, or the expected pods less
``maxUnavailable``; each an int or a percentage of the expected pods rounded up; neither set:
all of them, policy/v1's default) and the disruptions allowed (healthy pods beyond that).

Two callers, one policy difference each, kept at the caller:

* the simulated API server's eviction check (:mod:`nodewright.cluster.eviction`) refuses to
  work with a value that is not an int or a percentage (``InvalidError``), and only asks
  whether the answer is above 0;
* the disruption controller's budget limits (:mod:`nodewright.controllers.disruption.pdbs`)
  never count below 0, and a budget whose values cannot be read allows nothing.

The API server refuses such values and so does reading manifests or a dump, so neither
policy is reached from a user's input.
"""

from __future__ import annotations

import math

from nodewright.api.apps import PodDisruptionBudgetSpec
from nodewright.cluster.budgetcounts import BudgetCount


def scaled(value: int | str, total: int) -> int:
    """``value`` as a number of pods: an int as it is, a percentage of ``total`` rounded up.
    Raises ValueError naming the value when it is neither."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%"):
        try:
            percent = int(text[:-1])
        except ValueError:
            raise ValueError(f"invalid percentage {value!r}") from None
        return math.ceil(percent * total / 100)
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"invalid int-or-percentage {value!r}") from None


def desired_healthy(spec: PodDisruptionBudgetSpec, expected: int) -> int:
    """How many of the ``expected`` pods must stay healthy (see :func:`scaled`)."""
    if spec.max_unavailable is not None:
        return max(0, expected - scaled(spec.max_unavailable, expected))
    if spec.min_available is not None:
        return scaled(spec.min_available, expected)
    return expected


def disruptions_allowed(spec: PodDisruptionBudgetSpec, count: BudgetCount) -> int:
    """Healthy pods beyond those that must stay healthy; below 0 when too few are healthy.
    Raises ValueError as :func:`scaled` does."""
    return count.healthy - desired_healthy(spec, count.expected)
