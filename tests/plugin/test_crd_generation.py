"""A NodeClass CRD generated from its pydantic model (``nodewright.plugin.node_class_crd``):
field names, types, constraints, defaults and enums come from the model; CEL rules and
CRD-only keywords are declared beside the fields; the result is a valid structural CRD whose
rules the API server would evaluate (checked with cel-python)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import kubernetes_validate
import pytest
from pydantic import ConfigDict, Field

from nodewright.api.karpenter import NodeClass, NodeClassStatus
from nodewright.api.meta import Model, StrictModel
from nodewright.plugin import (
    CrdGenerationError,
    Int32,
    Int64,
    Rule,
    Schema,
    SchemaFrom,
    ServedVersion,
    column,
    model_schema,
    node_class_crd,
    validations,
)
from tests.crds.cel import validate


class Disk(StrictModel):
    size_gb: Int32 = Field(default=64, ge=8, le=1024)
    kind: Literal["ssd", "hdd"] = "ssd"


class ImageStatus(Model):
    id: str
    zone: str | None = None


class WidgetSpec(StrictModel):
    model_config = ConfigDict(
        json_schema_extra=validations(
            Rule("!has(self.spot) || !self.spot || has(self.zones)", "spot needs zones")
        )
    )

    image: Annotated[
        str,
        Schema(pattern=r"^img-[0-9a-z]+$"),
        Rule("self == oldSelf", "image is immutable"),
    ]
    zones: list[str] = Field(default_factory=list, min_length=1, max_length=3)
    spot: bool | None = None
    disk: Disk | None = None
    tags: Annotated[dict[str, str], Schema(maxProperties=5)] = Field(default_factory=dict)
    bytes_per_second: Int64 | None = Field(default=None, description="Throttle.")
    retired: Annotated[bool, Schema(default=None)] = False


class WidgetStatus(NodeClassStatus):
    images: list[Annotated[dict[str, Any], SchemaFrom(ImageStatus)]] = Field(default_factory=list)


class WidgetNodeClass(NodeClass):
    API_VERSION: ClassVar[str] = "widgets.example.com/v1"
    KIND: ClassVar[str] = "WidgetNodeClass"

    spec: WidgetSpec
    status: WidgetStatus = Field(default_factory=WidgetStatus)


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return node_class_crd(
        WidgetNodeClass,
        short_names=["wnc"],
        columns=[column("Image", ".spec.image", priority=1)],
        served_versions=[ServedVersion("v1alpha1", "use v1")],
    )


def _spec(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema["properties"]["spec"]  # type: ignore[no-any-return]


def test_it_is_a_valid_apiextensions_object(crd: dict[str, Any]) -> None:
    kubernetes_validate.validate(crd, "1.30.0", strict=True)  # raises when invalid
    assert crd["metadata"]["name"] == "widgetnodeclasses.widgets.example.com"
    assert crd["spec"]["scope"] == "Cluster"
    stored, served = crd["spec"]["versions"]
    assert (stored["name"], stored["storage"], stored["subresources"]) == (
        "v1",
        True,
        {"status": {}},
    )
    assert (served["name"], served["storage"], served["deprecationWarning"]) == (
        "v1alpha1",
        False,
        "use v1",
    )
    assert served["schema"] == stored["schema"]
    assert served["schema"] is not stored["schema"]  # no YAML anchors in `nodewright crds`


def test_fields_types_constraints_and_defaults_follow_the_model(crd: dict[str, Any]) -> None:
    spec = _spec(crd)
    properties = spec["properties"]
    assert list(properties) == sorted(properties)
    assert spec["required"] == ["image"]
    assert properties["image"]["type"] == "string"
    assert properties["image"]["pattern"] == r"^img-[0-9a-z]+$"
    assert properties["zones"] == {
        "type": "array",
        "items": {"type": "string"},
        "minItems": 1,
        "maxItems": 3,
    }
    assert properties["disk"]["properties"]["sizeGb"] == {
        "type": "integer",
        "format": "int32",
        "minimum": 8,
        "maximum": 1024,
        "default": 64,
    }
    assert properties["disk"]["properties"]["kind"] == {
        "type": "string",
        "enum": ["ssd", "hdd"],
        "default": "ssd",
    }
    assert properties["tags"]["maxProperties"] == 5
    assert properties["bytesPerSecond"] == {
        "type": "integer",
        "format": "int64",
        "description": "Throttle.",
    }
    assert properties["retired"] == {"type": "boolean"}  # Schema(default=None) drops it


def test_status_has_conditions_and_shaped_raw_fields(crd: dict[str, Any]) -> None:
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    status = schema["properties"]["status"]["properties"]
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]
    assert status["images"]["items"]["required"] == ["id"]
    assert set(status["images"]["items"]["properties"]) == {"id", "zone"}


def test_cel_rules_declared_beside_fields_are_evaluated(crd: dict[str, Any]) -> None:
    good = {"spec": {"image": "img-1", "zones": ["a"], "spot": True}}
    assert validate(crd, good) == []
    broken = validate(crd, {"spec": {"image": "img-1", "spot": True}})
    assert [b.message for b in broken] == ["spot needs zones"]
    changed = validate(crd, {"spec": {"image": "img-2"}}, old={"spec": {"image": "img-1"}})
    assert [(b.path, b.message) for b in changed] == [(".spec.image", "image is immutable")]


def test_printer_columns_and_names(crd: dict[str, Any]) -> None:
    version = crd["spec"]["versions"][0]
    assert version["additionalPrinterColumns"] == [
        {"name": "Image", "type": "string", "jsonPath": ".spec.image", "priority": 1}
    ]
    assert crd["spec"]["names"]["shortNames"] == ["wnc"]
    assert crd["spec"]["names"]["categories"] == ["karpenter"]


def test_a_type_without_a_schema_names_the_field() -> None:
    class Bad(StrictModel):
        choice: int | str

    with pytest.raises(CrdGenerationError, match=r"Bad\.choice"):
        model_schema(Bad)
