"""Checks a candidate node makes of a pod, shared by existing nodes and new NodeClaims.

Taints, host ports and requirement merges are asked of both kinds of candidate; a refusal
says how long its answer holds, which the scheduler's memo relies on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nodewright.scheduling.model import HostPort
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.taints import PREFER_NO_SCHEDULE, Taint, Toleration
from nodewright.scheduling.topology import TopologyGroup


def untolerated(
    tolerations: Sequence[Toleration], taints: Iterable[Taint], tolerate_prefer_no_schedule: bool
) -> list[Taint]:
    """Taints the pod does not tolerate, Karpenter's way: every effect counts, including
    ``PreferNoSchedule`` until that preference is relaxed."""
    return [
        taint
        for taint in taints
        if not (tolerate_prefer_no_schedule and taint.effect == PREFER_NO_SCHEDULE)
        and not any(t.tolerates(taint) for t in tolerations)
    ]


def taint_error(taints: Sequence[Taint]) -> str:
    return "; ".join(f"did not tolerate taint (taint={taint})" for taint in taints)


def _port_text(port: HostPort) -> str:
    return f"IP={port.ip} Port={port.port} Proto={port.protocol}"


def port_conflict(wanted: Sequence[HostPort], used: Sequence[HostPort]) -> str | None:
    for port in wanted:
        for other in used:
            if port.conflicts(other):
                return (
                    f"checking host port usage, {_port_text(port)} conflicts with existing "
                    f"HostPort configuration {_port_text(other)}"
                )
    return None


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a candidate turned a pod away.

    ``lasting`` refusals hold for every later pod of the same shape while the candidate's
    requirements stay as they are (it only fills up); the solver's memo relies on that.
    A refusal by a topology ``group`` whose answers can turn from no to yes holds until the
    group's epoch moves. ``reason`` may be empty when the caller did not ask for one.
    """

    reason: str
    lasting: bool
    group: TopologyGroup | None = None


LASTING = Refusal("", lasting=True)
PASSING = Refusal("", lasting=False)


class MergeMemo:
    """Memoised ``compatible`` + ``add`` of a claim's requirements with a pod's.

    Keys in ``well_known`` may be required by the pod although the claim does not define
    them: every instance type does (Karpenter's ``AllowUndefinedWellKnownLabels``).
    """

    def __init__(self, well_known: frozenset[str]) -> None:
        self._table: dict[tuple[Requirements, Requirements], Requirements | str] = {}
        self.well_known = well_known

    def __len__(self) -> int:
        return len(self._table)

    def merge(self, base: Requirements, incoming: Requirements) -> Requirements | str:
        key = (base, incoming)
        found = self._table.get(key)
        if found is None:
            problems = base.compatibility_problems(incoming, self.well_known)
            if problems:
                found = "incompatible requirements, " + "; ".join(problems)
            else:
                merged = base.add(incoming)
                found = base if merged == base else merged
            self._table[key] = found
        return found
