"""Pods that ask for Dynamic Resource Allocation devices (``resourceClaims``).

Karpenter with ``IGNORE_DRA_REQUESTS=true`` (its default) leaves such pods out of every
scheduling simulation, with a ``FailedScheduling`` event, and does not count daemonset pods
with claims as node overhead; nodewright does the same. With the setting false both allocate
devices from ResourceSlices, DeviceClasses and the devices instance types declare (the
modules of this package: :mod:`.allocator` and its :mod:`.search`, shared devices'
:mod:`.capacity`, partitionable devices' :mod:`.counters`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nodewright.scheduling.model import PodRequest

#: Karpenter's error for a pod it skips (``DRAError``), after "Failed to schedule pod, ".
DRA_IGNORED = (
    "pod has Dynamic Resource Allocation requirements that are not yet supported by Karpenter"
)
#: Karpenter's log line for a skipped pod (info, instead of "could not schedule pod").
DRA_SKIP_LOG = (
    "skipping pod with Dynamic Resource Allocation requirements, not yet supported by Karpenter"
)


def split_dra_pods(pods: Sequence[PodRequest]) -> tuple[Sequence[PodRequest], dict[str, str]]:
    """The pods the solver may place, and the DRA pods it skips with their error."""
    skipped = {p.key: DRA_IGNORED for p in pods if p.dynamic_resources}
    if not skipped:
        return pods, {}
    return [p for p in pods if not p.dynamic_resources], skipped
