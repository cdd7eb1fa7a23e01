"""The CapacityBuffer CRD (``autoscaling.x-k8s.io/v1beta1``, namespaced): its schema and CEL
rules refuse what SIG Autoscaling's refuse, and nodewright's own validation (what ``simulate``
checks) agrees on every sample."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from nodewright.api.capacitybuffer import CapacityBuffer, validate_capacity_buffer
from nodewright.commands.crds import all_crds
from nodewright.commands.host import load_host
from tests.crds.cel import validate

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    found = [
        dict(c) for c in all_crds(load_host()) if c["spec"]["names"]["kind"] == "CapacityBuffer"
    ]
    assert len(found) == 1
    return found[0]


def _buffer() -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "headroom", "namespace": "default"},
        "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 2, "limits": {"cpu": "4"}},
    }


def _errors(document: dict[str, Any]) -> list[str]:
    return [
        str(e.message) for e in validate_capacity_buffer(CapacityBuffer.model_validate(document))
    ]


def _schema_errors(crd: dict[str, Any], document: dict[str, Any]) -> list[str]:
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    found = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(document)]
    return found + [b.message for b in validate(crd, document)]


def test_the_crd_is_namespaced_with_a_status_subresource(crd: dict[str, Any]) -> None:
    assert crd["metadata"]["name"] == "capacitybuffers.autoscaling.x-k8s.io"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["shortNames"] == ["cb"]
    version = crd["spec"]["versions"][0]
    assert version["name"] == "v1beta1"
    assert version["subresources"] == {"status": {}}


def test_a_valid_buffer_passes_both(crd: dict[str, Any]) -> None:
    document = _buffer()
    assert _schema_errors(crd, document) == []
    assert _errors(document) == []
    scalable = _buffer()
    scalable["spec"] = {"scalableRef": {"kind": "Deployment", "name": "web"}, "percentage": 20}
    assert _schema_errors(crd, scalable) == []
    assert _errors(scalable) == []


def _without_replicas_and_limits(spec: dict[str, Any]) -> None:
    del spec["replicas"], spec["limits"]


def _with_both_refs(spec: dict[str, Any]) -> None:
    spec["scalableRef"] = {"kind": "Deployment", "name": "web"}


def _negative_replicas(spec: dict[str, Any]) -> None:
    spec["replicas"] = -1


def _negative_percentage(spec: dict[str, Any]) -> None:
    spec["percentage"] = -5


def _empty_template_name(spec: dict[str, Any]) -> None:
    spec["podTemplateRef"] = {"name": ""}


def _bad_limit(spec: dict[str, Any]) -> None:
    spec["limits"] = {"cpu": "lots"}


@pytest.mark.parametrize(
    ("edit", "crd_says", "we_say"),
    [
        (
            _without_replicas_and_limits,
            "If podTemplateRef is set, replicas or limits must also be set",
            "If podTemplateRef is set, replicas or limits must also be set",
        ),
        (
            _with_both_refs,
            "You must define either PodTemplateRef or ScalableRef, but not both",
            "You must define either PodTemplateRef or ScalableRef, but not both",
        ),
        (_negative_replicas, "-1 is less than the minimum of 0", "must be between 0"),
        (_negative_percentage, "-5 is less than the minimum of 0", "must be between 0"),
        (_empty_template_name, "'' should be non-empty", "must not be empty"),
        (_bad_limit, "'lots' does not match", "lots"),
    ],
)
def test_both_refuse_what_the_crd_refuses(
    crd: dict[str, Any], edit: Edit, crd_says: str, we_say: str
) -> None:
    document = copy.deepcopy(_buffer())
    edit(document["spec"])
    assert any(crd_says in e for e in _schema_errors(crd, document)), _schema_errors(crd, document)
    assert any(we_say in e for e in _errors(document)), _errors(document)
