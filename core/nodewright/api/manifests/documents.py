"""YAML and JSON text as documents (mappings), read within :class:`~.limits.Limits` and
remembering the line of every mapping, key and list item, so a problem can name its line.

With :mod:`.yamlevents`, the only modules of the API layer that read YAML. Plain documents
(mappings, lists and untagged scalars, with anchors and aliases: what ``kubectl get -o yaml``
writes) are built straight from libyaml's events by :mod:`.yamlevents` where PyYAML was built
with libyaml. Anything else (tags, merge keys, every problem) is read here by the full
loader: libyaml's scanner and parser where installed, else PyYAML's, with the nodes composed
here one event at a time, so the limits hold before anything deep or large is built, and
constructed by PyYAML's safe constructor. Both ways read the same values and lines and
refuse the same input with the same words.
"""

from __future__ import annotations

import json as _json
import sys
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from nodewright.api.excerpt import cut, excerpt
from nodewright.api.manifests.errors import ManifestError
from nodewright.api.manifests.limits import LIMITS, Limits, file_too_big
from nodewright.api.manifests.marked import MarkedDict, MarkedList
from nodewright.api.manifests.yamlevents import read_simple_yaml


class _LimitExceeded(yaml.MarkedYAMLError):
    """Input beyond one of the :class:`Limits`; reported without "malformed YAML"."""


_MERGE_TAG = "tag:yaml.org,2002:merge"


class _LimitedComposer(yaml.composer.Composer):
    """The composer (events to nodes) of both loaders: records line numbers, rejects
    duplicate keys and enforces limits.

    Composing is recursive, so depth is counted here, before Python's stack runs out. Aliases
    are shared nodes until something walks them; each alias is charged the size of what it
    stands for, so a document that would expand to millions of values is refused while it is
    still small.
    """

    def _limit(self, limits: Limits) -> None:
        self.limits = limits
        self._depth = 0
        self._documents = 0
        self._values = 0
        self._alias_values = 0
        #: Expanded size of each anchored node an alias stood for, by id (this document).
        self._sizes: dict[int, int] = {}
        #: Anchors whose nodes are being composed: an alias to one is a cycle.
        self._open: set[str] = set()
        self._peek = typing.cast(Any, self).peek_event

    def _refuse(self, message: str) -> typing.NoReturn:
        raise _LimitExceeded(problem=message, problem_mark=self._peek().start_mark)

    def compose_document(self) -> yaml.Node | None:
        self._documents += 1
        if self._documents > self.limits.documents:
            self._refuse(f"more than {self.limits.documents} documents in one file")
        self._sizes.clear()
        self._alias_values = 0
        node: yaml.Node | None = super().compose_document()
        self._sizes.clear()
        return node

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self._peek()
        if type(event) is yaml.AliasEvent:
            target = self.anchors.get(event.anchor)
            if target is not None:
                if event.anchor in self._open:
                    self._refuse(f"alias *{event.anchor} is inside its own anchor (a cycle)")
                self._alias_values += self._size(target)
                if self._alias_values > self.limits.alias_values:
                    self._refuse(
                        f"aliases expand to more than {self.limits.alias_values} values in "
                        "one document"
                    )
            return super().compose_node(parent, index)
        if self._depth >= self.limits.depth:
            self._refuse(f"nested more than {self.limits.depth} levels deep")
        self._values += 1
        if self._values > self.limits.values:
            self._refuse(f"more than {self.limits.values} values in one file")
        anchor = event.anchor
        if anchor is not None:
            self._open.add(anchor)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open.discard(anchor)

    def _size(self, node: yaml.Node) -> int:
        """How many values ``node`` stands for once every alias in it is expanded (counted
        once per node, so a "billion laughs" document costs its own size to measure)."""
        size = self._sizes.get(id(node))
        if size is None:
            size = 1
            if isinstance(node, yaml.SequenceNode):
                size += sum(self._size(item) for item in node.value)
            elif isinstance(node, yaml.MappingNode):
                size += sum(self._size(key) + self._size(value) for key, value in node.value)
            self._sizes[id(node)] = size
        return size

    def compose_scalar_node(self, anchor: Any) -> yaml.ScalarNode:
        event = self._peek()
        if len(event.value) > self.limits.string_length:
            self._refuse(
                f"a string of {len(event.value)} characters; at most "
                f"{self.limits.string_length} are read"
            )
        node: yaml.ScalarNode = super().compose_scalar_node(anchor)
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """Values YAML's grammar allows but Python cannot build (``2024-13-45``, an integer
        of 5,000 digits) are errors at their line, not exceptions from deep inside."""
        try:
            return typing.cast(Any, super()).construct_object(node, deep)
        except (ValueError, OverflowError, TypeError) as error:
            if isinstance(error, yaml.YAMLError):
                raise
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {excerpt(node.value)}: {error}", node.start_mark
            ) from None


class _PythonLoader(_LimitedComposer, yaml.SafeLoader):
    """PyYAML's own scanner and parser: where libyaml is not installed."""

    def __init__(self, stream: str, limits: Limits) -> None:
        yaml.SafeLoader.__init__(self, stream)
        self._limit(limits)


