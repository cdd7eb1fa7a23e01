"""Field paths of a space file, and setting them in an object's document.

A path is dot-separated camelCase keys under ``spec`` (``spec.disruption.consolidateAfter``),
where a key may be followed by ``[N]`` (the N-th item of a list) or ``[KEY]`` (the item of a
list whose ``key`` is KEY, as requirements and taints are keyed)::

    spec.template.spec.requirements[karpenter.sh/capacity-type]
    spec.disruption.budgets[0].nodes

Setting ``requirements[KEY]`` to a list of values makes the requirement ``KEY In values``; a
mapping (``{operator: NotIn, values: [...]}``) is the requirement as written. Setting any
field to null removes it (a requirement, a budget, ``consolidateAfter``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodewright.api.excerpt import excerpt

_KEY = re.compile(r"[A-Za-z][A-Za-z0-9]*")
#: Prefixes left out of a parameter's default label.
_LABEL_PREFIXES = ("spec.template.spec.", "spec.disruption.", "spec.template.", "spec.")


class FieldPathError(ValueError):
    """A path that cannot name a field."""


@dataclass(frozen=True)
class Part:
    key: str
    #: ``[N]``: an index; ``[KEY]``: the item whose ``key`` is KEY; None: the field itself.
    index: int | None = None
    selector: str | None = None


@dataclass(frozen=True)
class FieldPath:
    text: str
    parts: tuple[Part, ...]

    @property
    def label(self) -> str:
        """The path without the prefixes every NodePool field shares; a requirement by its
        label's name (``capacity-type``)."""
        last = self.parts[-1]
        if last.key == "requirements" and last.selector is not None:
            return last.selector.rsplit("/", 1)[-1]
        for prefix in _LABEL_PREFIXES:
            if self.text.startswith(prefix):
                return self.text[len(prefix) :]
        return self.text


def parse_field_path(text: str) -> FieldPath:
    """The parts of ``text``; :class:`FieldPathError` saying what is wrong."""
    parts: list[Part] = []
    position = 0
    while position < len(text):
        match = _KEY.match(text, position)
        if match is None:
            raise FieldPathError(
                f"{excerpt(text)}: expected a key at character {position + 1} "
                "(paths look like spec.disruption.consolidateAfter)"
            )
        key = match.group()
        position = match.end()
        index: int | None = None
        selector: str | None = None
        if position < len(text) and text[position] == "[":
            end = text.find("]", position)
            if end < 0:
                raise FieldPathError(f"{excerpt(text)}: '[' without ']'")
            inside = text[position + 1 : end].strip()
            if not inside:
                raise FieldPathError(f"{excerpt(text)}: empty []")
            if inside.isdigit():
                index = int(inside)
            else:
                selector = inside
            position = end + 1
        parts.append(Part(key, index, selector))
        if position < len(text):
            if text[position] != ".":
                raise FieldPathError(
                    f"{excerpt(text)}: expected '.' or '[' at character {position + 1}"
                )
            position += 1
            if position == len(text):
                raise FieldPathError(f"{excerpt(text)}: ends with '.'")
    if not parts or parts[0].key != "spec" or parts[0].index is not None or parts[0].selector:
        raise FieldPathError(f"{excerpt(text)}: a field under spec (spec.weight, spec.template...)")
    if len(parts) == 1:
        raise FieldPathError(f"{excerpt(text)}: name a field under spec, not spec itself")
    return FieldPath(text, tuple(parts))


def set_field(document: dict[str, Any], path: FieldPath, value: object) -> None:
    """Set the field ``path`` names in ``document`` (a plain dict) to ``value``, making the
    mappings and keyed items on the way; :class:`FieldPathError` when the document's shape
    does not allow it (a list where a mapping is expected, an index past the end)."""
    node: Any = document
    for position, part in enumerate(path.parts):
        last = position == len(path.parts) - 1
        shown = ".".join(_show(p) for p in path.parts[: position + 1])
        if not isinstance(node, dict):
            raise FieldPathError(f"{shown}: the object has no mapping here")
        if part.index is None and part.selector is None:
            if last:
                if value is None:
                    node.pop(part.key, None)
                else:
                    node[part.key] = copy.deepcopy(value)
                return
            node = node.setdefault(part.key, {})
            continue
        items = node.get(part.key)
        if items is None:
            items = node[part.key] = []
        if not isinstance(items, list):
            raise FieldPathError(f"{shown}: {part.key} is not a list")
        if part.index is not None:
            if part.index >= len(items):
                raise FieldPathError(f"{shown}: the list has {len(items)} item(s)")
            if last:
                if value is None:
                    del items[part.index]
                else:
                    items[part.index] = copy.deepcopy(value)
                return
            node = items[part.index]
            continue
        found = next(
            (
                i
                for i, item in enumerate(items)
                if isinstance(item, dict) and item.get("key") == part.selector
            ),
            None,
        )
        if last:
            if value is None:
                if found is not None:
                    del items[found]
                return
            item = _keyed_item(part, value, shown)
            if found is None:
                items.append(item)
            else:
                items[found] = item
            return
        if found is None:
            items.append({"key": part.selector})
            found = len(items) - 1
        node = items[found]


def _keyed_item(part: Part, value: object, shown: str) -> dict[str, Any]:
    """The list item a ``[KEY]`` part is set to: a requirement from a list of values, or the
    mapping given (its ``key`` is KEY)."""
    if isinstance(value, list):
        if part.key != "requirements":
            raise FieldPathError(
                f"{shown}: a list of values makes a requirement (KEY In values); "
                "give a mapping for other keyed items"
            )
        return {"key": part.selector, "operator": "In", "values": copy.deepcopy(value)}
    if isinstance(value, Mapping):
        return {"key": part.selector, **copy.deepcopy(dict(value))}
    hint = (
        f" (a requirement's values are a list, so each value to try is one: [[{value}], ...])"
        if part.key == "requirements" and isinstance(value, str | int | float)
        else ""
    )
    raise FieldPathError(
        f"{shown}: expected a list of values or a mapping, got {excerpt(value)}{hint}"
    )


def _show(part: Part) -> str:
    if part.index is not None:
        return f"{part.key}[{part.index}]"
    if part.selector is not None:
        return f"{part.key}[{part.selector}]"
    return part.key
