"""Quantities, durations, Karpenter's defaults and camelCase round trips."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from nodewright.api.duration import (
    DurationError,
    format_duration,
    parse_duration,
    parse_optional_duration,
)
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.quantity import QuantityError, format_quantity, parse_quantity

GI = 1024**3


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("1", 1000),
        ("500m", 500),
        ("1.5", 1500),
        ("0.1", 100),
        (".5", 500),
        ("2Ki", 2048 * 1000),
        ("4Gi", 4 * GI * 1000),
        ("1.5Gi", 3 * GI * 500),
        ("1k", 1_000_000),
        ("1M", 10**9),
        ("1e3", 1_000_000),
        ("1E3", 1_000_000),
        ("1E", 10**21),
        ("1n", 1),  # sub-milli rounds up, as the API server does for requests
        ("100u", 1),
        ("-1", -1000),
        ("+2", 2000),
        (3, 3000),
        (0.25, 250),
    ],
)
def test_parse_quantity(text: str | int | float, milli: int) -> None:
    assert parse_quantity(text) == milli


@pytest.mark.parametrize("text", ["", "lots", "1 Gi", "1GB", "1.2.3", "Gi", "1e", "--1"])
def test_parse_quantity_rejects_non_quantities(text: str) -> None:
    with pytest.raises(QuantityError, match="not a quantity"):
        parse_quantity(text)


def test_parse_quantity_rejects_booleans() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(True)


@pytest.mark.parametrize(
    ("milli", "resource", "text"),
    [
        (1500, "cpu", "1500m"),
        (2000, "cpu", "2"),
        (4 * GI * 1000, "memory", "4Gi"),
        (1536 * 1024**2 * 1000, "memory", "1536Mi"),
        (1000 * 1000, "memory", "1000"),
        (110_000, "pods", "110"),
    ],
)
def test_format_quantity(milli: int, resource: str, text: str) -> None:
    assert format_quantity(milli, resource) == text
    assert parse_quantity(text) == milli


@pytest.mark.parametrize(
    ("text", "delta"),
    [
        ("0s", timedelta(0)),
        ("0", timedelta(0)),
        ("30s", timedelta(seconds=30)),
        ("5m", timedelta(minutes=5)),
        ("720h", timedelta(hours=720)),
        ("1h30m", timedelta(minutes=90)),
        ("1h30m15s", timedelta(seconds=5415)),
        ("1.5h", timedelta(minutes=90)),
        ("250ms", timedelta(milliseconds=250)),
    ],
)
def test_parse_duration(text: str, delta: timedelta) -> None:
    assert parse_duration(text) == delta


@pytest.mark.parametrize("text", ["", "5", "5d", "1h 30m", "h", "Never", "1h30"])
def test_parse_duration_rejects_non_durations(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


def test_never_means_no_limit() -> None:
    assert parse_optional_duration("Never") is None
    assert parse_optional_duration("720h") == timedelta(hours=720)


def test_format_duration_round_trips() -> None:
    for delta in (timedelta(0), timedelta(hours=720), timedelta(seconds=3725)):
        assert parse_duration(format_duration(delta)) == delta
    assert format_duration(timedelta(seconds=3725)) == "1h2m5s"


# --- defaults and round trips -----------------------------------------------------------------

MINIMAL_POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.kwok.sh",
                    "kind": "KWOKNodeClass",
                    "name": "default",
                },
                "requirements": [],
            }
        }
    },
}


def test_minimal_node_pool_gets_karpenters_defaults() -> None:
    pool = NodePool.model_validate(MINIMAL_POOL)
    spec = pool.to_dict()["spec"]
    assert spec["template"]["spec"]["expireAfter"] == "720h"
    assert spec["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
        "budgets": [{"nodes": "10%"}],
    }
    assert "weight" not in spec
    assert "terminationGracePeriod" not in spec["template"]["spec"]


def test_explicit_empty_budgets_stay_empty() -> None:
    document = copy.deepcopy(MINIMAL_POOL)
    document["spec"]["disruption"] = {"budgets": []}
    assert NodePool.model_validate(document).spec.disruption.budgets == []


def test_yaml_numbers_become_strings_where_the_api_has_strings() -> None:
    document = copy.deepcopy(MINIMAL_POOL)
    document["spec"]["limits"] = {"cpu": 100, "memory": "1Ti"}
    document["spec"]["disruption"] = {"budgets": [{"nodes": 5}]}
    document["spec"]["template"]["spec"]["requirements"] = [
        {"key": "example.com/generation", "operator": "Gt", "values": [3]}
    ]
    pool = NodePool.model_validate(document)
    assert pool.spec.limits == {"cpu": "100", "memory": "1Ti"}
    assert pool.spec.disruption.budgets[0].nodes == "5"
    assert pool.spec.template.spec.requirements[0].values == ["3"]


def test_node_pool_round_trip_keeps_camel_case() -> None:
    document: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu", "labels": {"team": "ml"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"accelerator": "nvidia"}},
                "spec": {
                    "nodeClassRef": {"group": "g", "kind": "K", "name": "n"},
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In",
                         "values": ["spot"], "minValues": 1},
                    ],
                    "startupTaints": [{"key": "init", "effect": "NoSchedule"}],
                    "expireAfter": "Never",
                    "terminationGracePeriod": "48h",
                },
            },
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "5m",
                "budgets": [{"nodes": "0", "schedule": "@daily", "duration": "1h",
                             "reasons": ["Drifted"]}],
            },
            "limits": {"cpu": "1k"},
            "weight": 50,
        },
    }  # fmt: skip
    out = NodePool.model_validate(document).to_dict()
    assert out["spec"]["template"]["spec"]["requirements"][0]["minValues"] == 1
    assert out["spec"]["template"]["spec"]["startupTaints"] == [
        {"key": "init", "effect": "NoSchedule"}
    ]
    assert out["spec"]["template"]["spec"]["terminationGracePeriod"] == "48h"
    assert out["spec"]["disruption"] == document["spec"]["disruption"]
    assert out["spec"]["weight"] == 50
    assert NodePool.model_validate(out) == NodePool.model_validate(document)


def test_node_claim_status_uses_kubernetes_spelling() -> None:
    claim = NodeClaim.model_validate(
        {
            "metadata": {"name": "c"},
            "status": {"providerID": "kwok://c", "imageID": "img", "nodeName": "n1",
                       "capacity": {"cpu": 4}},
        }
    )  # fmt: skip
    status = claim.to_dict()["status"]
    assert status["providerID"] == "kwok://c"
    assert status["imageID"] == "img"
    assert status["nodeName"] == "n1"
    assert status["capacity"] == {"cpu": "4"}
    assert claim.spec.expire_after == "720h"
