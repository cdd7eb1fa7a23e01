"""The scheduling benchmark's inputs, as Karpenter's benchmark builds them
(pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go): its catalog of 400
instance types, one NodePool without limits, and three pod mixes built as real Pod objects
(``plain``, ``diverse``, ``preferences``; bench/README.md describes them).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from nodewright.api import core as api
from nodewright.api.labels import (
    ARCH_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    OS_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import ObjectMeta
from nodewright.scheduling.instancetype import InstanceType, InstanceTypeOverhead, Offering
from nodewright.scheduling.model import NodePoolTemplate, PodRequest
from nodewright.scheduling.pods import pod_request
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import resources

ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
CPUS = ("100m", "250m", "500m", "1", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
LABEL_VALUES = ("a", "b", "c", "d", "e", "f", "g")
NAMESPACE = "default"

# -- catalog ---------------------------------------------------------------------------------


def instance_types(count: int = 400) -> list[InstanceType]:
    """Karpenter's ``fake.InstanceTypes(count)``: type i has i+1 CPU, 2(i+1) GiB, 10(i+1)
    pods, spot and on-demand in three zones at 0.1 per CPU + 0.1 per GiB."""
    types = []
    for i in range(count):
        cpu, memory_gib, pods = i + 1, 2 * (i + 1), 10 * (i + 1)
        price = 0.1 * cpu + 0.1 * memory_gib
        name = f"fake-it-{i}"
        offerings = [
            Offering(zone=zone, capacity_type=capacity_type, price=price)
            for zone in ZONES
            for capacity_type in ("spot", "on-demand")
        ]
        base = InstanceType(
            name=name,
            requirements=Requirements.from_labels(
                {INSTANCE_TYPE_LABEL: name, ARCH_LABEL: "amd64", OS_LABEL: "linux"}
            ),
            capacity=resources(cpu=cpu, memory=f"{memory_gib}Gi", pods=pods),
            overhead=InstanceTypeOverhead(kube_reserved=resources(cpu="100m", memory="10Mi")),
        )
        types.append(base.with_offerings(offerings))
    return types


def node_pool(catalog: Sequence[InstanceType]) -> NodePoolTemplate:
    return NodePoolTemplate(
        name="default",
        weight=0,
        requirements=Requirements.from_labels({NODEPOOL_LABEL: "default"}),
        taints=(),
        instance_types=tuple(catalog),
    )


# -- pod mixes -------------------------------------------------------------------------------


class PodFactory:
    """Builds the benchmark's pods with one seeded RNG, drawing values in the order
    Karpenter's generators do (labels, then selector, then CPU, then memory)."""

    def __init__(self, seed: int = 42) -> None:
        self.rng = random.Random(seed)
        self.made = 0

    def label_value(self) -> str:
        return self.rng.choice(LABEL_VALUES)

    def requests(self) -> dict[str, str]:
        return {"cpu": self.rng.choice(CPUS), "memory": self.rng.choice(MEMORIES)}

    def pod(
        self,
        labels: dict[str, str],
        requests: dict[str, str],
        affinity: api.Affinity | None = None,
        spread: Sequence[api.TopologySpreadConstraint] = (),
    ) -> api.Pod:
        index = self.made
        self.made += 1
        return api.Pod(
            metadata=ObjectMeta(
                name=f"pod-{index:06d}", namespace=NAMESPACE, uid=f"uid-{index:06d}", labels=labels
            ),
            spec=api.PodSpec(
                containers=[
                    api.Container(name="app", resources=api.ResourceRequirements(requests=requests))
                ],
                affinity=affinity,
                topology_spread_constraints=list(spread),
            ),
        )

    # Karpenter's makeGenericPods, makeTopologySpreadPods, makePodAffinityPods and
    # makePodAntiAffinityPods, one pod at a time.

    def generic(self) -> api.Pod:
        labels = {"my-label": self.label_value()}
        return self.pod(labels, self.requests())

    def spread(self, topology_key: str) -> api.Pod:
        labels = {"my-label": self.label_value()}
        selector = {"my-label": self.label_value()}
        constraint = api.TopologySpreadConstraint(
            max_skew=1,
            topology_key=topology_key,
            when_unsatisfiable="DoNotSchedule",
            label_selector=api.LabelSelector(match_labels=selector),
        )
        return self.pod(labels, self.requests(), spread=[constraint])

    def self_affinity(self, topology_key: str) -> api.Pod:
        labels = {"my-affininity": self.label_value()}  # Karpenter's spelling
        term = api.PodAffinityTerm(
            label_selector=api.LabelSelector(match_labels=dict(labels)), topology_key=topology_key
        )
        affinity = api.Affinity(
            pod_affinity=api.PodAffinity(required_during_scheduling_ignored_during_execution=[term])
        )
        return self.pod(labels, self.requests(), affinity=affinity)

    def anti_affinity(self, topology_key: str) -> api.Pod:
        labels = {"app": "nginx"}
        term = api.PodAffinityTerm(
            label_selector=api.LabelSelector(match_labels=dict(labels)), topology_key=topology_key
        )
        affinity = api.Affinity(
            pod_anti_affinity=api.PodAffinity(
                required_during_scheduling_ignored_during_execution=[term]
            )
        )
        return self.pod(labels, self.requests(), affinity=affinity)


