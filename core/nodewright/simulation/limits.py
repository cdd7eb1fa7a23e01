"""How much one simulation may be asked to do: :data:`DEFAULT`, sized so that an input
within them runs within 30 s of CPU and 1.5 GB on a 2-core machine, and :data:`LARGE`
(``--limits large``), for clusters of thousands of nodes, whose runs at the limits take
minutes (docs/simulate.md says what each costs).

What a run costs grows with the pods it places, the more so when each pod needs a node of its
own (every such node is weighed for consolidation against the others), with the nodes static
NodePools hold and a snapshot brings, and with the steps and the simulated time a scenario
asks for: all read from the input and checked before the run. What no input states, the
nodes its pods make the run launch and the work its controllers do as simulated time passes,
is counted as it runs (nodes launched, units of work: :class:`Work`). Both sets bound all of
them, so a run always ends and its memory stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from nodewright.api.apps import Deployment, Job, ReplicaSet, StatefulSet
from nodewright.api.core import Pod, PodSpec
from nodewright.api.duration import format_duration
from nodewright.api.karpenter import NodePool
from nodewright.api.labels import HOSTNAME_LABEL
from nodewright.api.meta import KubeObject

#: The name of each limit, as :meth:`Limits.at_most` takes it.
Limit = Literal[
    "pods",
    "apart_pods",
    "static_nodes",
    "snapshot_nodes",
    "steps",
    "step_time",
    "scenario_time",
    "launched_nodes",
    "work",
]

#: What each thing a run does counts in units of work (:class:`Work`), after what each
#: costs in CPU on the project's machine (docs/simulate.md): about a microsecond a unit.
WORK_PER_PASS = 250
WORK_PER_NODE_LAUNCHED = 10_000
WORK_PER_NODE_IN_A_PASS = 10
WORK_PER_POD_SOLVED = 60
WORK_PER_CLAIM_TRIED = 160
WORK_PER_SIMULATION = 100
WORK_PER_POD_MOVED = 70


@dataclass(frozen=True)
class Work:
    """The work a run's controllers have done, counted as they do it (never timed, so the
    same input always stops at the same point, on any machine). Each item counts as many
    units as it costs, as measured: a pass of the controllers over the cluster (each a
    little more for every Node there), a node launched, a pod given to provisioning's solver
    and each NodeClaim the solver tries to open for one, a consolidation simulation, and
    each pod it moves off its candidates."""

    passes: int = 0
    #: The Nodes there at each pass, summed.
    nodes_in_passes: int = 0
    #: NodeClaims the run created (for pods, static NodePools, replacements).
    launched: int = 0
    pods_solved: int = 0
    #: NodeClaims provisioning's solver tried to open from a NodePool for a pod.
    claims_tried: int = 0
    simulations: int = 0
    pods_moved: int = 0

    @property
    def units(self) -> int:
        return (
            WORK_PER_PASS * self.passes
            + WORK_PER_NODE_IN_A_PASS * self.nodes_in_passes
            + WORK_PER_NODE_LAUNCHED * self.launched
            + WORK_PER_POD_SOLVED * self.pods_solved
            + WORK_PER_CLAIM_TRIED * self.claims_tried
            + WORK_PER_SIMULATION * self.simulations
            + WORK_PER_POD_MOVED * self.pods_moved
        )


class LimitReached(Exception):
    """A run went beyond a limit on what it does (:meth:`Limits.run_problem`); the message
    says which, for the caller to name the input that asked for it."""


@dataclass(frozen=True)
class Limits:
    """The bounds on one simulation (and on each variant of a tune)."""

    #: What ``--limits`` calls them.
    name: str
    #: The most pods the workloads of one simulation may ask for together.
    pods: int
    #: The most pods the workloads may ask for together that each need a node of their own
    #: (a required hostname anti-affinity or a ``DoNotSchedule`` hostname spread): up to as
    #: many nodes, each weighed for consolidation against the others (pods of different
    #: workloads may share them, but their constraints still weigh on every placement).
    apart_pods: int
    #: The most nodes static NodePools (``spec.replicas``) may ask for together.
    static_nodes: int
    #: The most Nodes a snapshot (``--from-dump``, ``--from-cluster``) may hold: what-if runs
    #: weigh every existing node for consolidation.
    snapshot_nodes: int
    #: The most steps one scenario may have.
    steps: int
    #: The longest one ``advance`` or ``settle`` step may run, however large the number
    #: written.
    step_time: timedelta
    #: The most simulated time a scenario's ``advance`` and ``settle`` steps may ask for
    #: together.
    scenario_time: timedelta
    #: The most Nodes one simulation may launch in all (for pods, static NodePools,
    #: replacements; a snapshot's are not launched), counted as they join: what no limit on
    #: the input bounds (pods each too big to share a node, workloads scaled up and down).
    #: A provisioning pass plans at most one NodeClaim beyond what is left of it, so the
    #: run stops there however many pods wait.
    launched_nodes: int
    #: The most units of work (:class:`Work`) one simulation may do, counted as it runs:
    #: what keeping nodes and pods for a long time costs, consolidation weighing them again
    #: and again, and provisioning retrying pods that stay pending.
    work: int

    def at_most(self, limit: Limit, per: str = "") -> str:
        """``at most N`` for a refusal, saying how far ``--limits large`` goes when these are
        not the large limits: ``at most 60 (--limits large allows 5,000)``."""
        shown = f"at most {_show(getattr(self, limit))}{per}"
        if self.name == LARGE.name:
            return shown
        return f"{shown} (--limits {LARGE.name} allows {_show(getattr(LARGE, limit))})"

    def static_nodes_problem(self, count: int, verb: str = "ask") -> str | None:
        """What a simulation within these limits cannot run of static NodePools asking for
        ``count`` nodes together (None: it can)."""
        if count <= self.static_nodes:
            return None
        return (
            f"static NodePools {verb} for {count:,} nodes; a simulation runs "
            f"{self.at_most('static_nodes')}"
        )

    def start_problem(self, objects: Sequence[KubeObject]) -> str | None:
        """What a simulation within these limits cannot start from of ``objects`` (its
        snapshot's and manifests'): too many pods, or static nodes (None: it can)."""
        static = sum(obj.spec.replicas or 0 for obj in objects if isinstance(obj, NodePool))
        return asked_pods(objects).problem(self) or self.static_nodes_problem(static)

    def check_run(self, run: Work) -> None:
        """Raise :class:`LimitReached` when a simulation within these limits cannot go on
        from what it has done (``run``)."""
        problem = self.run_problem(run)
        if problem is not None:
            raise LimitReached(problem)

    def run_problem(self, run: Work) -> str | None:
        """What a simulation within these limits cannot go on with from ``run`` (None: it
        can)."""
        if run.launched > self.launched_nodes:
            return (
                f"refused: the run has launched {run.launched:,} nodes; a simulation launches "
                f"{self.at_most('launched_nodes')}"
            )
        units = run.units
        if units > self.work:
            return (
                f"refused: the run has done {units:,} units of work (its controllers' passes "
                "over the cluster, nodes launched, pods given to provisioning and moved in "
                f"consolidation's simulations); a simulation does {self.at_most('work')}"
            )
        return None


def _show(value: int | timedelta) -> str:
    return format_duration(value) if isinstance(value, timedelta) else f"{value:,}"


#: Sized so that an input within them runs within 30 s of CPU and 1.5 GB, or stops with an
#: error: each limit alone (20,000 pods in one Deployment, 1,000 pods each on a node of its
#: own, a static NodePool of 1,000, 500 steps, a week, a dump of 60 AWS nodes: each about
#: 10 to 25 s), and together, which is what the limits on what a run does are for: a unit of
#: work costs about a microsecond of CPU, whatever the shape of the cluster, so 20 million
#: stop a run after about 20 s of it (a 60-node what-if kept a day, a few tens of nodes kept
#: a week, run within them); pods each too big to share a node, or scaled down and up
#: again, stop at 1,500 nodes launched. docs/simulate.md has the figures,
#: bench/limit_combinations.py the combinations and what a unit costs in each.
DEFAULT = Limits(
    name="default",
    pods=20_000,
    apart_pods=1_000,
    static_nodes=1_000,
    snapshot_nodes=60,
    steps=500,
    step_time=timedelta(hours=168),
    scenario_time=timedelta(hours=168),
    launched_nodes=1_500,
    work=20_000_000,
)
#: For clusters as large as real ones (thousands of nodes, tens of thousands of pods), and
#: Karpenter's default ``expireAfter`` (720h) with a run past it: each still a bound on a
#: run's memory (100,000 pods take about 1.6 GB) and on its time, which at a limit is minutes
#: (100,000 pods: about 2 minutes of CPU; a what-if of thousands of nodes: longer).
LARGE = Limits(
    name="large",
    pods=100_000,
    apart_pods=6_000,
    static_nodes=10_000,
    snapshot_nodes=5_000,
    steps=1_000,
    step_time=timedelta(hours=720),
    scenario_time=timedelta(hours=1_440),
    launched_nodes=20_000,
    work=500_000_000,
)
#: ``--limits`` choices.
BY_NAME = {limits.name: limits for limits in (DEFAULT, LARGE)}

#: The kinds whose objects ask for pods (:func:`asked_pods`).
WORKLOAD_KINDS = (Deployment, ReplicaSet, StatefulSet, Job, Pod)


@dataclass(frozen=True)
class AskedPods:
    """Pods asked for: all of them, and those of them that each need a node of their own."""

    total: int = 0
    apart: int = 0

    def __add__(self, other: AskedPods) -> AskedPods:
        return AskedPods(self.total + other.total, self.apart + other.apart)

    def problem(self, limits: Limits) -> str | None:
        """What a simulation within ``limits`` cannot run of this (None: it can)."""
        if self.total > limits.pods:
            return (
                f"the workloads would ask for {self.total:,} pods together; a simulation runs "
                f"{limits.at_most('pods')}"
            )
        if self.apart > limits.apart_pods:
            return (
                f"the workloads would ask for {self.apart:,} pods that each need a node of "
                "their own (a required hostname anti-affinity or a DoNotSchedule hostname "
                f"spread) together; a simulation runs {limits.at_most('apart_pods')}"
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
