"""Object metadata shared by every kind, and the base classes for API models.

Models use the API's camelCase names on the wire and snake_case in Python. Kubernetes'
own kinds keep fields nodewright does not model (``extra="allow"``), so an object read from
a cluster and written back loses nothing; Karpenter's kinds reject unknown fields, so a typo
in a manifest is an error naming the field instead of a silently ignored setting.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any, ClassVar, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

# --- copying ------------------------------------------------------------------------------------

_IMMUTABLE: frozenset[type] = frozenset({str, int, float, bool, type(None), datetime})
_new_instance = object.__new__
_set_attribute = object.__setattr__


_EVERY_FIELD: dict[type, set[str]] = {}


def _every_field(kind: type[BaseModel]) -> set[str]:
    """One set per model class naming every field, shared by all copies of that class.

    A copy counts every field as set (``exclude_unset`` dumps it whole). Giving each copy its
    own set of the fields that happened to be set costs a quarter of the memory of a stored
    pod; pydantic adds a field's name to this set when it is assigned, which changes nothing
    here since every name is in it already.
    """
    names = _EVERY_FIELD.get(kind)
    if names is None:
        names = _EVERY_FIELD[kind] = set(kind.model_fields)
    return names


def _copy(value: Any) -> Any:
    """A deep copy specialised for API models: about 3x faster than ``model_copy(deep=True)``.

    It rebuilds pydantic models field by field without validation and falls back to
    :func:`copy.deepcopy` for anything it does not know.
    """
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return _copy_values(value)
    if kind is list:
        return [v if type(v) in _IMMUTABLE else _copy(v) for v in value]
    if isinstance(value, BaseModel):
        clone = _new_instance(kind)
        _set_attribute(clone, "__dict__", _copy_values(value.__dict__))
        _set_attribute(clone, "__pydantic_fields_set__", _every_field(kind))
        extra = value.__pydantic_extra__
        _set_attribute(clone, "__pydantic_extra__", None if extra is None else _copy(extra))
        private = value.__pydantic_private__
        _set_attribute(clone, "__pydantic_private__", None if private is None else _copy(private))
        return clone
    return copy.deepcopy(value)


def _copy_values(source: dict[Any, Any]) -> dict[Any, Any]:
    """A copy of ``source`` whose mutable values are copied too (most values of an API object
    are None or strings: copy the dict at C speed, then replace only the others)."""
    copied = dict(source)
    for key, value in source.items():
        if type(value) not in _IMMUTABLE:
            copied[key] = _copy(value)
    return copied


M = TypeVar("M", bound=BaseModel)


def copy_model(value: M) -> M:
    """A deep copy of a model (or any part of one), fast: see :func:`_copy`."""
    copied: M = _copy(value)
    return copied


def compact(value: Any) -> None:
    """Make a parsed model, and every model in it, share one "fields set" per class, as
    :func:`copy_model`'s copies do (a parsed object's own sets are a quarter of its memory).
    Only for objects about to be stored read-only."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return
    if kind is list:
        for item in value:
            if type(item) not in _IMMUTABLE:
                compact(item)
    elif kind is dict:
        for item in value.values():
            if type(item) not in _IMMUTABLE:
                compact(item)
    elif isinstance(value, BaseModel):
        _set_attribute(value, "__pydantic_fields_set__", _every_field(kind))
        for item in value.__dict__.values():
            if type(item) not in _IMMUTABLE:
                compact(item)
        extra = value.__pydantic_extra__
        if extra:
            compact(extra)


def shallow_copy(value: M) -> M:
    """A new model object whose fields are the same objects as ``value``'s."""
    clone = _new_instance(type(value))
    _set_attribute(clone, "__dict__", dict(value.__dict__))
    _set_attribute(clone, "__pydantic_fields_set__", _every_field(type(value)))
    _set_attribute(clone, "__pydantic_extra__", value.__pydantic_extra__)
    _set_attribute(clone, "__pydantic_private__", value.__pydantic_private__)
    return clone


class Model(BaseModel):
    """Base for Kubernetes-shaped data: camelCase aliases, unknown fields preserved.

    A model's validator and serializer are built when it is first used (``defer_build``):
    a command pays only for the kinds it reads, not for the hundreds of models of every kind
    and provider it imports. What uses models from more than one thread builds them all
    first (:func:`build_models`).
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="allow",
        serialize_by_alias=True,
        defer_build=True,
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if _built_all:
            # Defined after build_models (a module imported late): built now, not on a thread.
            cls.model_rebuild(raise_errors=False)

    def to_dict(self) -> dict[str, Any]:
        """The object as the API server would show it (camelCase, nulls omitted)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


