"""A NodeClass CustomResourceDefinition generated from the NodeClass's pydantic model.

The CRD's OpenAPI schema follows the model: property names are the fields' wire names
(aliases), types come from the annotations (``str``, ``int``, ``bool``, ``float``,
``datetime``, ``Literal`` enums, ``list``, ``dict[str, ...]``, nested models), ``required``
lists the fields without a default, a field's plain default (a string, number or boolean) is
the CRD's default, and the model's own constraints (``Field(ge=, le=, min_length=,
max_length=, pattern=)``) become ``minimum``, ``maximum``, ``minItems``/``minLength``/
``minProperties`` and so on. What only the API server checks is declared beside the field,
as ``Annotated`` metadata the model itself ignores::

    from typing import Annotated

    from pydantic import Field

    from nodewright.plugin import Int32, Rule, Schema, StrictModel

    class MySpec(StrictModel):
        image: Annotated[
            str,
            Schema(pattern=r"^img-[0-9a-z]+$"),
            Rule("self == oldSelf", "image is immutable"),
        ]
        max_pods: Int32 | None = Field(default=None, ge=0)

The tutorial (docs/plugins/writing-a-provider.md) shows a whole NodeClass with its CRD.

Rules on a whole model (CEL over several fields) go in its ``model_config``:
``ConfigDict(json_schema_extra=validations(Rule(...), ...))``; a field's
``Field(json_schema_extra={...})`` is merged into its schema too. A field the model keeps as a
raw dict or list of dicts can be given a shape with :class:`SchemaFrom`.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from nodewright.api.crds.schema import QUANTITY_PATTERN, conditions, crd
from nodewright.api.karpenter import CONDITION_READY, NodeClass
from nodewright.api.meta import Condition, Model

#: An OpenAPI v3 schema, as a plain dict.
OpenAPI = dict[str, Any]

VALIDATIONS = "x-kubernetes-validations"


@dataclass(frozen=True)
class Rule:
    """A CEL rule (one entry of ``x-kubernetes-validations``) on the schema it annotates.

    ``self`` is the annotated value; ``oldSelf`` its value before an update (transition rule).
    ``extra`` holds the other keys Kubernetes allows (``reason``, ``fieldPath``,
    ``messageExpression``, ``optionalOldSelf``).
    """

    rule: str
    message: str
    extra: tuple[tuple[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "message": self.message, **dict(self.extra)}


class Schema:
    """OpenAPI keywords merged into the annotated field's schema (``format``, ``pattern``,
    ``default``, ``maxProperties``, ``x-kubernetes-list-type``, ...). A keyword given as None
    removes what the model implied (``Schema(default=None)``: no default in the CRD)."""

    __slots__ = ("keywords",)

    def __init__(self, keywords: Mapping[str, Any] | None = None, /, **more: Any) -> None:
        self.keywords: tuple[tuple[str, Any], ...] = tuple({**(keywords or {}), **more}.items())

    def __repr__(self) -> str:
        return f"Schema({dict(self.keywords)!r})"


@dataclass(frozen=True)
class SchemaFrom:
    """The annotated field's schema is generated from ``model`` instead of its annotation:
    for a field the model keeps as written (``dict[str, Any]``) that the CRD still shapes."""

    model: type[BaseModel]


#: Integer fields as Kubernetes' Go types declare them.
Int32 = Annotated[int, Schema(format="int32")]
Int64 = Annotated[int, Schema(format="int64")]


def validations(*rules: Rule) -> dict[str, Any]:
    """``json_schema_extra`` for a model's ``model_config``: CEL rules over the whole model."""
    return {VALIDATIONS: [r.as_dict() for r in rules]}


class ResolvedRequirement(Model):
    """A requirement as a NodeClass status reports it (what a resolved image needs), for
    :class:`SchemaFrom` shapes of status entries: written by the controller, unchecked."""

    key: str
    operator: str
    values: Annotated[list[str], Schema({"x-kubernetes-list-type": "atomic"})] = Field(
        default_factory=list
    )


