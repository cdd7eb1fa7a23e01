"""Scenario files: the steps a simulation runs, in order.

A scenario is YAML: either a list of steps or a mapping with ``steps``. Each step is a
mapping with exactly one key:

``apply: PATH`` (or a list of paths)
    Load manifests, relative to the scenario file, and create or update them.
``scale: {kind: Deployment, name: inflate, namespace: default, replicas: 3}``
    Set ``spec.replicas`` of a Deployment, ReplicaSet or StatefulSet.
``delete: {kind: Deployment, name: inflate, namespace: default}``
    Delete an object (finalizers are honoured: a Node is drained first).
``advance: 5m``
    Let simulated time pass.
``settle: 30m`` (or ``settle: {}``)
    Run until the cluster is quiet (at most the given time, default two hours).

Every step but ``advance`` and ``settle`` is followed by an implicit ``settle``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import yaml

from nodewright.api.duration import DurationError, parse_duration

STEP_KINDS = ("apply", "scale", "delete", "advance", "settle")


class ScenarioError(ValueError):
    """A scenario file that cannot be run; the message names the file and the step."""


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
    #: Where the step was written, for messages (``scenario.yaml: steps[2]``).
    where: str = ""


@dataclass(frozen=True)
class Scenario:
    steps: tuple[Step, ...] = field(default_factory=tuple)


def load_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioError(f"{path}: cannot read scenario: {error.strerror}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or str(error)
        raise ScenarioError(f"{where}: malformed YAML: {problem}") from None
    return parse_scenario(document, path)


def parse_scenario(document: object, path: Path) -> Scenario:
    if document is None:
        return Scenario()
    if isinstance(document, Mapping):
        unknown = set(document) - {"steps"}
        if unknown:
            raise ScenarioError(f"{path}: unknown key(s) {sorted(unknown)}; expected 'steps'")
        document = document.get("steps") or []
    if not isinstance(document, Sequence) or isinstance(document, str):
        raise ScenarioError(f"{path}: a scenario is a list of steps")
    steps = [_parse_step(raw, path, index) for index, raw in enumerate(document)]
    return Scenario(tuple(steps))


def _parse_step(raw: object, path: Path, index: int) -> Step:
    where = f"{path}: steps[{index}]"
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise ScenarioError(
            f"{where}: a step is a mapping with one key, one of {', '.join(STEP_KINDS)}"
        )
    ((action, value),) = raw.items()
    if action not in STEP_KINDS:
        raise ScenarioError(
            f"{where}: unknown step {action!r}; expected one of {', '.join(STEP_KINDS)}"
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
            return Step(action, duration=parse_duration(value), where=where)
        except DurationError as error:
            raise ScenarioError(f"{where}.{action}: {error}") from None
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}.{action}: expected a mapping with kind and name")
    allowed = {"kind", "name", "namespace"} | ({"replicas"} if action == "scale" else set())
    unknown = set(value) - allowed
    if unknown:
        raise ScenarioError(f"{where}.{action}: unknown field(s) {sorted(unknown)}")
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
