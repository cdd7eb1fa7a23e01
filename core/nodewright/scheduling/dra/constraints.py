"""A claim's ``matchAttribute`` constraints, and the attribute bindings that meet them for
attributes only known once a node runs.

The first device allocated for the constrained requests pins the attribute's value; every
later one must have the same. A template device that lacks the attribute may still qualify
when its instance type binds it, under that attribute, to the devices already chosen (both
ways never mix within one constraint). Constraints keep state while the search descends and
undo it exactly when it backtracks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.scheduling.dra.devices import (
    AttributeValue,
    DeviceID,
    DynamicResources,
    attribute_values_equal,
)
from nodewright.scheduling.dra.pools import Candidate

#: (attribute, NodePool, instance type) -> device -> the devices it is bound to.
AttributeBindings = Mapping[tuple[str, str, str], Mapping[DeviceID, frozenset[DeviceID]]]


def build_bindings(
    instance_types: Mapping[str, Sequence[tuple[str, DynamicResources]]],
) -> AttributeBindings:
    """The bindings each NodePool's instance types declare (``{pool: [(type, resources)]}``),
    closed transitively: devices bound to a common device are bound to each other."""
    direct: dict[tuple[str, str, str], dict[DeviceID, set[DeviceID]]] = {}
    for pool, types in instance_types.items():
        for name, resources in types:
            for binding in resources.attribute_bindings:
                if len(binding.devices) < 2:
                    continue
                graph = direct.setdefault((binding.attribute, pool, name), {})
                for device in binding.devices:
                    graph.setdefault(device, set()).update(
                        d for d in binding.devices if d != device
                    )
    closed: dict[tuple[str, str, str], dict[DeviceID, frozenset[DeviceID]]] = {}
    for key, graph in direct.items():
        closure: dict[DeviceID, frozenset[DeviceID]] = {}
        for start in graph:
            seen = {start}
            stack = [start]
            while stack:
                for neighbour in graph.get(stack.pop(), ()):
                    if neighbour not in seen:
                        seen.add(neighbour)
                        stack.append(neighbour)
            closure[start] = frozenset(seen - {start})
        closed[key] = closure
    return closed


@dataclass
class MatchAttribute:
    """One ``matchAttribute`` constraint of a claim, with its search state."""

    attribute: str
    #: The requests it binds (empty: every request of the claim).
    requests: frozenset[str]
    #: The bindings of the instance type being searched: device -> bound devices.
    bindings: Mapping[DeviceID, frozenset[DeviceID]] = field(default_factory=dict)
    value: AttributeValue | None = None
    used_binding: bool = False
    chosen: list[DeviceID] = field(default_factory=list)

    def applies(self, request: str) -> bool:
        return not self.requests or request in self.requests

    def add(self, request: str, candidate: Candidate) -> bool:
        """Take ``candidate`` for ``request`` if it keeps the constraint; False leaves the
        state as it was."""
        if not self.applies(request):
            return True
        value = candidate.device.attribute(candidate.id.driver, self.attribute)
        if value is not None:
            if self.used_binding:
                return False
            if not self.chosen:
                self.value = value
            elif self.value is None or not attribute_values_equal(self.value, value):
                return False
            self.chosen.append(candidate.id)
            return True
        if self.chosen and not self.used_binding:
            return False
        bound = self.bindings.get(candidate.id)
        if not bound:
            return False
        if self.chosen and self.chosen[0] not in bound:
            return False
        self.used_binding = True
        self.chosen.append(candidate.id)
        return True

    def remove(self, request: str) -> None:
        """Undo the last successful :meth:`add` for ``request``."""
        if not self.applies(request):
            return
        if self.chosen:
            self.chosen.pop()
        if not self.chosen:
            self.value = None
            self.used_binding = False

    def reset(self, bindings: Mapping[DeviceID, frozenset[DeviceID]]) -> None:
        self.bindings = bindings
        self.value = None
        self.used_binding = False
        self.chosen = []


def try_constraints(
    constraints: Iterable[MatchAttribute], request: str, candidate: Candidate
) -> list[MatchAttribute] | None:
    """Add ``candidate`` to every constraint; the ones added (to undo later), or None (with
    nothing left added) when one refuses it."""
    added: list[MatchAttribute] = []
    for constraint in constraints:
        if not constraint.add(request, candidate):
            for done in reversed(added):
                done.remove(request)
            return None
        added.append(constraint)
    return added
