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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from nodewright.api.duration import DurationError, parse_duration
from nodewright.api.excerpt import excerpt
from nodewright.api.manifests import ManifestError, parse_yaml, read_manifest

STEP_KINDS = ("apply", "scale", "delete", "advance", "settle", "setNodeCondition")
#: The statuses a Node condition can have.
CONDITION_STATUSES = ("True", "False", "Unknown")
#: The longest one ``advance`` or ``settle`` step may run: 30 days (Karpenter's default
#: ``expireAfter``), a bound on a run's time however large the number written.
MAX_STEP_DURATION = timedelta(hours=720)


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
    #: Where the step was written, for messages (``scenario.yaml: steps[2]``).
    where: str = ""


@dataclass(frozen=True)
class Scenario:
    steps: tuple[Step, ...] = field(default_factory=tuple)


def load_scenario(path: Path) -> Scenario:
    """Read a scenario file with the manifests' limits (depth, aliases, size)."""
    try:
        document = parse_yaml(read_manifest(path), str(path))
    except ManifestError as error:
        raise ScenarioError(str(error)) from None
    return parse_scenario(document, path)


def parse_scenario(document: object, path: Path) -> Scenario:
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
    # Steps read by parse_yaml know their lines (a plain list, in tests, does not).
    lines: list[int] = getattr(document, "item_lines", None) or [0] * len(document)
    steps = [
        _parse_step(raw, path, index, line)
        for index, (raw, line) in enumerate(zip(document, lines, strict=True))
    ]
    return Scenario(tuple(steps))


def _parse_step(raw: object, path: Path, index: int, line: int = 0) -> Step:
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
        if duration > MAX_STEP_DURATION:
            raise ScenarioError(f"{where}.{action}: at most 720h per step, got {excerpt(value)}")
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
