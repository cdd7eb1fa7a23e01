"""How many pods each controller owns, live, ready and succeeded, kept current from changes.

The workload controllers and their status counts ask this for every owner whose pods changed;
counting here costs one step per pod change instead of a walk over an owner's pods.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.api.core import Pod
from nodewright.cluster.state import ClusterState
from nodewright.simulation.kubernetes.ownership import controller_uid
from nodewright.simulation.kubernetes.pods import is_active, is_ready


@dataclass
class PodCounts:
    """One owner's pods: ``active`` neither finished nor being deleted, ``ready`` active,
    Running and Ready, ``succeeded`` finished successfully (being deleted or not)."""

    active: int = 0
    ready: int = 0
    succeeded: int = 0


_NONE = PodCounts()


class OwnedPodCounts:
    """:class:`PodCounts` per controller UID."""

    def __init__(self, state: ClusterState) -> None:
        self._feed = state.feed(Pod)
        self._counts: dict[str, PodCounts] = {}
        for pod in state.objects(Pod).values():
            self._count(pod, 1)

    def of(self, owner_uid: str) -> PodCounts:
        """The counts now (a snapshot: it does not follow later changes)."""
        for change in self._feed.drain():
            if change.old is not None:
                self._count(change.old, -1)  # type: ignore[arg-type]
            if change.new is not None:
                self._count(change.new, 1)  # type: ignore[arg-type]
        counts = self._counts.get(owner_uid, _NONE)
        return PodCounts(counts.active, counts.ready, counts.succeeded)

    def _count(self, pod: Pod, sign: int) -> None:
        uid = controller_uid(pod)
        if uid is None:
            return
        counts = self._counts.get(uid)
        if counts is None:
            counts = self._counts[uid] = PodCounts()
        if is_active(pod):
            counts.active += sign
            if pod.status.phase == "Running" and is_ready(pod):
                counts.ready += sign
        if pod.status.phase == "Succeeded":
            counts.succeeded += sign
        if sign < 0 and counts == _NONE:
            del self._counts[uid]
