"""How much one simulation may be asked to do, sized so that an input at any one limit runs
within 30 s of CPU and 1.5 GB on a 2-core machine (docs/simulate.md says what each costs).

What a run costs grows with the pods it places, the more so when each pod needs a node of its
own (every such node is weighed for consolidation against the others), with the nodes static
NodePools hold and a dump brings, and with the steps a scenario runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nodewright.api.apps import Deployment, Job, ReplicaSet, StatefulSet
from nodewright.api.core import Pod, PodSpec
from nodewright.api.labels import HOSTNAME_LABEL
from nodewright.api.meta import KubeObject

#: The most pods the workloads of one simulation may ask for together.
MAX_SIMULATED_PODS = 20_000
#: The most pods one workload may ask for that each need a node of their own (a required
#: hostname anti-affinity or a ``DoNotSchedule`` hostname spread): as many nodes, each weighed
#: for consolidation against the others. Pods of different workloads may share those nodes.
MAX_APART_PODS = 1_000
#: The most nodes static NodePools (``spec.replicas``) may ask for together.
MAX_STATIC_NODES = 1_000
#: The most Nodes a snapshot (``--from-dump``, ``--from-cluster``) may hold: what-if runs weigh
#: every existing node for consolidation (60 AWS nodes with 600 pods: about 15 s).
MAX_SNAPSHOT_NODES = 60

#: The kinds whose objects ask for pods (:func:`asked_pods`).
WORKLOAD_KINDS = (Deployment, ReplicaSet, StatefulSet, Job, Pod)


@dataclass(frozen=True)
class AskedPods:
    """Pods asked for: all of them, and the most one workload asks for that each need a node
    of their own."""

    total: int = 0
    apart: int = 0

    def __add__(self, other: AskedPods) -> AskedPods:
        return AskedPods(self.total + other.total, max(self.apart, other.apart))

    def problem(self) -> str | None:
        """What a simulation cannot run of this (None: it is within the limits)."""
        if self.total > MAX_SIMULATED_PODS:
            return (
                f"the workloads would ask for {self.total} pods together; a simulation runs "
                f"at most {MAX_SIMULATED_PODS}"
            )
        if self.apart > MAX_APART_PODS:
            return (
                f"a workload would ask for {self.apart} pods that each need a node of their "
                "own (a required hostname anti-affinity or a DoNotSchedule hostname spread); a "
                f"simulation runs at most {MAX_APART_PODS} per workload"
            )
        return None


def asked_pods(objects: Iterable[KubeObject]) -> AskedPods:
    """The pods the workloads among ``objects`` ask for together: the replicas of
    Deployments, StatefulSets and ReplicaSets no Deployment owns, Jobs' parallelism, and Pods
    nothing owns (a workload's own ReplicaSets and pods are counted by the workload)."""
    asked = AskedPods()
    for obj in objects:
        if isinstance(obj, ReplicaSet) and any(
            owner.kind == "Deployment" for owner in obj.metadata.owner_references
        ):
            continue
        if isinstance(obj, Deployment | ReplicaSet | StatefulSet):
            asked += _pods(obj.spec.replicas, obj.spec.template.spec)
        elif isinstance(obj, Job):
            asked += _pods(obj.spec.parallelism, obj.spec.template.spec)
        elif isinstance(obj, Pod) and not obj.metadata.owner_references:
            asked += _pods(1, obj.spec)
    return asked


def _pods(count: int, spec: PodSpec) -> AskedPods:
    return AskedPods(count, count if _apart(spec) else 0)


def _apart(spec: PodSpec) -> bool:
    """Whether pods of ``spec`` each need a node of their own."""
    anti = spec.affinity.pod_anti_affinity if spec.affinity is not None else None
    if anti is not None and any(
        term.topology_key == HOSTNAME_LABEL
        for term in anti.required_during_scheduling_ignored_during_execution
    ):
        return True
    return any(
        spread.topology_key == HOSTNAME_LABEL and spread.when_unsatisfiable == "DoNotSchedule"
        for spread in spec.topology_spread_constraints
    )