#: Whether :func:`build_models` ran: models defined afterwards are built when defined.
_built_all = False


def build_models() -> None:
    """Build every model defined so far, as pydantic would without ``defer_build``.

    Older pydantic releases (which ``pydantic>=2.7`` allows) build a deferred model unsafely
    when two threads first use it at once: the one may validate with the base class's
    validator while the other builds. ``nodewright run`` calls this before it starts any
    thread, so nothing is built afterwards; a model defined later is built when defined.
    """
    global _built_all  # noqa: PLW0603
    _built_all = True
    waiting: list[type[Model]] = [Model]
    while waiting:
        model = waiting.pop()
        waiting.extend(model.__subclasses__())
        model.model_rebuild()


class StrictModel(Model):
    """Base for Karpenter's CRD types: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")


class OwnerReference(Model):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(Model):
    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)


class ObjectReference(Model):
    api_version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(Model):
    """A status condition (metav1.Condition shape, used by NodePool, NodeClaim, NodeClasses)."""

    type: str
    status: ConditionStatus
    reason: str | None = None
    message: str | None = None
    last_transition_time: datetime | None = None
    observed_generation: int | None = None


class KubeObject(Model):
    """An object with apiVersion, kind and metadata.

    Subclasses declare ``API_VERSION``, ``KIND`` and ``NAMESPACED``; the cluster adapters use
    them to route reads and writes, so a Python class is the identity of a kind.
    """

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = True

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def model_post_init(self, context: Any, /) -> None:
        if not self.api_version:
            self.api_version = self.API_VERSION
        if not self.kind:
            self.kind = self.KIND

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def key(self) -> str:
        """``namespace/name`` for namespaced objects, ``name`` otherwise."""
        return f"{self.namespace}/{self.name}" if self.NAMESPACED else self.name

    @property
    def deleting(self) -> bool:
        return self.metadata.deletion_timestamp is not None

    def reference(self) -> ObjectReference:
        return ObjectReference(
            api_version=self.api_version,
            kind=self.kind,
            name=self.name,
            namespace=self.metadata.namespace,
            uid=self.metadata.uid,
        )

    def clone(self) -> Self:
        """A deep copy (of a shared object read from the cluster, to change and write)."""
        return copy_model(self)

    def status_copy(self) -> Self:
        """A copy whose status is private and everything else shared with this object: what a
        status writer changes and passes to ``update_status``, without copying the spec."""
        if "status" not in type(self).model_fields:
            raise TypeError(f"{self.KIND} has no status")
        copy = shallow_copy(self)
        copy.__dict__["status"] = copy_model(self.__dict__["status"])
        return copy


class StrictKubeObject(KubeObject):
    """A Karpenter kind: the top-level object and its spec reject unknown fields."""

    model_config = ConfigDict(extra="forbid")


def find_condition(conditions: list[Condition], kind: str) -> Condition | None:
    for condition in conditions:
        if condition.type == kind:
            return condition
    return None


def set_condition(
    conditions: list[Condition],
    kind: str,
    status: ConditionStatus,
    now: datetime,
    *,
    reason: str | None = None,
    message: str | None = None,
    observed_generation: int | None = None,
) -> bool:
    """Set a condition in place; keep its transition time unless the status changes.

    Returns True when anything changed, so controllers can skip no-op writes.
    """
    current = find_condition(conditions, kind)
    if current is None:
        conditions.append(
            Condition(
                type=kind,
                status=status,
                reason=reason or kind,
                message=message or "",
                last_transition_time=now,
                observed_generation=observed_generation,
            )
        )
        return True
    changed = (
        current.status != status
        or current.reason != (reason or kind)
        or current.message != (message or "")
        or current.observed_generation != observed_generation
    )
    if current.status != status:
        current.last_transition_time = now
    current.status = status
    current.reason = reason or kind
    current.message = message or ""
    current.observed_generation = observed_generation
    return changed


def is_true(conditions: list[Condition], kind: str) -> bool:
    condition = find_condition(conditions, kind)
    return condition is not None and condition.status == "True"
