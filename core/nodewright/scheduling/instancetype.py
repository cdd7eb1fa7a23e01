"""Instance types and offerings: the machine shapes a provider sells, and at what price.

These are scheduling data (the solver reads them) and part of the plugin API (providers
build them); :mod:`nodewright.plugin` re-exports them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from nodewright.api.labels import CAPACITY_TYPE_LABEL, ZONE_LABEL
from nodewright.scheduling.dra.devices import DynamicResources
from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.resources import ResourceList, merge, subtract


@dataclass(frozen=True)
class Reservation:
    """Capacity bought ahead (an EC2 capacity reservation, an Azure capacity reservation
    group): launches into it are already paid for, but only ``capacity`` more fit.

    ``label`` is the node label that names the reservation (``karpenter.k8s.aws/
    capacity-reservation-id`` on AWS); NodeClaims placed in it are pinned to it.
    """

    id: str
    label: str
    #: How many more instances the reservation can take now.
    capacity: int


@dataclass(frozen=True)
class Offering:
    """One way to buy an instance type: a zone and capacity type at a price.

    A ``reserved`` offering names its :class:`Reservation`; the reservation's label is
    added to ``labels``, so requirements and node labels see it.
    """

    zone: str
    capacity_type: str
    price: float
    available: bool = True
    #: Further labels a node launched from this offering gets (e.g. a reservation ID).
    labels: Mapping[str, str] = field(default_factory=dict)
    reservation: Reservation | None = None
    #: A NodeOverlay set this price (the core sets it; providers leave it False).
    price_overlaid: bool = False
    #: The price is the provider's estimate, not a quote (an offline catalog's modelled spot
    #: price, say): reports mark every figure that rests on it as approximate.
    price_modelled: bool = False
    #: Launched only when no equally priced offering without this flag fits (Azure's
    #: regional VMs after zonal ones): a zone spread fills such a zone last among equally
    #: loaded zones.
    fallback: bool = False

    def __post_init__(self) -> None:
        reservation = self.reservation
        if reservation is not None and self.labels.get(reservation.label) != reservation.id:
            object.__setattr__(self, "labels", {**self.labels, reservation.label: reservation.id})

    def matches(self, requirements: Requirements) -> bool:
        """True when a node bought through this offering satisfies ``requirements``."""
        zone = requirements.get(ZONE_LABEL)
        if zone is not None and not zone.has(self.zone):
            return False
        capacity_type = requirements.get(CAPACITY_TYPE_LABEL)
        if capacity_type is not None and not capacity_type.has(self.capacity_type):
            return False
        for key, value in self.labels.items():
            requirement = requirements.get(key)
            if requirement is not None and not requirement.has(value):
                return False
        return True

    def requirements(self) -> Requirements:
        return self._requirements

    @cached_property
    def _requirements(self) -> Requirements:
        # Made once: a launch weighs every offering of every type the NodeClaim allows.
        return Requirements.from_labels(
            {ZONE_LABEL: self.zone, CAPACITY_TYPE_LABEL: self.capacity_type, **self.labels}
        )


@dataclass(frozen=True)
class InstanceTypeOverhead:
    """Resources the node keeps for itself (kubelet, system daemons, eviction headroom)."""

    kube_reserved: ResourceList = field(default_factory=dict)
    system_reserved: ResourceList = field(default_factory=dict)
    eviction_threshold: ResourceList = field(default_factory=dict)

    def total(self) -> ResourceList:
        return merge(self.kube_reserved, self.system_reserved, self.eviction_threshold)


@dataclass(frozen=True)
class InstanceType:
    """A machine shape a provider can launch.

    ``requirements`` must define every label the provider sets on such nodes (instance type,
    arch, os and the provider's own); the core adds zone and capacity type from the
    offerings. ``offerings`` may be empty when returned from discovery; the pricing hook
    fills them in.
    """

    name: str
    requirements: Requirements
    capacity: ResourceList
    overhead: InstanceTypeOverhead = field(default_factory=InstanceTypeOverhead)
    offerings: tuple[Offering, ...] = ()
    #: A NodeOverlay added to this capacity (the core sets it; providers leave it False).
    capacity_overlaid: bool = False
    #: The Dynamic Resource Allocation devices its nodes offer (the slices their DRA drivers
    #: will publish), allocated to pods' ResourceClaims before the node exists.
    dynamic_resources: DynamicResources = field(default_factory=DynamicResources)
    #: :meth:`cheapest`'s answers, per what the requirements say on :attr:`offering_keys`.
    _cheapest: dict[tuple[Requirement | None, ...], float] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    #: :meth:`for_launch`'s answers, kept the same way.
    _for_launch: dict[tuple[Requirement | None, ...], InstanceType | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    #: :meth:`matching_offerings`' answers, kept the same way.
    _matching: dict[tuple[Requirement | None, ...], tuple[Offering, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def allocatable(self) -> ResourceList:
        """Capacity less overhead (and less hugepages from memory), never negative."""
        values = subtract(self.capacity, self.overhead.total())
        hugepages = sum(v for k, v in self.capacity.items() if k.startswith("hugepages-"))
        if hugepages and "memory" in values:
            values["memory"] -= hugepages
        return {name: max(0, value) for name, value in values.items()}

    def cheapest(self, requirements: Requirements) -> float:
        """The lowest price of an available offering ``requirements`` allow (infinity when
        none does).

        An offering matches by its zone, capacity type and own labels alone, so the answer
        is kept per type for what ``requirements`` say on those keys: a consolidation pass
        prices the same types under the same zones and capacity types over and over. The
        type is frozen, so its offerings (and the answers) never change.
        """
        said = self._said(requirements)
        found = self._cheapest.get(said)
        if found is None:
            found = min(
                (o.price for o in self.offerings if o.available and o.matches(requirements)),
                default=math.inf,
            )
            self._cheapest[said] = found
        return found

    def for_launch(self, requirements: Requirements) -> InstanceType | None:
        """This type with only the available offerings ``requirements`` allow (None when none
        does), kept per what they say on :attr:`offering_keys` as :meth:`cheapest` is: every
        launch weighs every type its NodeClaim allows."""
        said = self._said(requirements)
        if said in self._for_launch:
            return self._for_launch[said]
        offerings = self.matching_offerings(requirements)
        found = self.with_offerings(offerings) if offerings else None
        self._for_launch[said] = found
        return found

    def matching_offerings(self, requirements: Requirements) -> tuple[Offering, ...]:
        """The available offerings ``requirements`` allow, in order (kept as :meth:`cheapest`
        keeps its answers: a launch asks about the same types under the same zones and
        capacity types, launch after launch)."""
        said = self._said(requirements)
        found = self._matching.get(said)
        if found is None:
            found = tuple(o for o in self.offerings if o.available and o.matches(requirements))
            self._matching[said] = found
        return found

    def _said(self, requirements: Requirements) -> tuple[Requirement | None, ...]:
        return tuple(requirements.get(key) for key in self.offering_keys)

    @cached_property
    def offering_keys(self) -> tuple[str, ...]:
        """The label keys an offering matches requirements by: zone, capacity type and the
        offerings' own labels."""
        labels = sorted({key for o in self.offerings for key in o.labels})
        return (ZONE_LABEL, CAPACITY_TYPE_LABEL, *labels)

    def with_offerings(self, offerings: Sequence[Offering]) -> InstanceType:
        """This instance type with ``offerings`` and the zone and capacity-type requirements
        they imply."""
        zones = frozenset(o.zone for o in offerings)
        capacity_types = frozenset(o.capacity_type for o in offerings)
        requirements = Requirements(
            [
                *(
                    r
                    for k, r in self.requirements.items()
                    if k not in (ZONE_LABEL, CAPACITY_TYPE_LABEL)
                ),
                Requirement(ZONE_LABEL, False, zones),
                Requirement(CAPACITY_TYPE_LABEL, False, capacity_types),
            ]
        )
        return replace(self, requirements=requirements, offerings=tuple(offerings))