_Loader: Any = _PythonLoader
if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _LibyamlLoader(
        _LimitedComposer,
        CParser,
        yaml.constructor.SafeConstructor,
        yaml.resolver.Resolver,
    ):
        """libyaml's scanner and parser (``CParser``), composed and constructed in Python as
        :class:`_PythonLoader` does; the composer comes first so libyaml's own (which would
        build every node in C, depth unchecked) is never used."""

        def __init__(self, stream: str, limits: Limits) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            yaml.composer.Composer.__init__(self)
            self._limit(limits)

    _Loader = _LibyamlLoader


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> Iterator[MarkedDict]:
    data = MarkedDict()
    data.line = node.start_mark.line + 1
    data.span = node.end_mark.index - node.start_mark.index
    data.key_lines = {}
    yield data
    seen: set[str] = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
            continue
        if key_node.value in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                f"found duplicate key {excerpt(key_node.value)}",
                key_node.start_mark,
            )
        seen.add(key_node.value)
    loader.flatten_mapping(node)
    for key_node, _ in node.value:  # merged keys first, so explicit keys win
        if isinstance(key_node, yaml.ScalarNode):
            data.key_lines[loader.construct_object(key_node)] = key_node.start_mark.line + 1
    data.update(typing.cast(dict[str, object], loader.construct_mapping(node, deep=True)))


def _construct_sequence(loader: Any, node: yaml.SequenceNode) -> Iterator[MarkedList]:
    data = MarkedList()
    data.line = node.start_mark.line + 1
    data.item_lines = [item.start_mark.line + 1 for item in node.value]
    yield data
    data.extend(loader.construct_sequence(node, deep=True))


for _loader_class in {_PythonLoader, _Loader}:
    _loader_class.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
    _loader_class.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)


def line_of(document: Mapping[str, object], location: Sequence[object]) -> int | None:
    """The line of the deepest part of ``location`` present in ``document``, if known."""
    line = document.line if isinstance(document, MarkedDict) else None
    node: object = document
    for part in location:
        if isinstance(node, MarkedDict) and _hashable(part) and part in node:
            line = node.key_lines.get(part, line)
            node = typing.cast(dict[object, object], node)[part]
        elif isinstance(node, MarkedList) and isinstance(part, int) and 0 <= part < len(node):
            line = node.item_lines[part]
            node = node[part]
        else:
            break
    return line


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def at_line(source: str, line: int | None) -> str:
    """``source:line``, or ``source`` when the line is not known."""
    return f"{source}:{line}" if line else source


def parse_documents(text: str, source: str, limits: Limits = LIMITS) -> list[dict[str, object]]:
    """The non-empty documents of a (multi-document) YAML or JSON text.

    Raises :class:`ManifestError` naming ``source``, line and column for malformed YAML,
    for input beyond ``limits``, and for a document that is not a mapping.
    """
    documents: list[dict[str, object]] = []
    for index, document in enumerate(_parse_stream(text, source, limits)):
        if document is None:
            continue
        if not isinstance(document, dict):
            line = getattr(document, "line", None)
            where = at_line(source, line) if line else f"{source} (document {index + 1})"
            raise ManifestError(
                where,
                f"document is a {describe_type(document)}, expected a mapping with "
                "apiVersion, kind and metadata",
            )
        documents.append(document)
    return documents


def parse_yaml(text: str, source: str, limits: Limits = LIMITS) -> object:
    """The one document of a YAML text, of any shape (a scenario is a list), read with the
    same limits and errors as manifests; None when the text is empty."""
    documents = _parse_stream(text, source, limits)
    if len(documents) > 1:
        raise ManifestError(source, f"expected one YAML document, found {len(documents)}")
    return documents[0] if documents else None


def parse_document(
    text: str, source: str, limits: Limits = LIMITS, *, json: bool = False
) -> object:
    """:func:`parse_yaml`, or for ``json`` text (a ``.json`` file) that YAML cannot read,
    the JSON parser within the same limits (without line numbers)."""
    if not json:
        return parse_yaml(text, source, limits)
    # A JSON string may not hold a raw tab, so tabs are only indentation, which YAML forbids.
    try:
        return parse_yaml(text.replace("\t", " "), source, limits)
    except ManifestError as yaml_error:
        if yaml_error.message.startswith("refused"):
            raise
        return _parse_json_value(text.removeprefix("\ufeff"), source, limits)


