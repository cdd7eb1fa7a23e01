"""Checking what hooks return against :mod:`nodewright.plugin.hookspecs`.

Plugins are untyped at run time: a result is checked field by field, whatever its
annotations say, before the core uses it. A check raises :class:`ResultError` saying what
is wrong with the value; the host adds which plugin and which hook returned it (as a
:class:`~nodewright.plugin.errors.PluginContractError`). Nothing here calls a hook.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from nodewright.api.karpenter import NodeClass
from nodewright.api.labels import CAPACITY_TYPE_RESERVED, CAPACITY_TYPES
from nodewright.plugin.devices import dynamic_resources_problem
from nodewright.plugin.model import (
    Instance,
    InstanceType,
    LaunchResult,
    NodeClassKind,
    NodeClassReadiness,
    Offering,
    ProviderInfo,
    RepairPolicy,
    Reservation,
)

T = TypeVar("T")

#: The statuses a Node condition can have.
CONDITION_STATUSES = ("True", "False", "Unknown")
_PROVIDER_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


class ResultError(Exception):
    """A hook result that breaks its spec; the message says how (``returned ..., not ...``)."""


def shown(value: object) -> str:
    """A value's type and a short repr, for messages about what a plugin returned."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"


def check_type(result: object, kind: type[T]) -> T:
    """``result`` when it is a ``kind``."""
    if not isinstance(result, kind):
        raise ResultError(f"returned {shown(result)}, not {kind.__name__}")
    return result


def check_sequence(result: object, kind: type[T]) -> list[T]:
    """``result`` as a list when it is a sequence (not a string) of ``kind``."""
    if not isinstance(result, Sequence) or isinstance(result, str | bytes):
        raise ResultError(f"returned {shown(result)}, not a sequence of {kind.__name__}")
    for item in result:
        if not isinstance(item, kind):
            raise ResultError(f"returned an item {shown(item)}, not {kind.__name__}")
    return list(result)


def check_readiness(result: object) -> NodeClassReadiness:
    """``nodewright_node_class_status``: None means ready."""
    if result is None:
        return NodeClassReadiness(ready=True)
    return check_type(result, NodeClassReadiness)


def check_line(result: object) -> str | None:
    """A one-line answer or None (``nodewright_configuration_problem``)."""
    if result is not None and not (isinstance(result, str) and result):
        raise ResultError(f"returned {shown(result)}, not a line or None")
    return result


def check_lines(result: object) -> list[str]:
    """Lines or None (``nodewright_report_notes``); empty lines are dropped."""
    if result is None:
        return []
    if not isinstance(result, list | tuple) or not all(isinstance(x, str) for x in result):
        raise ResultError(f"returned {shown(result)}, not a list of lines")
    return [line for line in result if line]


def check_drift_reason(result: object) -> str | None:
    """``nodewright_is_drifted``: a non-empty reason or None."""
    if result is not None and not (isinstance(result, str) and result):
        raise ResultError(f"returned {result!r}, not a drift reason or None")
    return result


def check_deleted(result: object) -> None:
    """``nodewright_delete`` returns nothing."""
    if result is not None:
        raise ResultError(f"returned {type(result).__name__}, not None")


def _check_instance(instance: Instance) -> None:
    """Fields the core writes into Kubernetes objects must be strings, or the write fails."""
    if not isinstance(instance.node_name, str):
        raise ResultError(f"returned node_name {shown(instance.node_name)}, not str")
    annotations = instance.annotations
    if not isinstance(annotations, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in annotations.items()
    ):
        raise ResultError(f"returned annotations {shown(annotations)}, not a str-to-str mapping")


def check_launch(result: object) -> LaunchResult:
    """``nodewright_launch``: an Instance (wrapped in a LaunchResult) or a LaunchResult."""
    if isinstance(result, Instance):
        result = LaunchResult(result)
    if not isinstance(result, LaunchResult):
        raise ResultError(f"returned {shown(result)}, not Instance")
    if not isinstance(result.instance, Instance):
        raise ResultError(f"returned instance {shown(result.instance)}, not Instance")
    _check_instance(result.instance)
    for triple in result.unavailable_offerings:
        if not (
            isinstance(triple, tuple)
            and len(triple) == 3
            and all(isinstance(part, str) and part for part in triple)
        ):
            raise ResultError(
                f"returned unavailable offering {shown(triple)}, not an "
                "(instance_type, zone, capacity_type) triple of strings"
            )
    if not isinstance(result.unavailable_ttl, timedelta) or result.unavailable_ttl <= timedelta(0):
        raise ResultError(f"returned unavailable_ttl {shown(result.unavailable_ttl)}, not positive")
    return result


