"""The run over time: after each simulated step, nodes by pool, type and capacity type, pods
bound and pending, the hourly price, and the dollar-hours spent so far.

Kept from changes only (the Node feed and the pod changes the runner already drains), so a
step costs what changed in it, never a walk over every pod: runs simulate 100,000 of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from nodewright.api.core import Node, Pod
from nodewright.api.labels import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, NODEPOOL_LABEL
from nodewright.cluster.state import ChangeFeed, ClusterState, is_terminal
from nodewright.controllers.state.cluster import owner_kind

#: (NodePool, instance type, capacity type); "-" where a node has no such label.
NodeGroup = tuple[str, str, str]

#: A node's hourly price from its name: a float, None when not known yet (asked again at the
#: next step), 0.0 for a node nobody prices (one nodewright did not launch, of no known price).
PriceOf = Callable[[Node], float | None]

_SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class TimelinePoint:
    at: datetime
    nodes: tuple[tuple[NodeGroup, int], ...]
    pods_bound: int
    pods_pending: int
    price_per_hour: float
    #: Dollar-hours spent from the start of the run until ``at``.
    dollar_hours: float

    def same_state(self, other: TimelinePoint) -> bool:
        return (self.nodes, self.pods_bound, self.pods_pending, self.price_per_hour) == (
            other.nodes,
            other.pods_bound,
            other.pods_pending,
            other.price_per_hour,
        )


class Timeline:
    """Points recorded whenever a step changed what they show, and the cost integrated."""

    def __init__(self, state: ClusterState, price_of: PriceOf, start: datetime) -> None:
        self._state = state
        self._price_of = price_of
        self._nodes: ChangeFeed = state.feed(Node)
        self._group_of: dict[str, NodeGroup] = {}
        self._price: dict[str, float] = {}
        self._unpriced: dict[str, Node] = {}
        self._groups: Counter[NodeGroup] = Counter()
        self._price_per_hour = 0.0
        self._bound = 0
        self._pending = 0
        self._last = start
        self.dollar_hours = 0.0
        self.points: list[TimelinePoint] = []

    def pods_changed(self, changes: Iterable[tuple[Pod | None, Pod | None]]) -> None:
        """Count pods in and out of bound and pending from their (old, new) versions."""
        for old, new in changes:
            if old is not None:
                self._count(old, -1)
            if new is not None:
                self._count(new, +1)

    def _count(self, pod: Pod, sign: int) -> None:
        if is_terminal(pod):
            return
        if pod.spec.node_name:
            self._bound += sign
        elif owner_kind(pod) != "DaemonSet":
            self._pending += sign

    def observe(self, now: datetime) -> None:
        """Close the step that ends at ``now``: cost until now, then the new state."""
        if now > self._last:
            hours = (now - self._last).total_seconds() / _SECONDS_PER_HOUR
            self.dollar_hours += self._price_per_hour * hours
            self._last = now
        for change in self._nodes.drain():
            name = change.key[1]
            self._remove(name)
            if isinstance(change.new, Node):
                self._add(change.new)
        for name, node in list(self._unpriced.items()):
            price = self._price_of(node)
            if price is not None:
                del self._unpriced[name]
                self._set_price(name, price)
        point = TimelinePoint(
            at=now,
            nodes=tuple(sorted((g, n) for g, n in self._groups.items() if n)),
            pods_bound=self._bound,
            pods_pending=self._pending,
            price_per_hour=round(self._price_per_hour, 6),
            dollar_hours=self.dollar_hours,
        )
        if self.points and self.points[-1].same_state(point):
            return
        if self.points and self.points[-1].at == now:
            self.points[-1] = point
        else:
            self.points.append(point)

    def _add(self, node: Node) -> None:
        labels = node.metadata.labels
        group = (
            labels.get(NODEPOOL_LABEL, "-"),
            labels.get(INSTANCE_TYPE_LABEL, "-"),
            labels.get(CAPACITY_TYPE_LABEL, "-"),
        )
        self._group_of[node.name] = group
        self._groups[group] += 1
        price = self._price_of(node)
        if price is None:
            self._unpriced[node.name] = node
        else:
            self._set_price(node.name, price)

    def _remove(self, name: str) -> None:
        group = self._group_of.pop(name, None)
        if group is not None:
            self._groups[group] -= 1
        self._unpriced.pop(name, None)
        self._price_per_hour -= self._price.pop(name, 0.0)

    def _set_price(self, name: str, price: float) -> None:
        self._price[name] = price
        self._price_per_hour += price
