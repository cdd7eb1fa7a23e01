"""Which owners a workload controller must look at: those that changed, or whose dependents
did, since its last pass."""

from __future__ import annotations

from nodewright.api.meta import KubeObject
from nodewright.cluster.state import ClusterState, Key
from nodewright.simulation.kubernetes.ownership import controller_key


class OwnerChanges:
    """A change feed read as owner keys: a change to an owner names it, a change to an object
    it controls names its controller. The first call names every owner.

    A controller :meth:`requeue` s an owner it created something for: a feed reports changes
    against what its reader last drained, so an object created after that and deleted before
    the next drain leaves no trace, and the owner would never learn it is gone.
    """

    def __init__(
        self, state: ClusterState, owner: type[KubeObject], *dependents: type[KubeObject]
    ) -> None:
        self.state = state
        self.owner = owner
        self._feed = state.feed(owner, *dependents)
        self._started = False
        self._requeued: set[Key] = set()

    def requeue(self, key: Key) -> None:
        """Name ``key`` again on the next call, changed or not."""
        self._requeued.add(key)

    def affected(self) -> set[Key]:
        changes = self._feed.drain()
        keys, self._requeued = self._requeued, set()
        if not self._started:
            self._started = True
            return keys | set(self.state.objects(self.owner))
        for change in changes:
            if change.kind is self.owner:
                keys.add(change.key)
                continue
            for obj in (change.old, change.new):
                owner = None if obj is None else controller_key(obj, self.owner)
                if owner is not None:
                    keys.add(owner)
        return keys