def check_repair_policies(result: object) -> tuple[RepairPolicy, ...]:
    """``nodewright_repair_policies``: None means none."""
    if result is None:
        return ()
    policies = check_sequence(result, RepairPolicy)
    for policy in policies:
        declared: Any = policy  # plugins are untyped at run time
        if not isinstance(declared.condition_type, str) or not declared.condition_type:
            raise ResultError(f"returned a policy without a condition type: {policy}")
        if declared.condition_status not in CONDITION_STATUSES:
            raise ResultError(
                f"returned a policy for {declared.condition_type!r} with status "
                f"{declared.condition_status!r}, not one of {', '.join(CONDITION_STATUSES)}"
            )
        toleration = declared.toleration
        if not isinstance(toleration, timedelta) or toleration < timedelta(0):
            raise ResultError(
                f"returned a policy for {declared.condition_type!r} with toleration "
                f"{shown(toleration)}, not a timedelta >= 0"
            )
    return tuple(policies)


def _offering_problem(offering: Offering) -> str | None:
    if not isinstance(offering.zone, str) or not offering.zone:
        return "has no zone"
    if offering.capacity_type not in CAPACITY_TYPES:
        allowed = ", ".join(CAPACITY_TYPES)
        return f"has capacity type {offering.capacity_type!r}, not one of {allowed}"
    price = offering.price
    if isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price):
        return f"has price {price!r}, not a finite number"
    if price < 0:
        return f"has a negative price {price!r}"
    declared: object = offering.reservation  # plugins may pass anything
    if declared is not None:
        if not isinstance(declared, Reservation):
            return f"has reservation {shown(declared)}, not a Reservation"
        reservation = declared
        if offering.capacity_type != CAPACITY_TYPE_RESERVED:
            return f"names reservation {reservation.id!r} but is not of capacity type reserved"
        if not isinstance(reservation.id, str) or not reservation.id:
            return "has a reservation without an id"
        if not isinstance(reservation.label, str) or not reservation.label:
            return f"has reservation {reservation.id!r} without a label key"
        capacity = reservation.capacity
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            return f"has reservation {reservation.id!r} with capacity {capacity!r}, not a count"
    return None


def _check_offerings(type_name: str, offerings: object) -> tuple[Offering, ...]:
    checked = check_sequence(offerings, Offering)
    for offering in checked:
        problem = _offering_problem(offering)
        if problem is not None:
            raise ResultError(
                f"returned an offering of {type_name!r} in {offering.zone!r} that {problem}"
            )
    return tuple(checked)


def check_instance_types(result: object) -> list[InstanceType]:
    """``nodewright_instance_types``: distinct names, every offering and device well formed."""
    types = check_sequence(result, InstanceType)
    seen: set[str] = set()
    for instance_type in types:
        if instance_type.name in seen:
            raise ResultError(f"returned instance type {instance_type.name!r} twice")
        seen.add(instance_type.name)
        _check_offerings(instance_type.name, instance_type.offerings)
        problem = dynamic_resources_problem(instance_type.dynamic_resources)
        if problem is not None:
            raise ResultError(f"returned instance type {instance_type.name!r} whose {problem}")
    return types


def check_offerings_map(result: object) -> dict[str, tuple[Offering, ...]]:
    """``nodewright_offerings``: offerings by instance type name; None means no change."""
    if result is None:
        return {}
    if not isinstance(result, Mapping):
        raise ResultError(f"returned {shown(result)}, not a mapping")
    return {str(name): _check_offerings(str(name), offerings) for name, offerings in result.items()}


def labels_problem(result: object) -> str | None:
    """Why a ``nodewright_node_labels`` answer (not None) is unusable, or None."""
    if not isinstance(result, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in result.items()
    ):
        return f"returned {shown(result)}, not a mapping of strings to strings"
    return None


def reconcile_period_problem(result: object) -> str | None:
    """Why a ``nodewright_reconcile`` answer (not None) is unusable, or None."""
    if isinstance(result, timedelta) and result >= timedelta(0):
        return None
    return f"returned {shown(result)}, not a timedelta >= 0 or None"


def provider_info_problem(info: object) -> str | None:
    """Why ``info`` is not a usable ProviderInfo, or None."""
    if not isinstance(info, ProviderInfo):
        return f"returned {shown(info)}, not ProviderInfo"
    # Plugins are untyped at run time: check every field, whatever its annotation says.
    declared: Any = info
    if not isinstance(declared.name, str) or not _PROVIDER_NAME.match(declared.name):
        return (
            f"declared the name {declared.name!r}; a provider name is lower-case letters, "
            "digits and dashes"
        )
    if not isinstance(declared.node_classes, tuple | list):
        return f"declared node_classes as {shown(declared.node_classes)}, not a tuple"
    for kind in declared.node_classes:
        if not isinstance(kind, NodeClassKind):
            return f"declared a node class {shown(kind)}, not NodeClassKind"
        model: Any = kind.model
        if not (isinstance(model, type) and issubclass(model, NodeClass)):
            return f"declared {kind.kind} with model {model!r}, not a NodeClass subclass"
        if kind.kind != model.KIND or model.group() != kind.group:
            return (
                f"declared {kind.kind} ({kind.group}), but its model {model.__name__} is "
                f"{model.KIND} ({model.group()})"
            )
    for attribute in ("restricted_label_domains", "well_known_labels"):
        values = getattr(declared, attribute)
        if not isinstance(values, frozenset | set) or not all(isinstance(v, str) for v in values):
            return f"declared {attribute} as {shown(values)}, not a frozenset of strings"
    return None
