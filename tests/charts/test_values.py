"""values.schema.json: Helm checks the values against it before rendering, so a key the chart
does not know, or a Karpenter key given a value nodewright cannot honour, fails the install
with the key's path instead of being dropped without a word."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.charts.helm import CHART, CRD_CHART, REQUIRED, ValuesError, check_values, merge, render
from tests.charts.test_chart import KARPENTER_VALUES


def _values(override: dict[str, Any]) -> dict[str, Any]:
    return merge(merge(yaml.safe_load((CHART / "values.yaml").read_text()), REQUIRED), override)


def test_the_defaults_and_karpenters_defaults_pass() -> None:
    check_values(_values({}))
    check_values(_values(yaml.safe_load(KARPENTER_VALUES.read_text())))
    check_values(yaml.safe_load((CRD_CHART / "values.yaml").read_text()), CRD_CHART)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"logLevl": "debug"}, "(root): Additional properties are not allowed ('logLevl'"),
        (
            {"settings": {"logLevel": "debug"}},
            "settings: Additional properties are not allowed ('logLevel'",
        ),
        (
            {"controller": {"resource": {}}},
            "controller: Additional properties are not allowed ('resource'",
        ),
        (
            {"serviceMonitor": {"enable": True}},
            "serviceMonitor: Additional properties are not allowed ('enable'",
        ),
        (
            {"settings": {"featureGates": {"spotToSpot": True}}},
            "settings.featureGates: Additional properties are not allowed ('spotToSpot'",
        ),
        (
            {"settings": {"featureGates": "SpotToSpotConsolidation=true"}},
            "settings.featureGates: 'SpotToSpotConsolidation=true' is not of type 'object'",
        ),
        (
            {"settings": {"featureGates": {"nodeRepair": "yes"}}},
            "settings.featureGates.nodeRepair: 'yes' is not of type 'boolean'",
        ),
        ({"logLevel": "verbose"}, "logLevel: 'verbose' is not one of"),
        (
            {"settings": {"batchMaxDuration": "10 seconds"}},
            "settings.batchMaxDuration: '10 seconds' does not match",
        ),
        (
            {"controller": {"metrics": {"port": 0}}},
            "controller.metrics.port: 0 is less than the minimum of 1",
        ),
        ({"providers": {"enabled": "aws;kwok"}}, "providers.enabled: 'aws;kwok' does not match"),
        # Karpenter's keys for what nodewright does not do: their defaults pass, anything else
        # names the key.
        ({"settings": {"isolatedVPC": True}}, "settings.isolatedVPC: False was expected"),
        ({"settings": {"enableZonalShift": True}}, "settings.enableZonalShift: False was expected"),
        (
            {"settings": {"amiRefreshInterval": "5m"}},
            "settings.amiRefreshInterval: '1m' was expected",
        ),
        ({"webhook": {"enabled": True}}, "webhook.enabled: False was expected"),
        ({"logErrorOutputPaths": ["/var/log/zap"]}, "logErrorOutputPaths: ['stderr'] was expected"),
    ],
)
def test_a_key_it_cannot_honour_fails_with_its_path(override: dict[str, Any], message: str) -> None:
    with pytest.raises(ValuesError) as raised:
        check_values(_values(override))
    assert message in str(raised.value)


def test_render_refuses_values_the_schema_refuses() -> None:
    with pytest.raises(ValuesError, match=r"settings\.featureGates"):
        render(merge(REQUIRED, {"settings": {"featureGates": "SpotToSpotConsolidation=true"}}))


def test_every_value_in_values_yaml_is_in_the_schema_and_documented() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    install = (CHART.parents[1] / "docs" / "install.md").read_text()

    def paths(values: dict[str, Any], node: dict[str, Any], prefix: str = "") -> list[str]:
        found = []
        for key, value in values.items():
            assert key in node.get("properties", {}), f"{prefix}{key} is not in the schema"
            child = node["properties"][key]
            # a map of flags (settings.featureGates) is documented as one value
            flags = all(c.get("type") == "boolean" for c in child.get("properties", {}).values())
            if isinstance(value, dict) and "properties" in child and not flags:
                found += paths(value, child, f"{prefix}{key}.")
            else:
                found.append(f"{prefix}{key}")
        return found

    values = yaml.safe_load((CHART / "values.yaml").read_text())
    undocumented = [p for p in paths(values, schema) if f"`{p}`" not in install]
    assert undocumented == [], f"docs/install.md does not list {undocumented}"


def test_every_karpenter_key_nodewright_takes_differently_is_documented() -> None:
    """A Karpenter key whose schema carries a description starting "Karpenter's value only"
    or "Accepted, no effect" is listed in docs/install.md's table of differences."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    install = (CHART.parents[1] / "docs" / "install.md").read_text()

    def differing(node: dict[str, Any], prefix: str = "") -> list[str]:
        found = []
        for key, child in node.get("properties", {}).items():
            text = str(child.get("description", ""))
            if text.startswith(("Karpenter's value only", "Accepted, no effect")):
                found.append(f"{prefix}{key}")
            found += differing(child, f"{prefix}{key}.")
        return found

    keys = differing(schema)
    assert "settings.isolatedVPC" in keys
    missing = [k for k in keys if f"`{k}`" not in install]
    assert missing == [], f"docs/install.md does not explain {missing}"
