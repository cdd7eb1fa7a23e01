"""Nodes nominated for pending pods (Karpenter's ``nominatedUntil`` on a state node).

When a provisioning pass plans a real pending pod onto a node that already exists (a Node, or
a NodeClaim that has launched), the node is nominated: for the nomination window,
``max(2 x BATCH_MAX_DURATION, 10s)`` from now, it is not a disruption candidate, so a node the
pod is about to land on is not emptied or consolidated meanwhile. Nominating a node again
moves the end of its window. CapacityBuffer virtual pods never nominate: they are placed again
on every pass, so their nodes would never leave the window.

Nominations are kept by provider ID, as Karpenter keys its state nodes, so a nomination made
while a NodeClaim has not registered yet still holds for its Node. They live in memory only:
a restarted operator starts without any, as Karpenter does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from nodewright.api.core import Node
from nodewright.api.karpenter import NodeClaim
from nodewright.clock import Clock
from nodewright.cluster.state import ClusterState

#: The shortest nomination window, whatever BATCH_MAX_DURATION says.
MINIMUM_WINDOW = timedelta(seconds=10)

#: The message of the ``DisruptionBlocked`` event on a nominated node (Karpenter's wording).
NOMINATED = "Node is nominated for a pending pod"


def nomination_window(batch_max_duration: timedelta) -> timedelta:
    """How long a nomination lasts: twice the longest provisioning batch, at least 10 s."""
    return max(2 * batch_max_duration, MINIMUM_WINDOW)


class Nominations:
    """Provider IDs of nominated nodes and when their nominations end."""

    def __init__(self, clock: Clock, batch_max_duration: timedelta) -> None:
        self._clock = clock
        self.window = nomination_window(batch_max_duration)
        self._until: dict[str, datetime] = {}
        #: Moves whenever a nomination starts or is extended.
        self.changes = 0
        #: Moves only when a node that was not nominated becomes nominated (an extension does
        #: not: whoever waits for the old end looks again then).
        self.version = 0

    def nominate(self, provider_ids: Iterable[str]) -> None:
        """Nominate these nodes from now (an empty provider ID names nothing)."""
        now = self._clock.now()
        until = now + self.window
        for provider_id in provider_ids:
            if not provider_id:
                continue
            held = self._until.get(provider_id)
            if held is None or held <= now:
                self.version += 1
            if held is None or held < until:
                self._until[provider_id] = until
                self.changes += 1
        self._forget_ended(now)

    def until(self, provider_id: str | None, now: datetime) -> datetime | None:
        """When the node's nomination ends, if it is nominated at ``now``."""
        if not provider_id:
            return None
        held = self._until.get(provider_id)
        return held if held is not None and held > now else None

    def held(self) -> Mapping[str, datetime]:
        """Every nomination kept, ended ones included until the next :meth:`nominate`."""
        return self._until

    def _forget_ended(self, now: datetime) -> None:
        ended = [key for key, until in self._until.items() if until <= now]
        for key in ended:
            del self._until[key]


def provider_id_of(state: ClusterState, name: str) -> str:
    """The provider ID of the existing node ``name`` as the solver names it (a Node, else an
    in-flight NodeClaim; empty while that NodeClaim has not launched)."""
    node = state.get(Node, ("", name))
    if node is not None:
        return node.spec.provider_id or ""
    claim = state.get(NodeClaim, ("", name))
    return (claim.status.provider_id or "") if claim is not None else ""


def nominated_message(state: ClusterState, name: str) -> str:
    """The ``Nominated`` event's message for a pod planned onto the existing node ``name``:
    ``Pod should schedule on: nodeclaim/<claim>, node/<node>`` (what of the two exists)."""
    claim = state.get(NodeClaim, ("", name))
    if claim is not None:
        node = state.node_for(claim)
        target = f"nodeclaim/{claim.name}" + (f", node/{node.name}" if node else "")
    else:
        existing = state.get(Node, ("", name))
        owner = state.claim_for(existing) if existing is not None else None
        target = (f"nodeclaim/{owner.name}, " if owner else "") + f"node/{name}"
    return f"Pod should schedule on: {target}"