def plain_pods(count: int, seed: int = 42) -> list[api.Pod]:
    factory = PodFactory(seed)
    return [factory.generic() for _ in range(count)]


def diverse_pods(count: int, seed: int = 42) -> list[api.Pod]:
    """Karpenter's ``makeDiversePods``: a fifth of each kind, the remainder plain."""
    factory = PodFactory(seed)
    fifth = count // 5
    kinds: list[Callable[[], api.Pod]] = [
        factory.generic,
        lambda: factory.spread(ZONE_LABEL),
        lambda: factory.spread(HOSTNAME_LABEL),
        lambda: factory.self_affinity(ZONE_LABEL),
        lambda: factory.anti_affinity(HOSTNAME_LABEL),
    ]
    pods = [make() for make in kinds for _ in range(fifth)]
    pods.extend(factory.generic() for _ in range(count - len(pods)))
    return pods


def preference_pods(count: int, seed: int = 42) -> list[api.Pod]:
    """Karpenter's ``makePreferencePods``: identical pods (its ``test.Pods`` draws the
    requests once) labelled ``app: nginx`` that prefer test-zone-1 and prefer, with weights
    10 and 1, not to share a zone (impossible) or a host (possible) with each other."""
    factory = PodFactory(seed)
    requests = factory.requests()
    labels = {"app": "nginx"}

    def anti(weight: int, topology_key: str) -> api.WeightedPodAffinityTerm:
        return api.WeightedPodAffinityTerm(
            weight=weight,
            pod_affinity_term=api.PodAffinityTerm(
                label_selector=api.LabelSelector(match_labels=dict(labels)),
                topology_key=topology_key,
            ),
        )

    affinity = api.Affinity(
        node_affinity=api.NodeAffinity(
            preferred_during_scheduling_ignored_during_execution=[
                api.PreferredSchedulingTerm(
                    weight=1,
                    preference=api.NodeSelectorTerm(
                        match_expressions=[
                            api.NodeSelectorRequirement(
                                key=ZONE_LABEL, operator="In", values=["test-zone-1"]
                            )
                        ]
                    ),
                )
            ]
        ),
        pod_anti_affinity=api.PodAffinity(
            preferred_during_scheduling_ignored_during_execution=[
                anti(10, ZONE_LABEL),
                anti(1, HOSTNAME_LABEL),
            ]
        ),
    )
    return [factory.pod(dict(labels), dict(requests), affinity=affinity) for _ in range(count)]


POD_MIXES: dict[str, Callable[[int], list[api.Pod]]] = {
    "plain": plain_pods,
    "diverse": diverse_pods,
    "preferences": preference_pods,
}


def pod_requests(pods: Sequence[api.Pod]) -> list[PodRequest]:
    """The solver's view of ``pods`` through the real parser, in creation order."""
    return [pod_request(pod, order) for order, pod in enumerate(pods)]
