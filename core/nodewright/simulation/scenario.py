"""Scenario files: the steps a simulation runs, in order.

A scenario is YAML: either a list of steps or a mapping with ``steps``. Each step is a
mapping with exactly one key:

``apply: PATH`` (or a list of paths)
    Load manifests, relative to the scenario file, and create or update them.
``scale: {kind: Deployment, name: inflate, namespace: default, replicas: 3}``
    Set ``spec.replicas`` of a Deployment, ReplicaSet or StatefulSet, or of a static
    NodePool (``kind: NodePool``, no namespace), as ``kubectl scale`` does.
``delete: {kind: Deployment, name: inflate, namespace: default}``
    Delete an object (finalizers are honoured: a Node is drained first).
``advance: 5m``
    Let simulated time pass.
``settle: 30m`` (or ``settle: {}``)
    Run until the cluster is quiet (at most the given time, default two hours).
``setNodeCondition: {node: NAME, type: Ready, status: "False"}``
    Report a condition on Nodes as their kubelet or a node agent would (a broken machine):
    ``node`` names one Node, or ``selector`` (labels, as ``matchLabels``) picks the Nodes
    carrying them, the first ``count`` by name (default: all); ``reason`` and ``message``
    are optional. The simulated kubelets keep the condition as written.

Every step but ``advance`` and ``settle`` is followed by an implicit ``settle``.

:func:`run_scenario` runs the steps against a :class:`~nodewright.simulation.runner.Simulation`;
a step that cannot run (an object that does not exist, a kind that cannot be scaled) raises
:class:`~nodewright.simulation.inputs.InputError` naming the step.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

from nodewright.api.apps import Deployment, ReplicaSet, StatefulSet
from nodewright.api.duration import DurationError, format_duration, parse_duration
from nodewright.api.excerpt import excerpt
from nodewright.api.karpenter import NodePool
from nodewright.api.manifests.documents import parse_yaml
from nodewright.api.manifests.errors import ManifestError
from nodewright.api.manifests.files import read_manifest
from nodewright.api.meta import KubeObject
from nodewright.cluster.objects import mutable
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import (
    InputError,
    kind_registry,
    load_checked,
    warn_static_without_gate,
)
from nodewright.simulation.limits import (
    LARGE,
    WORKLOAD_KINDS,
    AskedPods,
    LimitReached,
    Limits,
    asked_pods,
)
from nodewright.simulation.preflight import unusable_providers
from nodewright.simulation.runner import MAX_SETTLE, Simulation

STEP_KINDS = ("apply", "scale", "delete", "advance", "settle", "setNodeCondition")
#: The statuses a Node condition can have.
CONDITION_STATUSES = ("True", "False", "Unknown")


class ScenarioError(ValueError):
    """A scenario file that cannot be run; the message names the file and the step."""


@dataclass(frozen=True)
class NodeConditionChange:
    """What a ``setNodeCondition`` step sets, and on which Nodes."""

    type: str
    status: str
    #: One Node by name ...
    node: str = ""
    #: ... or the Nodes carrying all these labels.
    selector: tuple[tuple[str, str], ...] = ()
    #: With ``selector``: how many of the matching Nodes, first by name (None: all).
    count: int | None = None
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class Step:
    action: str
    #: For ``apply``: manifest paths, resolved against the scenario file's folder.
    paths: tuple[Path, ...] = ()
    kind: str = ""
    name: str = ""
    namespace: str = ""
    replicas: int = 0
    duration: timedelta | None = None
    #: For ``setNodeCondition``.
    condition: NodeConditionChange | None = None
    #: For ``apply``: the objects, when read before the run (:func:`preload`); else the
    #: step reads ``paths`` when it runs.
    objects: tuple[KubeObject, ...] | None = None
    #: Where the step was written, for messages (``scenario.yaml: steps[2]``).
    where: str = ""


@dataclass(frozen=True)
class Scenario:
    steps: tuple[Step, ...] = field(default_factory=tuple)


def load_scenario(path: Path, limits: Limits) -> Scenario:
    """Read a scenario file with the manifests' limits (depth, aliases, size); its steps and
    the simulated time they ask for must fit in ``limits``."""
    try:
        document = parse_yaml(read_manifest(path), str(path))
    except ManifestError as error:
        raise ScenarioError(str(error)) from None
    return parse_scenario(document, path, limits)


def parse_scenario(document: object, path: Path, limits: Limits) -> Scenario:
    if document is None:
        return Scenario()
    if isinstance(document, Mapping):
        unknown = set(document) - {"steps"}
        if unknown:
            shown = ", ".join(sorted(excerpt(key) for key in unknown))
            raise ScenarioError(f"{path}: unknown key(s) {shown}; expected 'steps'")
        document = document.get("steps") or []
    if not isinstance(document, Sequence) or isinstance(document, str):
        raise ScenarioError(f"{path}: a scenario is a list of steps")
    if len(document) > limits.steps:
        raise ScenarioError(
            f"{path}: refused: {len(document):,} steps; a scenario has {limits.at_most('steps')}"
        )
    # Steps read by parse_yaml know their lines (a plain list, in tests, does not).
    lines: list[int] = getattr(document, "item_lines", None) or [0] * len(document)
    steps = [
        _parse_step(raw, path, index, limits, line)
        for index, (raw, line) in enumerate(zip(document, lines, strict=True))
    ]
    total = timedelta(0)
    for step in steps:
        total += step.duration or (MAX_SETTLE if step.action == "settle" else timedelta(0))
        if total > limits.scenario_time:
            raise ScenarioError(
                f"{step.where}.{step.action}: refused: the steps so far ask for "
                f"{format_duration(total)} of simulated time (each settle without a time "
                f"counts {format_duration(MAX_SETTLE)}); a scenario runs "
                f"{limits.at_most('scenario_time')}"
            )
    return Scenario(tuple(steps))


def _parse_step(raw: object, path: Path, index: int, limits: Limits, line: int = 0) -> Step:
    where = f"{path}:{line}: steps[{index}]" if line else f"{path}: steps[{index}]"
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise ScenarioError(
            f"{where}: a step is a mapping with one key, one of {', '.join(STEP_KINDS)}"
        )
    ((action, value),) = raw.items()
    if action not in STEP_KINDS:
        raise ScenarioError(
            f"{where}: unknown step {excerpt(action)}; expected one of {', '.join(STEP_KINDS)}"
        )
    if action == "apply":
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(item, str) for item in items):
            raise ScenarioError(f"{where}.apply: expected a path or a list of paths")
        return Step("apply", paths=tuple(path.parent / item for item in items), where=where)
    if action in ("advance", "settle"):
        if action == "settle" and (value is None or value == {}):
            return Step("settle", where=where)
        if not isinstance(value, str):
            raise ScenarioError(f"{where}.{action}: expected a duration such as '30s' or '5m'")
        try:
            duration = parse_duration(value)
        except DurationError as error:
            raise ScenarioError(f"{where}.{action}: {error}") from None
        if duration > limits.step_time:
            raise ScenarioError(
                f"{where}.{action}: got {excerpt(value)}; a step runs {limits.at_most('step_time')}"
            )
        return Step(action, duration=duration, where=where)
    if action == "setNodeCondition":
        return Step(action, condition=_node_condition(value, f"{where}.{action}"), where=where)
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}.{action}: expected a mapping with kind and name")
    allowed = {"kind", "name", "namespace"} | ({"replicas"} if action == "scale" else set())
    unknown = set(value) - allowed
    if unknown:
        shown = ", ".join(sorted(excerpt(key) for key in unknown))
        raise ScenarioError(f"{where}.{action}: unknown field(s) {shown}")
    kind, name = value.get("kind"), value.get("name")
    if not isinstance(kind, str) or not isinstance(name, str):
        raise ScenarioError(f"{where}.{action}: 'kind' and 'name' are required strings")
    namespace = value.get("namespace", "")
    if not isinstance(namespace, str):
        raise ScenarioError(f"{where}.{action}.namespace: expected a string")
    replicas = 0
    if action == "scale":
        given = value.get("replicas")
        if not isinstance(given, int) or isinstance(given, bool) or given < 0:
            raise ScenarioError(f"{where}.scale.replicas: expected a whole number >= 0")
        replicas = given
    return Step(action, kind=kind, name=name, namespace=namespace, replicas=replicas, where=where)


_CONDITION_FIELDS = ("node", "selector", "count", "type", "status", "reason", "message")


def _node_condition(value: object, where: str) -> NodeConditionChange:
    if not isinstance(value, Mapping):
        raise ScenarioError(
            f'{where}: expected a mapping such as {{node: NAME, type: Ready, status: "False"}}'
        )
    unknown = set(value) - set(_CONDITION_FIELDS)
    if unknown:
        shown = ", ".join(sorted(excerpt(key) for key in unknown))
        raise ScenarioError(
            f"{where}: unknown field(s) {shown}; expected {', '.join(_CONDITION_FIELDS)}"
        )
    condition_type = value.get("type")
    if not isinstance(condition_type, str) or not condition_type.strip():
        got = "missing" if condition_type is None else f"got {excerpt(condition_type)}"
        raise ScenarioError(f"{where}.type: expected a condition type such as Ready, {got}")
    status = value.get("status")
    if isinstance(status, bool):
        raise ScenarioError(
            f'{where}.status: {status} is a YAML boolean; quote it: status: "{status}"'
        )
    if status not in CONDITION_STATUSES:
        raise ScenarioError(
            f"{where}.status: expected one of {', '.join(CONDITION_STATUSES)}, "
            f"got {excerpt(status)}"
        )
    texts = {}
    for name in ("node", "reason", "message"):
        text = value.get(name, "")
        if not isinstance(text, str):
            raise ScenarioError(f"{where}.{name}: expected a string, got {excerpt(text)}")
        texts[name] = text
    raw_selector = value.get("selector")
    if (raw_selector is None) == (not texts["node"]):
        raise ScenarioError(f"{where}: give either node (a Node's name) or selector (labels)")
    selector: tuple[tuple[str, str], ...] = ()
    if raw_selector is not None:
        if (
            not isinstance(raw_selector, Mapping)
            or not raw_selector
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw_selector.items())
        ):
            raise ScenarioError(
                f"{where}.selector: expected labels as a mapping of strings, such as "
                "{karpenter.sh/nodepool: default}"
            )
        selector = tuple(sorted(raw_selector.items()))
    count = value.get("count")
    if count is not None:
        if raw_selector is None:
            raise ScenarioError(f"{where}.count: only with selector")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ScenarioError(
                f"{where}.count: expected a whole number >= 1, got {excerpt(count)}"
            )
    return NodeConditionChange(
        type=condition_type,
        status=status,
        node=texts["node"],
        selector=selector,
        count=count,
        reason=texts["reason"],
        message=texts["message"],
    )


# -- running ----------------------------------------------------------------------------------

#: The NodePool CRD's rule against turning a pool static or dynamic once it exists.
STATIC_SWITCH_MESSAGE = (
    "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) "
    "provisioning modes"
)
#: The workload kinds a ``scale`` step scales (besides a static NodePool).
SCALABLE_KINDS: dict[str, type[Deployment | ReplicaSet | StatefulSet]] = {
    "Deployment": Deployment,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
}

log = logging.getLogger("nodewright.simulation")


def scenario_hint(file: Path) -> str | None:
    """A line saying ``file`` is a scenario, when it reads as one (given where manifests go)."""
    try:
        # Whether it reads as a scenario at all: the largest limits refuse the fewest.
        scenario = load_scenario(file, LARGE)
    except ScenarioError:
        return None
    if not scenario.steps:
        return None
    return (
        f"{file}: this is a scenario ({len(scenario.steps)} step(s)), not manifests; "
        f"pass it with --scenario {file}"
    )


def preload(
    scenario: Scenario, host: PluginHost, existing: Sequence[KubeObject], limits: Limits
) -> Scenario:
    """The scenario with its ``apply`` steps' manifests read and checked now (``existing``:
    the objects the run starts with), so a run needs no files, and a problem in them is found
    before anything runs. Raises :class:`InputError` as a run within ``limits`` would."""
    known = list(existing)
    steps = []
    for step in scenario.steps:
        if step.action != "apply" or step.objects is not None:
            steps.append(step)
            continue
        objects = load_checked(step.paths, host, known, file_hint=scenario_hint, limits=limits)
        known.extend(objects)
        steps.append(replace(step, objects=tuple(objects)))
    return Scenario(tuple(steps))


def run_scenario(
    simulation: Simulation, scenario: Scenario, host: PluginHost, limits: Limits
) -> None:
    """Run the steps in order, each followed by its implicit settle, within ``limits``."""
    for step in scenario.steps:
        run_step(simulation, step, host, limits)


def run_step(simulation: Simulation, step: Step, host: PluginHost, limits: Limits) -> None:
    """Run one step; raises :class:`InputError` naming the step when it cannot run, or would
    take the run beyond ``limits``."""
    try:
        _run_step(simulation, step, host, limits)
    except LimitReached as error:
        raise InputError([f"{step.where}.{step.action}: {error}"]) from None


def _run_step(simulation: Simulation, step: Step, host: PluginHost, limits: Limits) -> None:
    if step.action == "apply":
        _apply(simulation, step, host, limits)
    elif step.action == "advance":
        assert step.duration is not None
        simulation.advance(step.duration)
    elif step.action == "settle":
        if step.duration is None:
            simulation.settle()
        else:
            simulation.settle(step.duration)
    elif step.action == "scale" and step.kind == "NodePool":
        _scale_node_pool(simulation, step, limits)
    elif step.action == "scale":
        _scale_workload(simulation, step, limits)
    elif step.action == "setNodeCondition":
        _set_node_condition(simulation, step)
    elif step.action == "delete":
        _delete(simulation, step, host)


def _apply(simulation: Simulation, step: Step, host: PluginHost, limits: Limits) -> None:
    if step.objects is not None:
        objects = list(step.objects)
    else:
        applied = [
            node_class
            for kind in host.node_class_kinds()
            for node_class in simulation.cluster.list(kind.model)
        ]
        objects = load_checked(step.paths, host, applied, file_hint=scenario_hint, limits=limits)
        warn_static_without_gate(objects, simulation.operator.options)
    switched = _static_switches(simulation, objects)
    if switched:
        raise InputError([f"{step.where}.apply: {line}" for line in switched])
    problems = unusable_providers(host, objects)
    if problems:
        raise InputError([f"{step.where}.apply: {line}" for line in problems])
    replaced = {(type(obj), obj.namespace, obj.name) for obj in objects}
    too_many = (asked_pods(objects) + _pods_in_cluster(simulation, replaced)).problem(limits)
    if too_many is not None:
        raise InputError([f"{step.where}.apply: {too_many}"])
    simulation.apply(objects)
    simulation.settle()


def _static_switches(simulation: Simulation, objects: Sequence[KubeObject]) -> list[str]:
    """NodePools an update would turn static or dynamic, which the API server refuses."""
    problems = []
    for obj in objects:
        if not isinstance(obj, NodePool):
            continue
        current = simulation.cluster.get(NodePool, obj.name)
        if current is not None and (current.spec.replicas is None) != (obj.spec.replicas is None):
            problems.append(f'NodePool "{obj.name}": spec.replicas: {STATIC_SWITCH_MESSAGE}')
    return problems


def _scale_node_pool(simulation: Simulation, step: Step, limits: Limits) -> None:
    """``kubectl scale nodepool``: set ``spec.replicas`` of a static NodePool."""
    where = f"{step.where}.scale"
    if step.namespace:
        raise InputError([f"{where}.namespace: a NodePool is cluster-scoped; drop 'namespace'"])
    pool = simulation.cluster.get(NodePool, step.name)
    if pool is None:
        raise InputError([f"{where}: NodePool {step.name!r} does not exist"])
    if pool.spec.replicas is None:
        raise InputError(
            [
                f"{where}: NodePool {step.name!r} is dynamic (no spec.replicas), so it cannot be "
                f"scaled: {STATIC_SWITCH_MESSAGE}"
            ]
        )
    others = sum(
        p.spec.replicas or 0 for p in simulation.cluster.list(NodePool) if p.name != pool.name
    )
    too_many = limits.static_nodes_problem(others + step.replicas, "would ask")
    if too_many is not None:
        raise InputError([f"{where}.replicas: {too_many}"])
    pool = mutable(pool)
    pool.spec.replicas = step.replicas
    simulation.cluster.update(pool)
    log.info("Scaled nodepool %s to %d replica(s)", step.name, step.replicas)
    simulation.settle()


def _scale_workload(simulation: Simulation, step: Step, limits: Limits) -> None:
    """``kubectl scale``: set ``spec.replicas`` of a Deployment, ReplicaSet or StatefulSet."""
    kind = SCALABLE_KINDS.get(step.kind)
    if kind is None:
        raise InputError(
            [
                f"{step.where}.scale.kind: cannot scale a {step.kind}; "
                f"expected one of {', '.join([*SCALABLE_KINDS, 'NodePool'])}"
            ]
        )
    workload = simulation.cluster.get(kind, step.name, step.namespace or "default")
    if workload is None:
        raise InputError([f"{step.where}.scale: {step.kind} {step.name!r} does not exist"])
    others = _pods_in_cluster(simulation, {(kind, workload.namespace, workload.name)})
    scaled = mutable(workload)
    scaled.spec.replicas = step.replicas
    too_many = (others + asked_pods([scaled])).problem(limits)
    if too_many is not None:
        raise InputError([f"{step.where}.scale.replicas: {too_many}"])
    simulation.cluster.update(scaled)
    log.info("Scaled %s %s to %d replica(s)", step.kind.lower(), step.name, step.replicas)
    simulation.settle()


def _pods_in_cluster(
    simulation: Simulation, leaving_out: set[tuple[type[KubeObject], str, str]]
) -> AskedPods:
    """The pods the cluster's workloads ask for together, but for those ``leaving_out``."""
    state = simulation.cluster.state
    return asked_pods(
        obj
        for kind in WORKLOAD_KINDS
        for obj in state.objects(kind).values()
        if (kind, obj.namespace, obj.name) not in leaving_out
    )


def _set_node_condition(simulation: Simulation, step: Step) -> None:
    change = step.condition
    assert change is not None
    try:
        names = simulation.select_nodes(change.node, change.selector, change.count)
    except LookupError as error:
        key = "node" if change.node else "selector"
        raise InputError([f"{step.where}.setNodeCondition.{key}: {error}"]) from None
    for name in names:
        simulation.set_node_condition(
            name, change.type, change.status, change.reason, change.message
        )
    simulation.settle()


def _delete(simulation: Simulation, step: Step, host: PluginHost) -> None:
    registry = kind_registry(host)
    versions = registry.versions(step.kind)
    model = registry.lookup(versions[0], step.kind) if versions else None
    if model is None:
        raise InputError([f"{step.where}.delete.kind: unknown kind {step.kind!r}"])
    namespace = (step.namespace or "default") if model.NAMESPACED else ""
    if simulation.cluster.get(model, step.name, namespace) is None:
        raise InputError([f"{step.where}.delete: {step.kind} {step.name!r} does not exist"])
    simulation.cluster.delete(model, step.name, namespace)
    log.info("Deleted %s %s", step.kind.lower(), step.name)
    simulation.settle()
