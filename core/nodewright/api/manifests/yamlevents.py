"""The quick way to read YAML: documents built straight from libyaml's events, for text made
only of mappings, lists and scalars without tags, anchors or merge keys (what ``kubectl get
-o yaml`` and nearly every manifest is).

Whatever else the text holds, or any problem in it, leaves the text to the full loader of
:mod:`.documents`, which reads it (or reports the problem, in its words and at its line) as
if this reader did not exist; so the two never differ in what they accept or say. This
reader keeps the same limits on depth, values, string length and documents while it reads,
and marks the same lines: a mapping's and each key's, a list's and each item's.

Plain scalars are resolved as YAML 1.1 (PyYAML's resolver and constructors: ``yes`` is
true, ``010`` is 8, ``.inf`` a float, ``2001-12-14`` a date), each distinct text once.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import yaml

from nodewright.api.manifests.limits import Limits
from nodewright.api.manifests.marked import MarkedDict, MarkedList

_STR = "tag:yaml.org,2002:str"
#: Tags of plain scalars built here; any other (a merge key ``<<``, ``=``) is left to the
#: full loader.
_BUILT = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp")
)
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
if yaml.__with_libyaml__:
    from yaml._yaml import CParser


class _Unread(Exception):
    """Something this reader leaves to the full loader."""


def read_simple_yaml(text: str, limits: Limits) -> list[object] | None:
    """The documents of ``text`` (an empty document is None), or None when libyaml is not
    installed or the text needs the full loader."""
    if not yaml.__with_libyaml__:
        return None
    try:
        return _read(text, limits)
    except (_Unread, yaml.YAMLError, ValueError, ArithmeticError, TypeError):
        # A problem (malformed YAML, a character or escape beyond Unicode, a value that
        # cannot be built) is reported by the full loader, which finds it too.
        return None


def _plain(value: str, cache: dict[str, object]) -> object:
    """A plain scalar's value, as PyYAML's safe loader builds it."""
    tag = typing.cast(Any, _RESOLVER).resolve(yaml.ScalarNode, value, (True, False))
    if tag == _STR:
        built: object = value
    elif tag in _BUILT:
        built = _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, value))
    else:
        raise _Unread
    cache[value] = built
    return built


def _read(text: str, limits: Limits) -> list[object]:
    next_event: Callable[[], Any] = CParser(text).get_event
    scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
    mapping_event, sequence_event = yaml.MappingStartEvent, yaml.SequenceStartEvent
    depth_limit, values_limit = limits.depth, limits.values
    string_limit, documents_limit = limits.string_length, limits.documents
    plain_values: dict[str, object] = {}
    documents: list[object] = []
    #: The open mappings and lists, innermost last, and the key each mapping awaits a value
    #: for (None while it awaits a key).
    open_nodes: list[Any] = []
    keys: list[str | None] = []
    values = 0
    #: This document's anchors: the value, its line and how many values it stands for with
    #: every alias in it expanded; and those of mappings and lists still open (an alias to
    #: one is a cycle), by the node, with the counts when it opened.
    anchors: dict[str, tuple[object, int, int]] = {}
    opened: dict[int, tuple[str, int, int]] = {}
    alias_values = 0
    next_event()  # the stream's start
    while True:
        event = next_event()
        kind = type(event)
        node: Any
        if kind is scalar_event or kind is mapping_event or kind is sequence_event:
            if event.tag is not None or len(open_nodes) >= depth_limit:
                raise _Unread
            values += 1
            if values > values_limit:
                raise _Unread
            line = event.start_mark.line + 1
            if kind is scalar_event:
                text_value = event.value
                if len(text_value) > string_limit:
                    raise _Unread
                if event.implicit[0]:
                    node = plain_values.get(text_value, plain_values)
                    if node is plain_values:
                        node = _plain(text_value, plain_values)
                else:
                    node = text_value
            elif kind is mapping_event:
                node = MarkedDict()
                node.line = line
                node.span = event.start_mark.index
            else:
                node = MarkedList()
                node.line = line
            anchor = event.anchor
            if anchor is not None:
                if anchor in anchors or anchor in {name for name, _, _ in opened.values()}:
                    raise _Unread  # defined twice
                if kind is scalar_event:
                    anchors[anchor] = (node, line, 1)
                else:
                    opened[id(node)] = (anchor, values - 1, alias_values)
        elif kind is alias_event:
            anchored = anchors.get(event.anchor)
            if anchored is None:
                raise _Unread  # undefined, or a cycle
            node, line, size = anchored
            alias_values += size
            if alias_values > limits.alias_values:
                raise _Unread
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            node = open_nodes.pop()
            keys.pop()
            if kind is yaml.MappingEndEvent:
                node.span = event.end_mark.index - node.span
            if opened:
                _close_anchor(node, opened, anchors, values + alias_values)
            continue
        elif kind is yaml.DocumentStartEvent:
            if len(documents) >= documents_limit:
                raise _Unread
            anchors.clear()
            alias_values = 0
            continue
        elif kind is yaml.DocumentEndEvent:
            continue
        else:
            return documents  # the stream's end
        if not open_nodes:
            documents.append(node)
        else:
            parent = open_nodes[-1]
            if type(parent) is MarkedList:
                parent.append(node)
                parent.item_lines.append(line)
            else:
                key = keys[-1]
                if key is None:
                    # Keys are strings here, each once (a duplicate is the full loader's to
                    # report).
                    if type(node) is not str or node in parent:
                        raise _Unread
                    keys[-1] = node
                    parent.key_lines[node] = line
                else:
                    parent[key] = node
                    keys[-1] = None
        if kind is mapping_event or kind is sequence_event:
            open_nodes.append(node)
            keys.append(None)


def _close_anchor(
    node: object,
    opened: dict[int, tuple[str, int, int]],
    anchors: dict[str, tuple[object, int, int]],
    counted: int,
) -> None:
    """Make an anchored mapping or list, now read, one aliases may name."""
    anchor = opened.pop(id(node), None)
    if anchor is not None:
        name, values_before, alias_values_before = anchor
        line = typing.cast(MarkedDict | MarkedList, node).line
        anchors[name] = (node, line, counted - values_before - alias_values_before)
