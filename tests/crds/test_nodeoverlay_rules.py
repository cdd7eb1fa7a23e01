"""The NodeOverlay CRD (``karpenter.sh/v1alpha1``): its schema and CEL rules reject what
Karpenter's reject, and nodewright's own validation (what ``simulate`` and the status
controller check) agrees on every sample."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from nodewright.api.nodeoverlay import NodeOverlay, by_weight
from nodewright.api.validation import validate_node_overlay
from nodewright.commands.crds import all_crds
from nodewright.commands.host import load_host
from tests.crds.cel import validate

Edit = Callable[[dict[str, Any]], object]  # what it returns is ignored


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    found = [dict(c) for c in all_crds(load_host()) if c["spec"]["names"]["kind"] == "NodeOverlay"]
    assert len(found) == 1
    return found[0]


def _overlay() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "gpu"},
        "spec": {
            "requirements": [
                {"key": "karpenter.kwok.sh/instance-family", "operator": "In", "values": ["g"]},
                {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
                {"key": "karpenter.sh/capacity-type", "operator": "NotIn", "values": ["spot"]},
                {"key": "karpenter.kwok.sh/instance-cpu", "operator": "Gt", "values": ["2"]},
                {"key": "team", "operator": "Exists"},
            ],
            "priceAdjustment": "-10%",
            "capacity": {"example.com/gpu": "1", "smarter-devices/fuse": 2},
            "weight": 10,
        },
    }


def _errors(document: dict[str, Any]) -> list[str]:
    overlay = NodeOverlay.model_validate(document)
    return [f"{e.field}: {e.message}" for e in validate_node_overlay(overlay)]


def _schema_errors(crd: dict[str, Any], document: dict[str, Any]) -> list[str]:
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    found = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(document)]
    return found + [b.message for b in validate(crd, document)]


def test_a_valid_overlay_passes_the_crd_and_nodewright(crd: dict[str, Any]) -> None:
    overlay = _overlay()
    assert _schema_errors(crd, overlay) == []
    assert _errors(overlay) == []
    absolute = _overlay()
    absolute["spec"].pop("priceAdjustment")
    absolute["spec"]["price"] = "0.25"
    assert _schema_errors(crd, absolute) == []
    assert _errors(absolute) == []
    for adjustment in ("+1.5", "-0.5", "+10%", "-99.5%", "-100%", "+250%"):
        absolute["spec"].pop("price", None)
        absolute["spec"]["priceAdjustment"] = adjustment
        assert _schema_errors(crd, absolute) == [], adjustment
        assert _errors(absolute) == [], adjustment


def _requirement(**requirement: Any) -> Edit:
    return lambda overlay: overlay["spec"]["requirements"].append(dict(requirement))


def _spec(**fields: Any) -> Edit:
    return lambda overlay: overlay["spec"].update(fields)


INVALID: dict[str, tuple[Edit, str, str]] = {
    # case: (edit, what the CRD says, what nodewright says)
    "both prices": (_spec(price="1"), "cannot set both", "cannot set both"),
    "negative price": (
        lambda o: (o["spec"].pop("priceAdjustment"), o["spec"].update(price="-1")),
        "does not match",
        "spec.price",
    ),
    "unsigned adjustment": (_spec(priceAdjustment="10"), "does not match", "priceAdjustment"),
    "decrease over 100 %": (_spec(priceAdjustment="-150%"), "does not match", "priceAdjustment"),
    "weight 0": (_spec(weight=0), "less than the minimum", "spec.weight"),
    "weight 10001": (_spec(weight=10001), "greater than the maximum", "spec.weight"),
    "cpu capacity": (
        lambda o: o["spec"]["capacity"].update(cpu="4"),
        "invalid resource restricted",
        "spec.capacity[cpu]",
    ),
    "pods capacity": (
        lambda o: o["spec"]["capacity"].update(pods="4"),
        "invalid resource restricted",
        "spec.capacity[pods]",
    ),
    "NotIn without values": (
        _requirement(key="team", operator="NotIn", values=[]),
        "requirements with operator 'NotIn' must have a value defined",
        "operator NotIn needs at least one value",
    ),
    "In without values": (
        _requirement(key="team", operator="In", values=[]),
        "requirements with operator 'In' must have a value defined",
        "operator In needs at least one value",
    ),
    "Gt with a word": (
        _requirement(key="karpenter.kwok.sh/instance-cpu", operator="Gt", values=["many"]),
        "must have a single positive integer value",
        "non-negative integer",
    ),
    "hostname": (
        _requirement(key="kubernetes.io/hostname", operator="In", values=["a"]),
        'label "kubernetes.io/hostname" is restricted',
        "restricted",
    ),
    "karpenter.sh domain": (
        _requirement(key="karpenter.sh/custom", operator="Exists"),
        'label domain "karpenter.sh" is restricted',
        "restricted domain",
    ),
    "no requirements": (
        lambda o: o["spec"].pop("requirements"),
        "'requirements' is a required property",
        "spec.requirements: is required",
    ),
    "minValues": (
        _requirement(key="team", operator="In", values=["a"], minValues=1),
        "Additional properties",
        "",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_an_invalid_overlay_is_refused_by_the_crd_and_nodewright(
    crd: dict[str, Any], case: str
) -> None:
    edit, schema_says, nodewright_says = INVALID[case]
    overlay = _overlay()
    edit(overlay)
    if case == "minValues":
        # v1alpha1 requirements have no minValues: the model refuses the unknown field
        with pytest.raises(ValueError, match=r"min_values|minValues"):
            NodeOverlay.model_validate(overlay)
        return
    broken = _schema_errors(crd, overlay)
    assert any(schema_says in message for message in broken), broken
    errors = _errors(overlay)
    assert any(nodewright_says in error for error in errors), errors


def test_overlays_apply_heaviest_first_then_by_name_from_z_to_a() -> None:
    def named(name: str, weight: int | None) -> NodeOverlay:
        document = copy.deepcopy(_overlay())
        document["metadata"]["name"] = name
        document["spec"]["weight"] = weight
        return NodeOverlay.model_validate(document)

    ordered = by_weight([named("a", 5), named("b", None), named("c", 5), named("d", 50)])
    assert [o.name for o in ordered] == ["d", "c", "a", "b"]