class CrdGenerationError(TypeError):
    """A model field whose type has no OpenAPI schema; the message names the field."""


# --- the walk -------------------------------------------------------------------------------------

_SCALARS: dict[Any, OpenAPI] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    datetime: {"type": "string", "format": "date-time"},
}
_PRESERVE: OpenAPI = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def model_schema(model: type[BaseModel]) -> OpenAPI:
    """The structural OpenAPI v3 schema of ``model`` (an object with its fields as properties,
    in alphabetical order as controller-gen writes them)."""
    fields = {_wire_name(name, info): (name, info) for name, info in model.model_fields.items()}
    properties = {}
    for wire in sorted(fields):
        name, info = fields[wire]
        properties[wire] = _field_schema(model, name, info)
    schema: OpenAPI = {"type": "object", "properties": properties}
    required = sorted(w for w, (_, info) in fields.items() if info.is_required())
    if required:
        schema["required"] = required
    extra = model.model_config.get("json_schema_extra")
    if isinstance(extra, Mapping):
        _merge(schema, extra)
    return schema


def _wire_name(name: str, info: FieldInfo) -> str:
    return info.serialization_alias or info.alias or name


def _field_schema(model: type[BaseModel], name: str, info: FieldInfo) -> OpenAPI:
    where = f"{model.__name__}.{name}"
    schema = _schema(info.annotation, list(info.metadata), where)
    if info.description:
        schema.setdefault("description", info.description)
    default = info.default
    if default is not PydanticUndefined and isinstance(default, str | int | float | bool):
        schema.setdefault("default", default)
    if isinstance(info.json_schema_extra, Mapping):
        _merge(schema, info.json_schema_extra)
    _apply(schema, [m for m in info.metadata if isinstance(m, Schema)])
    return schema


def _schema(annotation: Any, metadata: list[Any], where: str) -> OpenAPI:
    """The schema of one annotation; ``metadata`` are the constraints that apply to it."""
    while get_origin(annotation) is Annotated:
        annotation, *inner = get_args(annotation)
        metadata = [*metadata, *inner]
    shape = next((m for m in metadata if isinstance(m, SchemaFrom)), None)
    schema = model_schema(shape.model) if shape is not None else _type_schema(annotation, where)
    _constrain(schema, metadata)
    return schema


def _type_schema(annotation: Any, where: str) -> OpenAPI:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        if len(options) == 1:
            return _schema(options[0], [], where)
        raise CrdGenerationError(f"{where}: a union of {options} has no structural schema")
    if origin is Literal:
        values = list(get_args(annotation))
        kinds = {type(v) for v in values}
        if len(kinds) != 1 or next(iter(kinds)) not in (str, int):
            raise CrdGenerationError(f"{where}: Literal values must be all strings or all ints")
        return {**_SCALARS[kinds.pop()], "enum": values}
    if origin in (list, tuple, Sequence) or annotation in (list, tuple):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        if len(args) != 1:
            raise CrdGenerationError(f"{where}: a list needs one item type, not {annotation}")
        if args[0] is Condition:
            return conditions()
        return {"type": "array", "items": _schema(args[0], [], where + "[]")}
    if origin in (dict, Mapping) or annotation is dict:
        key_value = get_args(annotation)
        if not key_value or key_value[1] is Any:
            return dict(_PRESERVE)
        if key_value[0] is not str:
            raise CrdGenerationError(f"{where}: map keys must be strings")
        return {"type": "object", "additionalProperties": _schema(key_value[1], [], where + "{}")}
    if annotation is Any:
        return dict(_PRESERVE)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return model_schema(annotation)
    if annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    raise CrdGenerationError(f"{where}: {annotation!r} has no OpenAPI schema")


_LENGTHS = {"array": "Items", "object": "Properties", "string": "Length"}


