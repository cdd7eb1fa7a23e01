"""``helm template`` for the tests: the values merged as Helm merges them, checked against the
chart's values.schema.json as Helm checks them, then rendered with the Go-template subset in
:mod:`tests.charts.gotemplate` (no helm binary can be installed from the package registries
the project uses)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.charts.gotemplate import render_chart

CHARTS = Path(__file__).resolve().parents[2] / "charts"
CHART = CHARTS / "nodewright"
CRD_CHART = CHARTS / "nodewright-crd"
REQUIRED = {"settings": {"clusterName": "test-cluster"}}


class ValuesError(ValueError):
    """The values break the chart's schema; one line per problem, each naming its key."""


def merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's coalescing of user values over the chart's: maps merge, anything else replaces
    (null removes the key)."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(root)"


def check_values(values: Mapping[str, Any], chart: Path = CHART) -> None:
    """Raise :class:`ValuesError` when ``values`` break ``chart``'s values.schema.json."""
    schema = json.loads((chart / "values.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    problems = sorted(validator.iter_errors(values), key=lambda e: list(e.absolute_path))
    if problems:
        raise ValuesError("\n".join(f"{_path(e)}: {e.message}" for e in problems))


def values_of(overrides: Mapping[str, Any], chart: Path = CHART) -> dict[str, Any]:
    values = yaml.safe_load((chart / "values.yaml").read_text())
    return merge(values, overrides)


def render(
    overrides: Mapping[str, Any] = REQUIRED,
    chart: Path = CHART,
    release: str = "nodewright",
    namespace: str = "kube-system",
) -> list[dict[str, Any]]:
    """``helm template RELEASE CHART -n NAMESPACE -f overrides`` as parsed objects."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    values = values_of(overrides, chart)
    check_values(values, chart)
    context = {
        "Values": values,
        "Release": {"Name": release, "Namespace": namespace, "Service": "Helm"},
        "Chart": {
            "Name": meta["name"],
            "Version": meta["version"],
            "AppVersion": meta["appVersion"],
        },
    }
    templates = {path.name: path.read_text() for path in sorted((chart / "templates").iterdir())}
    objects: list[dict[str, Any]] = []
    for name, text in render_chart(templates, context).items():
        try:
            documents = list(yaml.safe_load_all(text))
        except yaml.YAMLError as error:
            raise AssertionError(f"{name} renders invalid YAML: {error}\n{text}") from error
        objects.extend(d for d in documents if d)
    return objects
