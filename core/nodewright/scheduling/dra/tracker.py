"""Which devices are taken during one scheduling pass.

A NodeClaim being sized is still a choice among instance types, and a different device may
serve a pod on each. A published device chosen for one NodeClaim is off limits to every other
NodeClaim, but free for that NodeClaim's other instance types (only one of them will launch);
a template device exists only on its NodeClaim's instance type. When the solver drops an
instance type from a NodeClaim, the devices chosen for it are given back.

Shares of shared devices and draws on counter sets are counted the same way: what claims in
the cluster hold, plus, per NodeClaim, the most any of its instance types takes (only one will
launch, and which is not known yet); a template device's share and a template pool's counters
count per NodeClaim and instance type.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Generic, TypeVar

from nodewright.scheduling.dra.capacity import add, largest
from nodewright.scheduling.dra.counters import Counters, PoolKey
from nodewright.scheduling.dra.devices import DeviceID

K = TypeVar("K", bound=Hashable)
N = TypeVar("N", bound=Hashable)


@dataclass
class Pessimistic(Generic[K, N]):
    """Amounts taken per item (a device, a pool) by each NodeClaim's instance types; an item's
    total counts, per NodeClaim, the largest any instance type takes."""

    #: NodeClaim -> instance type -> item -> amounts.
    by_node_claim: dict[str, dict[str, dict[K, dict[N, Fraction]]]] = field(default_factory=dict)
    total: dict[K, dict[N, Fraction]] = field(default_factory=dict)

    def _most(self, node_claim: str) -> dict[K, dict[N, Fraction]]:
        per_type = self.by_node_claim.get(node_claim, {})
        items = {item for taken in per_type.values() for item in taken}
        return {
            item: largest(taken[item] for taken in per_type.values() if item in taken)
            for item in items
        }

    def _shift(self, before: dict[K, dict[N, Fraction]], after: dict[K, dict[N, Fraction]]) -> None:
        for item, amounts in before.items():
            add(self.total.setdefault(item, {}), amounts, -1)
        for item, amounts in after.items():
            add(self.total.setdefault(item, {}), amounts)

    def take(
        self, node_claim: str, by_type: Mapping[str, Mapping[K, Mapping[N, Fraction]]]
    ) -> None:
        before = self._most(node_claim)
        per_type = self.by_node_claim.setdefault(node_claim, {})
        for instance_type, items in by_type.items():
            held = per_type.setdefault(instance_type, {})
            for item, amounts in items.items():
                add(held.setdefault(item, {}), amounts)
        self._shift(before, self._most(node_claim))

    def release(self, node_claim: str, instance_types: Iterable[str]) -> None:
        if node_claim not in self.by_node_claim:
            return
        before = self._most(node_claim)
        for instance_type in instance_types:
            self.by_node_claim[node_claim].pop(instance_type, None)
        self._shift(before, self._most(node_claim))


@dataclass
class Tracker:
    """Devices held in the cluster (``preallocated``) and chosen in this pass."""

    preallocated: frozenset[DeviceID] = frozenset()
    #: Published device -> (its NodeClaim, the instance types it was chosen for).
    inflight: dict[DeviceID, tuple[str, set[str]]] = field(default_factory=dict)
    #: NodeClaim -> instance type -> published devices chosen for it.
    by_node_claim: dict[str, dict[str, set[DeviceID]]] = field(default_factory=dict)
    #: NodeClaim -> instance type -> template devices chosen for it.
    templates: dict[str, dict[str, set[DeviceID]]] = field(default_factory=dict)
    #: Shared devices: what claims in the cluster take of their capacities.
    preallocated_capacity: Mapping[DeviceID, Mapping[str, Fraction]] = field(default_factory=dict)
    #: Shared published devices: what this pass's NodeClaims take.
    capacity: Pessimistic[DeviceID, str] = field(default_factory=Pessimistic)
    #: NodeClaim -> instance type -> shared template device -> what is taken of it.
    template_capacity: dict[str, dict[str, dict[DeviceID, dict[str, Fraction]]]] = field(
        default_factory=dict
    )
    #: Published pools with counter sets: what is left once the cluster's claims drew on them.
    budgets: Mapping[PoolKey, Counters] = field(default_factory=dict)
    #: Published pools: what this pass's NodeClaims draw on them.
    counters: Pessimistic[PoolKey, tuple[str, str]] = field(default_factory=Pessimistic)
    #: NodeClaim -> instance type -> template pool -> what its devices draw.
    template_counters: dict[str, dict[str, dict[PoolKey, Counters]]] = field(default_factory=dict)

    def capacity_used(
        self, device: DeviceID, template: bool, node_claim: str, instance_type: str
    ) -> list[Mapping[str, Fraction]]:
        """What is already taken of the shared ``device`` for ``node_claim`` as
        ``instance_type``."""
        if template:
            taken = self.template_capacity.get(node_claim, {}).get(instance_type, {})
            return [taken.get(device, {})]
        return [self.preallocated_capacity.get(device, {}), self.capacity.total.get(device, {})]

    def counters_left(
        self,
        pool: PoolKey,
        template_budget: Mapping[PoolKey, Counters] | None,
        node_claim: str,
        instance_type: str,
    ) -> Counters | None:
        """What is left of ``pool``'s counters (a template pool's when ``template_budget``,
        the node's whole budget, is given); None when it has none."""
        if template_budget is not None:
            whole = template_budget.get(pool)
            if whole is None:
                return None
            left = dict(whole)
            drawn = self.template_counters.get(node_claim, {}).get(instance_type, {})
            add(left, drawn.get(pool, {}), -1)
            return left
        whole = self.budgets.get(pool)
        if whole is None:
            return None
        left = dict(whole)
        add(left, self.counters.total.get(pool, {}), -1)
        return left

    def take_shares(
        self,
        node_claim: str,
        capacity: Mapping[str, Mapping[tuple[DeviceID, bool], Mapping[str, Fraction]]],
        counters: Mapping[str, Mapping[tuple[PoolKey, bool], Counters]],
    ) -> None:
        """Record what a placed pod's allocation takes per instance type: shares of shared
        devices and draws on counter sets (published and template alike)."""
        self.capacity.take(node_claim, _published(capacity, self.template_capacity, node_claim))
        self.counters.take(node_claim, _published(counters, self.template_counters, node_claim))

    def taken(self, device: DeviceID, template: bool, node_claim: str, instance_type: str) -> bool:
        """Whether ``device`` is unavailable to ``node_claim`` launched as ``instance_type``."""
        if template:
            return device in self.templates.get(node_claim, {}).get(instance_type, ())
        if device in self.preallocated:
            return True
        holder = self.inflight.get(device)
        if holder is None:
            return False
        return holder[0] != node_claim or instance_type in holder[1]

    def take(
        self, node_claim: str, instance_type: str, devices: Iterable[tuple[DeviceID, bool]]
    ) -> None:
        for device, template in devices:
            if template:
                self.templates.setdefault(node_claim, {}).setdefault(instance_type, set()).add(
                    device
                )
                continue
            self.by_node_claim.setdefault(node_claim, {}).setdefault(instance_type, set()).add(
                device
            )
            holder = self.inflight.setdefault(device, (node_claim, set()))
            holder[1].add(instance_type)

    def release(self, node_claim: str, instance_types: Iterable[str]) -> list[DeviceID]:
        """Give back what ``node_claim`` held for ``instance_types``; the published devices no
        instance type holds any more."""
        instance_types = list(instance_types)
        freed: list[DeviceID] = []
        for instance_type in instance_types:
            for device in self.by_node_claim.get(node_claim, {}).pop(instance_type, set()):
                holder = self.inflight.get(device)
                if holder is None:
                    continue
                holder[1].discard(instance_type)
                if not holder[1]:
                    del self.inflight[device]
                    freed.append(device)
            self.templates.get(node_claim, {}).pop(instance_type, None)
            self.template_capacity.get(node_claim, {}).pop(instance_type, None)
            self.template_counters.get(node_claim, {}).pop(instance_type, None)
        self.capacity.release(node_claim, instance_types)
        self.counters.release(node_claim, instance_types)
        return sorted(freed)


def _published(
    taken: Mapping[str, Mapping[tuple[K, bool], Mapping[N, Fraction]]],
    template_held: dict[str, dict[str, dict[K, dict[N, Fraction]]]],
    node_claim: str,
) -> dict[str, dict[K, Mapping[N, Fraction]]]:
    """Per instance type, what ``taken`` takes from published items (devices, pools); what it
    takes from template items is added to ``node_claim``'s part of ``template_held`` instead."""
    published: dict[str, dict[K, Mapping[N, Fraction]]] = {}
    for instance_type, items in taken.items():
        for (item, template), amounts in items.items():
            if template:
                held = template_held.setdefault(node_claim, {}).setdefault(instance_type, {})
                add(held.setdefault(item, {}), amounts)
            else:
                published.setdefault(instance_type, {})[item] = amounts
    return published
