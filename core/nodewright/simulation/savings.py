"""Where a what-if's saving comes from, and which new node took the place of which.

The saving (what the snapshot's nodes cost an hour, less what the nodes at the end cost) is
the sum of what each step of the run changed, so it splits exactly:

* **removal**: nodes deleted without a replacement (empty, underutilized, drifted, expired);
* **right-sizing**: replacements, priced as if the new nodes had the capacity type of those
  they replace (a smaller or cheaper type, the same kind of capacity);
* **capacity type**: the rest of each replacement, what buying another capacity type (spot
  for on-demand) saves on top;
* **launched**: what the nodes launched for pods that had no room cost (a negative saving);
* **other**: what is left, when a price changed during the run.

Each figure says whether any price it rests on is modelled (an estimate, not a quote).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from nodewright.controllers.nodeclaim.history import NodeRecord

#: A node's price and whether it is modelled: (None, False) when unknown.
Price = tuple[float | None, bool]
#: Below this, a figure is nothing (prices are quoted to 1/10,000 of a dollar).
NEGLIGIBLE = 0.00005


@dataclass
class Figure:
    """Dollars an hour saved, by how many nodes, and whether a modelled price is in it."""

    per_hour: float = 0.0
    nodes: int = 0
    modelled: bool = False

    def add(self, amount: float, nodes: int, modelled: bool) -> None:
        self.per_hour += amount
        self.nodes += nodes
        self.modelled = self.modelled or modelled

    def to_dict(self) -> dict[str, Any]:
        return {
            "perHour": round(self.per_hour, 6),
            "nodes": self.nodes,
            "modelled": self.modelled,
        }


@dataclass
class Savings:
    total: Figure
    removal: Figure = field(default_factory=Figure)
    right_sizing: Figure = field(default_factory=Figure)
    capacity_type: Figure = field(default_factory=Figure)
    launched: Figure = field(default_factory=Figure)
    other: Figure = field(default_factory=Figure)
    #: The capacity-type moves made, e.g. ``on-demand to spot``.
    moves: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total.to_dict(),
            "removal": self.removal.to_dict(),
            "rightSizing": self.right_sizing.to_dict(),
            "capacityType": {**self.capacity_type.to_dict(), "moves": self.moves},
            "launched": self.launched.to_dict(),
            "other": self.other.to_dict(),
        }


class RunHistory:
    """The NodeClaims the run saw launched, and what replaced what."""

    def __init__(self, records: Collection[NodeRecord]) -> None:
        self.records = {r.node_claim: r for r in records}
        self.by_node = {r.node: r for r in records if r.node}

    def standing(self, node: str, present: Collection[str]) -> list[str]:
        """The nodes in ``present`` that took ``node``'s place, following replacements of
        replacements; ``[node]`` while it stands itself."""
        found: list[str] = []
        seen: set[str] = set()

        def follow(record: NodeRecord) -> None:
            if record.node_claim in seen:
                return
            seen.add(record.node_claim)
            if record.node and record.node in present and record.removed_at is None:
                found.append(record.node)
                return
            for claim in record.replaced_by:
                replacement = self.records.get(claim)
                if replacement is not None:
                    follow(replacement)

        record = self.by_node.get(node)
        if record is None:
            return [node] if node in present else []
        follow(record)
        return sorted(set(found))


def explain(
    history: RunHistory,
    total: Figure,
    existing: Collection[str],
    price: Callable[[NodeRecord], Price],
    price_as: Callable[[NodeRecord, str], Price],
) -> Savings:
    """Split ``total`` by the steps of the run. ``price`` is a node's price, ``price_as``
    its type's price at another capacity type; ``existing`` are the snapshot's nodes."""
    savings = Savings(total=total)
    replacements: dict[tuple[str, ...], list[NodeRecord]] = {}
    for record in history.records.values():
        if record.removed_at is None:
            continue
        if record.replaced_by:
            replacements.setdefault(record.replaced_by, []).append(record)
            continue
        amount, modelled = price(record)
        savings.removal.add(amount or 0.0, 1, modelled)
    replacing = {claim for claims in replacements for claim in claims}
    for record in history.records.values():
        if record.node not in existing and record.node_claim not in replacing:
            amount, modelled = price(record)
            savings.launched.add(-(amount or 0.0), 1, modelled)
    for claims, old in replacements.items():
        new = [history.records[c] for c in claims if c in history.records]
        _replacement(savings, old, new, price, price_as)
    savings.moves = sorted(set(savings.moves))
    explained = sum(
        f.per_hour
        for f in (
            savings.removal,
            savings.right_sizing,
            savings.capacity_type,
            savings.launched,
        )
    )
    if abs(total.per_hour - explained) >= NEGLIGIBLE:
        savings.other.add(total.per_hour - explained, 0, total.modelled)
    return savings


def _replacement(
    savings: Savings,
    old: list[NodeRecord],
    new: list[NodeRecord],
    price: Callable[[NodeRecord], Price],
    price_as: Callable[[NodeRecord, str], Price],
) -> None:
    """One replacement: ``old`` nodes gone for ``new`` ones."""
    old_prices = [price(r) for r in old]
    new_prices = [price(r) for r in new]
    before = sum(p or 0.0 for p, _ in old_prices)
    after = sum(p or 0.0 for p, _ in new_prices)
    modelled = any(m for _, m in [*old_prices, *new_prices])
    kinds = {r.capacity_type for r in old}
    moved = [r for r in new if r.capacity_type not in kinds]
    if not moved:
        savings.right_sizing.add(before - after, len(old), modelled)
        return
    kind = next(iter(kinds)) if len(kinds) == 1 else None
    references = [price_as(r, kind) for r in new] if kind is not None else []
    if kind is None or any(p is None for p, _ in references):
        # No same-capacity price to compare with: the whole difference is the move's.
        savings.capacity_type.add(before - after, len(moved), modelled)
    else:
        reference = sum(p or 0.0 for p, _ in references)
        reference_modelled = any(m for _, m in references)
        savings.right_sizing.add(before - reference, len(old), modelled or reference_modelled)
        savings.capacity_type.add(reference - after, len(moved), modelled or reference_modelled)
    savings.moves.extend(
        f"{before_kind} to {r.capacity_type}" for r in moved for before_kind in kinds if before_kind
    )
