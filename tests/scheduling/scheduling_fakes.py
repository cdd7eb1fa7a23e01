"""Karpenter's fake catalog with discounted spot, NodePools over it, and pods as solver input.

The catalog is the test kit's (:func:`nodewright.testing.karpenter_instance_types`: default
4 CPU / 4Gi / 5 pods, small 2 CPU / 2Gi, arm 16 CPU / 128Gi, two GPU types, one with a single
pod slot); this suite reprices it (:func:`price_of`, spot at 70% of on-demand) so that the
choice between capacity types shows in its outcomes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.scheduling.instancetype import InstanceType, Offering
from nodewright.scheduling.model import DaemonOverheadGroup, HostPort, NodePoolTemplate, PodRequest
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import ResourceList, parse_resources
from nodewright.scheduling.taints import Taint, Toleration
from nodewright.testing.catalog import (
    GPU_A,
    GPU_B,
    ZONES,
    fake_instance_type,
    karpenter_instance_types,
)


def price_of(capacity: Mapping[str, int]) -> float:
    price = 0.025 * capacity.get("cpu", 0) / 1000
    price += 0.001 * capacity.get("memory", 0) / 1000 / 1e9
    price += sum(1.0 for k in (GPU_A, GPU_B) if capacity.get(k, 0))
    return round(price, 6)


def _repriced(fake: InstanceType) -> InstanceType:
    """``fake`` sold at :func:`price_of`, spot at 70% of on-demand."""
    price = price_of(fake.capacity)
    return fake.with_offerings(
        [
            *(Offering(z, "spot", price * 0.7) for z in ZONES[:2]),
            *(Offering(z, "on-demand", price) for z in ZONES),
        ]
    )


def instance_type(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "4Gi",
    pods: int = 5,
    arch: str = "amd64",
    oses: Sequence[str] = ("linux",),
    extra: Mapping[str, str] | None = None,
    offerings: Sequence[Offering] | None = None,
) -> InstanceType:
    """The test kit's fake instance type, Linux only and repriced unless ``offerings``."""
    fake = fake_instance_type(
        name,
        cpu=cpu,
        memory=memory,
        pods=pods,
        arch=arch,
        operating_systems=oses,
        extra=extra,
        offerings=offerings,
    )
    return fake if offerings is not None else _repriced(fake)


def fake_catalog() -> tuple[InstanceType, ...]:
    """Karpenter's fake catalog, repriced."""
    return tuple(_repriced(fake) for fake in karpenter_instance_types())


def node_pool(
    name: str = "default",
    *,
    weight: int = 0,
    requirements: Sequence[tuple[str, str, Sequence[str]]] = (),
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    instance_types: Sequence[InstanceType] | None = None,
    remaining: ResourceList | None = None,
    daemon_overhead: ResourceList | None = None,
) -> NodePoolTemplate:
    """A NodePool as the solver sees it (requirements, template labels and its own name), over
    :func:`fake_catalog` unless ``instance_types``; ``remaining`` is what its limits leave."""
    merged = Requirements.of((NODEPOOL_LABEL, "In", [name]), *requirements).add(
        Requirements.from_labels(labels or {})
    )
    return NodePoolTemplate(
        name=name,
        weight=weight,
        requirements=merged,
        taints=tuple(taints),
        instance_types=tuple(instance_types if instance_types is not None else fake_catalog()),
        remaining=remaining,
        daemon_groups=(DaemonOverheadGroup(daemon_overhead),) if daemon_overhead else (),
    )


_counter = [0]


def pod(
    cpu: str | None = None,
    memory: str | None = None,
    *,
    name: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    terms: Sequence[Sequence[tuple[str, str, Sequence[str]]]] | None = None,
    preferred: Sequence[tuple[int, Sequence[tuple[str, str, Sequence[str]]]]] = (),
    tolerations: Sequence[Toleration] = (),
    host_ports: Sequence[HostPort] = (),
    extra: Mapping[str, str] | None = None,
) -> PodRequest:
    """A pending pod; requests as in the pod spec, plus its one pod slot."""
    _counter[0] += 1
    name = name or f"pod-{_counter[0]:05d}"
    requests = {"pods": 1000}
    for key, value in (("cpu", cpu), ("memory", memory)):
        if value is not None:
            requests[key] = parse_resources({key: value})[key]
    requests.update(parse_resources(dict(extra or {})))
    selector = Requirements.from_labels(node_selector or {})
    requirement_terms = (
        tuple(selector.add(Requirements.of(*term)) for term in terms) if terms else (selector,)
    )
    return PodRequest(
        namespace="default",
        name=name,
        uid=name,
        requests=requests,
        requirement_terms=requirement_terms,
        preferred_terms=tuple((w, Requirements.of(*term)) for w, term in preferred),
        tolerations=tuple(tolerations),
        host_ports=tuple(host_ports),
        order=_counter[0],
    )


def zone_of(requirements: Requirements) -> frozenset[str]:
    return requirements[ZONE_LABEL].values


def capacity_types_of(requirements: Requirements) -> frozenset[str]:
    return requirements[CAPACITY_TYPE_LABEL].values