def _constrain(schema: OpenAPI, metadata: list[Any]) -> None:
    """Applies pydantic's constraints and the CRD-only annotations to ``schema``."""
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            schema["minimum"] = item.ge
        elif isinstance(item, annotated_types.Le):
            schema["maximum"] = item.le
        elif isinstance(item, annotated_types.Gt):
            schema["minimum"], schema["exclusiveMinimum"] = item.gt, True
        elif isinstance(item, annotated_types.Lt):
            schema["maximum"], schema["exclusiveMaximum"] = item.lt, True
        elif isinstance(item, annotated_types.MinLen):
            schema["min" + _LENGTHS.get(schema.get("type", ""), "Length")] = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            schema["max" + _LENGTHS.get(schema.get("type", ""), "Length")] = item.max_length
        elif isinstance(getattr(item, "pattern", None), str):
            schema["pattern"] = item.pattern
        elif isinstance(item, Rule):
            schema.setdefault(VALIDATIONS, []).append(item.as_dict())
        elif isinstance(item, FieldInfo):
            _constrain(schema, list(item.metadata))
    _apply(schema, [m for m in metadata if isinstance(m, Schema)])


def _apply(schema: OpenAPI, overrides: list[Schema]) -> None:
    for override in overrides:
        for key, value in override.keywords:
            if value is None:
                schema.pop(key, None)
            else:
                schema[key] = value


def _merge(schema: OpenAPI, extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if key == VALIDATIONS:
            schema.setdefault(VALIDATIONS, []).extend(value)
        else:
            schema[key] = value


# --- the CRD ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServedVersion:
    """Another version the CRD serves with the same schema (not stored), e.g. an old alpha."""

    name: str
    deprecation_warning: str = ""


def column(name: str, json_path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    """One ``additionalPrinterColumns`` entry (priority 1: shown by ``kubectl get -o wide``)."""
    entry: dict[str, Any] = {"name": name, "type": kind, "jsonPath": json_path}
    if priority:
        entry["priority"] = priority
    return entry


READY_COLUMN = column("Ready", f'.status.conditions[?(@.type=="{CONDITION_READY}")].status')
AGE_COLUMN = column("Age", ".metadata.creationTimestamp", "date")


def node_class_crd(
    model: type[NodeClass],
    *,
    plural: str | None = None,
    short_names: Sequence[str] = (),
    categories: Sequence[str] = ("karpenter",),
    columns: Sequence[Mapping[str, Any]] = (READY_COLUMN, AGE_COLUMN),
    description: str | None = None,
    served_versions: Sequence[ServedVersion] = (),
) -> dict[str, Any]:
    """The CRD of a NodeClass ``model`` (cluster-scoped, status subresource), its schema
    generated from the model's ``spec`` and ``status`` fields.

    The group and the stored version come from ``model.API_VERSION``; ``served_versions`` adds
    deprecated versions with the same schema. ``plural`` defaults to the lower-case kind + "es".
    """
    group, version = model.API_VERSION.split("/", 1)
    kind = model.KIND
    root: OpenAPI = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": _field_schema(model, "spec", model.model_fields["spec"]),
            "status": _field_schema(model, "status", model.model_fields["status"]),
        },
        "description": description or f"{kind} is the Schema for the {kind} API",
    }
    result = crd(
        group=group,
        kind=kind,
        plural=plural or f"{kind.lower()}es",
        version=version,
        schema=root,
        columns=columns,
        short_names=short_names,
        categories=categories,
    )
    stored = result["spec"]["versions"][0]
    for served in served_versions:
        extra = {**copy.deepcopy(stored), "name": served.name, "storage": False}
        if served.deprecation_warning:
            extra["deprecated"] = True
            extra["deprecationWarning"] = served.deprecation_warning
        result["spec"]["versions"].append(extra)
    return result


__all__ = [
    "AGE_COLUMN",
    "QUANTITY_PATTERN",
    "READY_COLUMN",
    "CrdGenerationError",
    "Int32",
    "Int64",
    "ResolvedRequirement",
    "Rule",
    "Schema",
    "SchemaFrom",
    "ServedVersion",
    "column",
    "model_schema",
    "node_class_crd",
    "validations",
]
