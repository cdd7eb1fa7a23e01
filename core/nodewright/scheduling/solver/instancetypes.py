"""Instance types as the solver sees them: allocatable net of daemonset overhead, offerings
priced per requirements, and quick fit bounds over a set of them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter

from nodewright.scheduling.instancetype import InstanceType, Offering
from nodewright.scheduling.model import DaemonOverheadGroup
from nodewright.scheduling.requirements import DOES_NOT_EXIST, NOT_IN, Requirements
from nodewright.scheduling.resources import CPU, MEMORY, PODS, ResourceList, subtract

#: The overhead group of an instance type no daemonset pod lands on.
_NO_DAEMONS = DaemonOverheadGroup({})


class InstanceTypeOption:
    """An instance type with what the solver asks of it precomputed.

    ``allocatable`` is what is left for pods once the daemonset pods of the type's overhead
    group are counted, so fit checks compare pod requests alone. CPU, memory and pod slots
    are plain attributes because nearly every fit check is about them; what each offering
    set costs under given requirements is cached per requirements (claims from one pool
    share few distinct requirement sets).
    """

    __slots__ = (
        "_offers",
        "allocatable",
        "cpu",
        "daemon_ports",
        "extras",
        "fits_nothing",
        "group",
        "index",
        "instance_type",
        "memory",
        "offerings",
        "pods",
        "reservation_labels",
        "reserved",
    )

    def __init__(
        self,
        index: int,
        instance_type: InstanceType,
        allocatable: ResourceList,
        offerings: tuple[Offering, ...],
        group: DaemonOverheadGroup = _NO_DAEMONS,
    ) -> None:
        self.index = index
        self.instance_type = instance_type
        if group.overhead:
            allocatable = subtract(allocatable, group.overhead)
        self.allocatable = allocatable
        #: The daemons alone do not fit: no pod can go there.
        self.fits_nothing = any(v < 0 for v in allocatable.values())
        self.group = group
        self.daemon_ports = group.host_ports
        #: Available offerings only; unavailable ones never launch.
        self.offerings = offerings
        #: Those of them in a capacity reservation.
        self.reserved = tuple(o for o in offerings if o.reservation is not None)
        self.cpu = -1 if self.fits_nothing else allocatable.get(CPU, 0)
        self.memory = allocatable.get(MEMORY, 0)
        self.pods = allocatable.get(PODS, 0)
        #: Every other resource (GPUs, ephemeral storage...).
        self.extras = tuple((k, v) for k, v in allocatable.items() if k not in (CPU, MEMORY, PODS))
        #: Labels that name a reservation: offerings outside one do not carry them.
        self.reservation_labels: frozenset[str] = frozenset()
        self._offers: dict[Requirements, tuple[float, frozenset[str]]] = {}

    def offer(self, requirements: Requirements) -> tuple[float, frozenset[str]]:
        """The cheapest price and the capacity types of offerings ``requirements`` allow."""
        found = self._offers.get(requirements)
        if found is None:
            matching = [o for o in self.offerings if o.matches(requirements)]
            if self.reservation_labels and _names_a_reservation(
                requirements, self.reservation_labels
            ):
                matching = [o for o in matching if o.reservation is not None]
            found = (
                min((o.price for o in matching), default=float("inf")),
                frozenset(o.capacity_type for o in matching),
            )
            self._offers[requirements] = found
        return found

    def has_offering(self, requirements: Requirements) -> bool:
        return bool(self.offer(requirements)[1])

    def cheapest(self, requirements: Requirements) -> float:
        return self.offer(requirements)[0]

    def compatible(self, requirements: Requirements) -> bool:
        return self.instance_type.requirements.meets(requirements)


def _names_a_reservation(requirements: Requirements, labels: frozenset[str]) -> bool:
    """True when ``requirements`` need one of the reservation ``labels`` to be present, which
    only reserved offerings can satisfy (the others lack them, as if ``DoesNotExist``)."""
    for label in labels:
        requirement = requirements.get(label)
        if requirement is not None and requirement.operator not in (NOT_IN, DOES_NOT_EXIST):
            return True
    return False


def options_fitting(
    options: Sequence[InstanceTypeOption], requests: Mapping[str, int]
) -> list[InstanceTypeOption]:
    """The options whose allocatable holds ``requests``."""
    cpu = requests.get(CPU, 0)
    memory = requests.get(MEMORY, 0)
    pods = requests.get(PODS, 0)
    others = [(k, v) for k, v in requests.items() if v > 0 and k not in (CPU, MEMORY, PODS)]
    if not others:
        return [o for o in options if o.cpu >= cpu and o.memory >= memory and o.pods >= pods]
    return [
        o
        for o in options
        if o.cpu >= cpu
        and o.memory >= memory
        and o.pods >= pods
        and all(o.allocatable.get(k, 0) >= v for k, v in others)
    ]


_CPU_OF = attrgetter("cpu")
_MEMORY_OF = attrgetter("memory")
_PODS_OF = attrgetter("pods")


def allocatable_floor(options: Sequence[InstanceTypeOption]) -> tuple[int, int, int]:
    """Smallest CPU, memory and pod slots of ``options``: what every one of them holds."""
    return (
        min(map(_CPU_OF, options)),
        min(map(_MEMORY_OF, options)),
        min(map(_PODS_OF, options)),
    )


def allocatable_ceiling(options: Sequence[InstanceTypeOption]) -> ResourceList:
    """Element-wise largest allocatable: a quick upper bound for what a claim can hold."""
    if not options:
        return {}
    ceiling: ResourceList = {
        CPU: max(map(_CPU_OF, options)),
        MEMORY: max(map(_MEMORY_OF, options)),
        PODS: max(map(_PODS_OF, options)),
    }
    for option in options:
        for name, value in option.extras:
            if value > ceiling.get(name, -1):
                ceiling[name] = value
    return ceiling


def overhead_group(name: str, groups: Sequence[DaemonOverheadGroup]) -> DaemonOverheadGroup:
    for group in groups:
        if group.instance_types is None or name in group.instance_types:
            return group
    return _NO_DAEMONS
