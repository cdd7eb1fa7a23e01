"""A small instance-type catalog shaped like Karpenter's fake cloud provider, and builders.

``default-instance-type`` 4 CPU / 4Gi / 5 pods, ``small-instance-type`` 2 CPU / 2Gi,
``arm-instance-type`` 16 CPU / 128Gi (arm64), two GPU types, ``single-pod-instance-type``;
every type reserves 100m CPU and 10Mi memory; spot in zones 1-2, on-demand in zones 1-3.
Prices grow with CPU and memory, as in ``fake.PriceFromResources``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    OS_LABEL,
    ZONE_LABEL,
)
from nodewright.scheduling.instancetype import InstanceType, InstanceTypeOverhead, Offering
from nodewright.scheduling.model import DaemonOverheadGroup, HostPort, NodePoolTemplate, PodRequest
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import ResourceList, parse_resources, resources
from nodewright.scheduling.taints import Taint, Toleration

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
GPU_A = "fake.com/vendor-a"
GPU_B = "fake.com/vendor-b"


def price_of(capacity: Mapping[str, int]) -> float:
    price = 0.025 * capacity.get("cpu", 0) / 1000
    price += 0.001 * capacity.get("memory", 0) / 1000 / 1e9
    price += sum(1.0 for k in (GPU_A, GPU_B) if capacity.get(k, 0))
    return round(price, 6)


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
    capacity = parse_resources({"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})})
    price = price_of(capacity)
    if offerings is None:
        offerings = [
            *(Offering(z, "spot", price * 0.7) for z in ZONES[:2]),
            *(Offering(z, "on-demand", price) for z in ZONES),
        ]
    requirements = Requirements.of(
        (INSTANCE_TYPE_LABEL, "In", [name]),
        (ARCH_LABEL, "In", [arch]),
        (OS_LABEL, "In", list(oses)),
    )
    return InstanceType(
        name,
        requirements,
        capacity,
        InstanceTypeOverhead(kube_reserved=resources(cpu="100m", memory="10Mi")),
    ).with_offerings(offerings)


def fake_catalog() -> tuple[InstanceType, ...]:
    return (
        instance_type("default-instance-type"),
        instance_type("small-instance-type", cpu="2", memory="2Gi"),
        instance_type("gpu-vendor-instance-type", extra={GPU_A: "2"}),
        instance_type("gpu-vendor-b-instance-type", extra={GPU_B: "2"}),
        instance_type(
            "arm-instance-type",
            cpu="16",
            memory="128Gi",
            arch="arm64",
            oses=("linux", "windows", "darwin"),
        ),
        instance_type("single-pod-instance-type", pods=1),
    )


def node_pool(
    name: str = "default",
    *,
    weight: int = 0,
    requirements: Sequence[tuple[str, str, Sequence[str]]] = (),
    taints: Sequence[Taint] = (),
    instance_types: Sequence[InstanceType] | None = None,
    limits: ResourceList | None = None,
    daemon_overhead: ResourceList | None = None,
    labels: Mapping[str, str] | None = None,
) -> NodePoolTemplate:
    reqs = Requirements.of((NODEPOOL_LABEL, "In", [name]), *requirements).add(
        Requirements.from_labels(labels or {})
    )
    return NodePoolTemplate(
        name=name,
        weight=weight,
        requirements=reqs,
        taints=tuple(taints),
        instance_types=tuple(instance_types if instance_types is not None else fake_catalog()),
        remaining=limits,
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