def _parse_stream(text: str, source: str, limits: Limits) -> list[object]:
    if len(text) > limits.file_bytes:
        raise ManifestError(source, file_too_big(len(text), limits.file_bytes))
    documents = read_simple_yaml(text, limits)
    if documents is not None:
        return documents
    documents = []
    loader: Any = None
    try:
        loader = _Loader(text, limits)
        while typing.cast(Any, loader).check_data():
            documents.append(loader.get_data())
    except _LimitExceeded as error:
        raise ManifestError(_mark_at(source, error), f"refused: {error.problem}") from None
    except yaml.MarkedYAMLError as error:
        problem = error.problem or error.context or "cannot be parsed"
        raise ManifestError(
            _mark_at(source, error), f"malformed YAML: {cut(problem, 200)}"
        ) from None
    except yaml.reader.ReaderError as error:
        raise ManifestError(
            at_line(source, text.count("\n", 0, max(error.position, 0)) + 1),
            f"malformed YAML: {_character_problem(error)}",
        ) from None
    except yaml.YAMLError as error:
        raise ManifestError(source, f"malformed YAML: {cut(str(error), 200)}") from None
    except (ValueError, OverflowError) as error:
        # PyYAML's scanner builds escapes with chr(): "\U00110000" is beyond Unicode.
        where = _mark_at(source, loader) if loader is not None else source
        raise ManifestError(where, f"malformed YAML: {cut(str(error), 200)}") from None
    except RecursionError:  # a limit should always come first; never a traceback regardless
        raise ManifestError(source, "refused: nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()
    return documents


def _mark_at(source: str, error: yaml.MarkedYAMLError | Any) -> str:
    """``source:line:column`` of a YAML error, or of where a loader's scanner stopped."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
    else:
        mark = getattr(error, "get_mark", lambda: None)()
    return f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source


def _character_problem(error: yaml.reader.ReaderError) -> str:
    """A reader's refusal of a character, in words (libyaml may not say which one)."""
    character = error.character
    if isinstance(character, int) and 0 <= character <= sys.maxunicode:
        return f"character {chr(character)!r} is not allowed"
    return f"{cut(str(error.reason), 100)}"


def describe_type(value: object) -> str:
    """What a value is, in a manifest's words (a list, a string, a mapping, an int)."""
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "mapping"
    return type(value).__name__


def _parse_json(text: str, source: str, limits: Limits) -> list[dict[str, object]]:
    """A ``.json`` file YAML could not read (a key of more than 1024 characters, say).

    Without line numbers, but with the same limits as YAML.
    """
    document = _parse_json_value(text, source, limits)
    if not isinstance(document, dict):
        raise ManifestError(source, f"document is a {describe_type(document)}, expected a mapping")
    return [document]


def _parse_json_value(text: str, source: str, limits: Limits) -> object:
    """JSON text of any shape, within ``limits``."""
    problem = json_size_problem(text, limits)
    if problem:
        raise ManifestError(source, f"refused: {problem}")
    try:
        document = _json.loads(text)
    except _json.JSONDecodeError as error:
        raise ManifestError(
            f"{source}:{error.lineno}:{error.colno}", f"malformed JSON: {error.msg}"
        ) from None
    except RecursionError:
        raise ManifestError(
            source, f"refused: nested more than {limits.depth} levels deep"
        ) from None
    problem = json_limit_problem(document, limits)
    if problem:
        raise ManifestError(source, f"refused: {problem}")
    return document


def json_size_problem(text: str, limits: Limits) -> str | None:
    """Why JSON text would hold more than ``limits.values`` objects, lists and strings once
    parsed, counted before it is (an upper bound: a bracket or quote inside a string counts)."""
    values = text.count("{") + text.count("[") + text.count('"') // 2
    if values > limits.values:
        return f"more than {limits.values} values in one file"
    return None


def json_limit_problem(document: object, limits: Limits) -> str | None:
    """Why a parsed JSON value is beyond ``limits`` (depth, string length), or None."""
    longest = limits.string_length
    pending: list[tuple[object, int]] = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > limits.depth:
            return f"nested more than {limits.depth} levels deep"
        if isinstance(value, dict):
            items: Iterable[object] = value.values()
            for key in value:
                if len(key) > longest:
                    return _long_string(len(key), longest)
        elif isinstance(value, list):
            items = value
        else:
            if isinstance(value, str) and len(value) > longest:
                return _long_string(len(value), longest)
            continue
        for item in items:
            if isinstance(item, (dict, list)):
                pending.append((item, depth + 1))
            elif isinstance(item, str) and len(item) > longest:
                return _long_string(len(item), longest)
    return None


def _long_string(length: int, longest: int) -> str:
    return f"a string of {length} characters; at most {longest} are read"


def documents_of_file(path: Path, text: str, limits: Limits) -> list[dict[str, object]]:
    """The documents of one file's text: YAML, or for a ``.json`` file that YAML cannot
    read, JSON."""
    source = str(path)
    if path.suffix != ".json":
        return parse_documents(text, source, limits)
    # A JSON string may not hold a raw tab, so tabs are only indentation, which YAML forbids.
    try:
        return parse_documents(text.replace("\t", " "), source, limits)
    except ManifestError as yaml_error:
        if yaml_error.message.startswith("refused"):
            raise
        return _parse_json(text.removeprefix("\ufeff"), source, limits)


def without_nulls(value: object) -> object:
    """``value`` without null entries in mappings, as plain dicts and lists: the API server
    reads a null field as an absent one. (Lines are looked up in the document as read.)"""
    if isinstance(value, dict):
        return {
            k: v if type(v) is str else without_nulls(v) for k, v in value.items() if v is not None
        }
    if isinstance(value, list):
        return [v if type(v) is str else without_nulls(v) for v in value]
    return value
