"""Which devices are taken during one scheduling pass.

A NodeClaim being sized is still a choice among instance types, and a different device may
serve a pod on each. A published device chosen for one NodeClaim is off limits to every other
NodeClaim, but free for that NodeClaim's other instance types (only one of them will launch);
a template device exists only on its NodeClaim's instance type. When the solver drops an
instance type from a NodeClaim, the devices chosen for it are given back.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from nodewright.scheduling.dra.devices import DeviceID


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
        return sorted(freed)
