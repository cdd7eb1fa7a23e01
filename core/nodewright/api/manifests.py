"""Turning YAML and JSON manifests into API models: the one loading path of every command.

``simulate`` (its manifests and each scenario ``apply``), ``convert`` and the tests all read
manifests here, so they accept and refuse the same things, in bounded time and memory:

* files are read only when regular and at most :attr:`Limits.file_bytes` long, as UTF-8;
* YAML is read with limits on nesting depth, alias expansion, documents per file, string
  length and object size (:class:`Limits`), so no input exhausts the stack, the memory or
  the CPU ("billion laughs" documents are refused before anything expands them);
* retired Karpenter versions are converted (:mod:`nodewright.api.convert`);
* each object is checked as the API server would check it: the schema of built-in kinds
  (:mod:`nodewright.api.kubeschema`: unknown fields, value types, quantities), the model,
  then the object rules (:mod:`nodewright.api.kubevalidation`) and any rules the caller adds
  (Karpenter's, with the installed providers' label domains).

Every problem names where it is (``file:line``), which object (kind and name) and which
field (the manifest's camelCase path, such as ``spec.template.spec.requirements[0].operator``),
and quotes the offending value cut to a readable length. Loading collects every problem
across all files before failing, so one run shows them all.
"""

from __future__ import annotations

import json
import re
import stat
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
import yaml

from nodewright.api.apps import (
    CSINode,
    DaemonSet,
    Deployment,
    Job,
    PodDisruptionBudget,
    ReplicaSet,
    StatefulSet,
    StorageClass,
)
from nodewright.api.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.api.convert import ConversionNote, convert_documents, needs_conversion, source_path
from nodewright.api.core import (
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Service,
)
from nodewright.api.excerpt import cut, excerpt, printable
from nodewright.api.fielderror import FieldError
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.kubeschema import MapKey, schema_problems, unknown_field_message
from nodewright.api.kubevalidation import validate_object
from nodewright.api.meta import KubeObject
from nodewright.api.nodeoverlay import NodeOverlay

#: File name endings read when a directory is loaded.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What one load may read. Beyond these, input is refused with an error, not read."""

    #: Bytes in one file (split bigger dumps into several files).
    file_bytes: int = 16 * MiB
    #: Files in one load (a directory searched recursively).
    files: int = 10_000
    #: Documents (``---``) in one file.
    documents: int = 10_000
    #: Characters of one object, as written: the API server takes requests up to 3 MiB.
    object_bytes: int = 3 * MiB
    #: Levels of nesting (mappings and lists in each other); real manifests use about 15.
    depth: int = 100
    #: Values that aliases (``*name``, ``<<: *name``) may add to one document when expanded.
    alias_values: int = 100_000
    #: Characters of one string (key or value): the API server's limit for all of an
    #: object's annotations together.
    string_length: int = 256 * 1024


LIMITS = Limits()

CORE_KINDS: tuple[type[KubeObject], ...] = (
    Namespace,
    Pod,
    Node,
    PersistentVolumeClaim,
    PersistentVolume,
    Service,
    PodTemplate,
    CapacityBuffer,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    PodDisruptionBudget,
    StorageClass,
    CSINode,
    NodePool,
    NodeClaim,
    NodeOverlay,
)

#: Kinds Karpenter retired, and what replaced them.
_RETIRED_KINDS = {
    "Provisioner": "NodePool (karpenter.sh/v1)",
    "Machine": "NodeClaim (karpenter.sh/v1)",
    "AWSNodeTemplate": "EC2NodeClass (karpenter.k8s.aws/v1)",
}


class KindRegistry:
    """Which model class reads each (apiVersion, kind).

    Starts with the Kubernetes and Karpenter kinds the core knows; providers register their
    NodeClass kinds.
    """

    def __init__(self) -> None:
        self._models: dict[tuple[str, str], type[KubeObject]] = {}
        for model in CORE_KINDS:
            self.register(model)

    def register(self, model: type[KubeObject], extra_versions: Sequence[str] = ()) -> None:
        """Serve ``model`` at its ``API_VERSION`` and at ``extra_versions``.

        An extra version may be a full apiVersion (``group/v1beta1``) or just the version
        (``v1beta1``), which is taken to be in the model's group.
        """
        if not model.KIND:
            raise ValueError(f"{model.__name__} declares no KIND")
        group, slash, _ = model.API_VERSION.rpartition("/")
        for version in (model.API_VERSION, *extra_versions):
            api_version = f"{group}/{version}" if slash and "/" not in version else version
            key = (api_version, model.KIND)
            existing = self._models.get(key)
            if existing is not None and existing is not model:
                raise ValueError(
                    f"{api_version} {model.KIND} is already served by {existing.__name__}; "
                    f"cannot also register {model.__name__}"
                )
            self._models[key] = model

    def lookup(self, api_version: str, kind: str) -> type[KubeObject] | None:
        return self._models.get((api_version, kind))

    def kinds(self) -> list[tuple[str, str]]:
        """Every served (apiVersion, kind), sorted."""
        return sorted(self._models)

    def versions(self, kind: str) -> list[str]:
        """The apiVersions at which ``kind`` is served."""
        return sorted(version for version, served in self._models if served == kind)


# --- problems ----------------------------------------------------------------------------------


class ManifestError(ValueError):
    """One problem in one manifest: where, which object, which field, what is wrong."""

    def __init__(
        self,
        source: str,
        message: str,
        *,
        kind: str = "",
        name: str = "",
        field: str = "",
    ) -> None:
        self.source = source
        self.kind = kind
        self.name = name
        self.field = _BRACKETED.sub(_shorten_key, field)
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.source] if self.source else []
        if self.kind:
            parts.append(f'{self.kind} "{self.name}"' if self.name else self.kind)
        if self.field:
            parts.append(self.field)
        parts.append(self.message)
        return printable(cut(": ".join(parts)))

    @property
    def errors(self) -> list[ManifestError]:
        """``[self]``, so callers can treat ManifestError and ManifestErrors alike."""
        return [self]


_BRACKETED = re.compile(r"\[([^\]]{81,})\]")


def _shorten_key(match: re.Match[str]) -> str:
    """A map key in a field path, cut like a quoted value (a label key can be 2 MB)."""
    key = match.group(1)
    return f"[{key[:37]}...{key[-37:]}]"


class UnknownKindError(ManifestError):
    """A document of a kind no model serves (a NodeClass whose provider is not installed,
    a kind nodewright does not read, a retired version)."""

    def __init__(
        self, source: str, message: str, *, api_version: str, kind: str, name: str
    ) -> None:
        self.api_version = api_version
        super().__init__(source, message, kind=kind, name=name)


class ManifestWarning(ManifestError):
    """Something loading changed or guessed (a field conversion dropped, an empty file):
    worth telling, not worth refusing."""


class ManifestErrors(ValueError):
    """Several manifest problems, reported together."""

    def __init__(self, errors: Iterable[ManifestError]) -> None:
        self.errors = list(errors)
        super().__init__(str(self))

    def __str__(self) -> str:
        count = len(self.errors)
        heading = f"{count} problem{'s' if count != 1 else ''} in manifests:"
        return "\n".join([heading, *(f"  {error}" for error in self.errors)])


# --- YAML with line numbers and limits ---------------------------------------------------------


class _MarkedDict(dict[str, object]):
    """A mapping that remembers the line of itself and of each key (1-based), and how many
    characters it spans in the file."""

    line: int = 0
    span: int = 0
    key_lines: dict[object, int]


class _MarkedList(list[object]):
    line: int = 0
    item_lines: list[int]


class _LimitExceeded(yaml.MarkedYAMLError):
    """Input beyond one of the :class:`Limits`; reported without "malformed YAML"."""


_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Loader(yaml.SafeLoader):
    """SafeLoader that records line numbers, rejects duplicate keys and enforces limits.

    The composer (events to nodes) is recursive, so depth is counted there, before Python's
    stack runs out. Aliases are shared nodes until something walks them; each alias is
    charged the size of what it stands for, so a document that would expand to millions of
    values is refused while it is still small.
    """

    def __init__(self, stream: str, limits: Limits) -> None:
        super().__init__(stream)
        self.limits = limits
        self._depth = 0
        self._documents = 0
        self._alias_values = 0
        #: Expanded size of each node composed in the current document, by id.
        self._sizes: dict[int, int] = {}

    def _peek(self) -> Any:
        """The next event (PyYAML's stubs leave ``peek_event`` untyped)."""
        return typing.cast(Any, self).peek_event()

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
        if self.check_event(yaml.AliasEvent):
            event = self._peek()
            target = self.anchors.get(event.anchor)
            if target is not None:
                size = self._sizes.get(id(target))
                if size is None:
                    self._refuse(f"alias *{event.anchor} is inside its own anchor (a cycle)")
                self._alias_values += size
                if self._alias_values > self.limits.alias_values:
                    self._refuse(
                        f"aliases expand to more than {self.limits.alias_values} values in "
                        "one document"
                    )
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > self.limits.depth:
                self._refuse(f"nested more than {self.limits.depth} levels deep")
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._sizes.get(id(item), 1) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(
                self._sizes.get(id(key), 1) + self._sizes.get(id(value), 1)
                for key, value in node.value
            )
        self._sizes[id(node)] = size
        return node

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
            return super().construct_object(node, deep)
        except (ValueError, OverflowError, TypeError) as error:
            if isinstance(error, yaml.YAMLError):
                raise
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {excerpt(node.value)}: {error}", node.start_mark
            ) from None


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Iterator[_MarkedDict]:
    data = _MarkedDict()
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


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> Iterator[_MarkedList]:
    data = _MarkedList()
    data.line = node.start_mark.line + 1
    data.item_lines = [item.start_mark.line + 1 for item in node.value]
    yield data
    data.extend(loader.construct_sequence(node, deep=True))


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_sequence)


def _line_of(document: Mapping[str, object], location: Sequence[object]) -> int | None:
    """The line of the deepest part of ``location`` present in ``document``, if known."""
    line = document.line if isinstance(document, _MarkedDict) else None
    node: object = document
    for part in location:
        if isinstance(node, _MarkedDict) and _hashable(part) and part in node:
            line = node.key_lines.get(part, line)
            node = typing.cast(dict[object, object], node)[part]
        elif isinstance(node, _MarkedList) and isinstance(part, int) and 0 <= part < len(node):
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


def _at(source: str, line: int | None) -> str:
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
            where = _at(source, line) if line else f"{source} (document {index + 1})"
            raise ManifestError(
                where,
                f"document is a {_describe_type(document)}, expected a mapping with "
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


def _parse_stream(text: str, source: str, limits: Limits) -> list[object]:
    if len(text) > limits.file_bytes:
        raise ManifestError(source, _too_big(len(text), limits.file_bytes))
    documents: list[object] = []
    loader: _Loader | None = None
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
        where = _at(source, text.count("\n", 0, error.position) + 1)
        raise ManifestError(
            where, f"malformed YAML: character {chr(error.character)!r} is not allowed"
        ) from None
    except yaml.YAMLError as error:
        raise ManifestError(source, f"malformed YAML: {cut(str(error), 200)}") from None
    except RecursionError:  # a limit should always come first; never a traceback regardless
        raise ManifestError(source, "refused: nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()
    return documents


def _mark_at(source: str, error: yaml.MarkedYAMLError) -> str:
    mark = error.problem_mark or error.context_mark
    return f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source


def _too_big(size: int, limit: int) -> str:
    return (
        f"refused: {size} bytes is more than the {limit} a manifest file may have; "
        "split it into several files"
    )


def _describe_type(value: object) -> str:
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
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ManifestError(
            f"{source}:{error.lineno}:{error.colno}", f"malformed JSON: {error.msg}"
        ) from None
    except RecursionError:
        raise ManifestError(
            source, f"refused: nested more than {limits.depth} levels deep"
        ) from None
    problem = _json_limit_problem(document, limits)
    if problem:
        raise ManifestError(source, f"refused: {problem}")
    if not isinstance(document, dict):
        raise ManifestError(source, f"document is a {_describe_type(document)}, expected a mapping")
    return [document]


def _json_limit_problem(document: object, limits: Limits) -> str | None:
    pending: list[tuple[object, int]] = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > limits.depth:
            return f"nested more than {limits.depth} levels deep"
        if isinstance(value, str) and len(value) > limits.string_length:
            return f"a string of {len(value)} characters; at most {limits.string_length} are read"
        if isinstance(value, dict):
            pending.extend((key, depth + 1) for key in value)
            pending.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
    return None


# --- files -------------------------------------------------------------------------------------


def manifest_files(
    paths: Sequence[Path], limits: Limits = LIMITS
) -> tuple[list[Path], list[ManifestError]]:
    """The files to read for ``paths`` (directories searched recursively, in name order),
    and the problems with the paths themselves."""
    files: list[Path] = []
    errors: list[ManifestError] = []
    for item in _walk(paths, limits):
        if isinstance(item, ManifestError):
            errors.append(item)
        else:
            files.append(item)
    return files, errors


def _walk(paths: Sequence[Path], limits: Limits) -> Iterator[Path | ManifestError]:
    """Each file to read, or the problem with a path, in the order the paths were given."""
    count = 0
    for path in paths:
        try:
            mode = path.stat().st_mode
        except ValueError:  # a NUL byte in the path
            yield ManifestError(excerpt(str(path)), "not a valid path")
            continue
        except OSError as error:
            if isinstance(error, FileNotFoundError):
                yield ManifestError(str(path), "no such file or directory")
            else:
                yield ManifestError(str(path), f"cannot be read: {error.strerror or error}")
            continue
        if stat.S_ISDIR(mode):
            found = sorted(
                p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file()
            )
            if not found:
                yield ManifestError(
                    str(path),
                    "directory has no manifest files "
                    f"(names ending {', '.join(MANIFEST_SUFFIXES)})",
                )
        elif stat.S_ISREG(mode):
            found = [path]
        else:
            yield ManifestError(str(path), "not a regular file or directory")
            continue
        for file in found:
            count += 1
            if count > limits.files:
                yield ManifestError(
                    str(path), f"refused: more than {limits.files} files in one load"
                )
                return
            yield file


def read_manifest(path: Path, limits: Limits = LIMITS) -> str:
    """The text of one manifest file; :class:`ManifestError` when it cannot be read."""
    try:
        with path.open("rb") as stream:
            data = stream.read(limits.file_bytes + 1)
    except OSError as error:
        raise ManifestError(str(path), f"cannot be read: {error.strerror or error}") from None
    if len(data) > limits.file_bytes:
        raise ManifestError(str(path), _too_big(path.stat().st_size, limits.file_bytes))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ManifestError(
            f"{path}:{line}", f"not UTF-8 text (byte 0x{data[error.start]:02x})"
        ) from None


def _documents_of_file(path: Path, text: str, limits: Limits) -> list[dict[str, object]]:
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


# --- documents to models -----------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    """One object read from a file, with where it came from."""

    #: The model; None for a document of a kind nodewright does not read (``convert``
    #: passes those through as they are).
    obj: KubeObject | None
    #: The document as printed by ``convert``: converted when it was a retired version.
    document: Mapping[str, object]
    #: The file it came from.
    source: str
    #: The document as written, when ``document`` was converted from it.
    original: Mapping[str, object] | None = None

    def where(self, path: str) -> str:
        """``file:line`` of a field (camelCase path) of this object."""
        return _Entry(self.document, self.source, self.original).where(path_parts(path))


ExtraRules = Callable[[KubeObject], Sequence[FieldError]]


@dataclass
class LoadResult:
    manifests: list[Manifest] = field(default_factory=list)
    errors: list[ManifestError] = field(default_factory=list)
    warnings: list[ManifestWarning] = field(default_factory=list)

    @property
    def objects(self) -> list[KubeObject]:
        return [m.obj for m in self.manifests if m.obj is not None]


@dataclass(frozen=True)
class _Entry:
    """A document to read, and what its lines are looked up in."""

    document: Mapping[str, object]
    source: str
    #: The document as written, when ``document`` was converted from it.
    original: Mapping[str, object] | None = None
    #: Position of its file in the load, to report problems in input order.
    order: int = 0

    def where(self, location: Sequence[object]) -> str:
        if self.original is None:
            return _at(self.source, _line_of(self.document, location))
        kind = self.original.get("kind")
        translated = source_path(kind if isinstance(kind, str) else "", location)
        return _at(self.source, _line_of(self.original, translated))


def load_manifests(
    paths: Sequence[Path],
    registry: KindRegistry,
    *,
    rules: ExtraRules | None = None,
    keep_unknown_kinds: bool = False,
    limits: Limits = LIMITS,
) -> LoadResult:
    """Every object in the given files and directories, and every problem with them.

    ``rules`` adds checks beyond the API server's (the CLI passes Karpenter's NodePool rules
    with the installed providers' label domains). With ``keep_unknown_kinds`` a document of a
    kind nothing serves is kept as it is instead of being an error (``convert`` prints it).
    Nothing at all to read is an error: a run on an empty directory is a mistake.
    """
    result = LoadResult()
    #: Problems keyed by the position of their file, so they are reported in input order.
    errors: list[tuple[int, ManifestError]] = []
    warnings: list[tuple[int, ManifestWarning]] = []
    entries: list[_Entry] = []
    for position, file in enumerate(_walk(paths, limits)):
        if isinstance(file, ManifestError):
            errors.append((position, file))
            continue
        try:
            documents = _documents_of_file(file, read_manifest(file, limits), limits)
        except ManifestError as error:
            errors.append((position, error))
            continue
        if not documents:
            warnings.append((position, ManifestWarning(str(file), "no objects in this file")))
        flattening: list[ManifestError] = []
        for document in _flatten_lists(documents, str(file), flattening, limits):
            entries.append(_Entry(document, str(file), order=position))
        errors.extend((position, error) for error in flattening)
    for entry in _converted(entries, errors, warnings):
        try:
            obj = _read_entry(entry, registry, rules)
        except UnknownKindError as error:
            if not keep_unknown_kinds:
                errors.append((entry.order, error))
            elif error.api_version.split("/", 1)[0].startswith("karpenter."):
                warning = ManifestWarning(
                    error.source, f"not checked: {error.message}", kind=error.kind, name=error.name
                )
                warnings.append((entry.order, warning))
            result.manifests.append(Manifest(None, entry.document, entry.source, entry.original))
        except (ManifestError, ManifestErrors) as error:
            errors.extend((entry.order, e) for e in error.errors)
        else:
            result.manifests.append(Manifest(obj, entry.document, entry.source, entry.original))
    result.errors = [error for _, error in sorted(errors, key=lambda pair: pair[0])]
    result.warnings = [warning for _, warning in sorted(warnings, key=lambda pair: pair[0])]
    if not result.manifests and not result.errors:
        names = ", ".join(str(p) for p in paths)
        result.errors.append(
            ManifestError(names, "no objects to read (the files are empty or only comments)")
        )
    return result


def load_paths(
    paths: Sequence[Path], registry: KindRegistry, *, rules: ExtraRules | None = None
) -> list[KubeObject]:
    """Every object in the given files and directories (searched recursively, in name order).

    Problems in all files are collected and raised together as :class:`ManifestErrors`.
    """
    result = load_manifests(paths, registry, rules=rules)
    if result.errors:
        raise ManifestErrors(result.errors)
    return result.objects


def load_text(text: str, source: str, registry: KindRegistry) -> list[KubeObject]:
    """Every object in a manifest text (``kind: List`` flattened), or every problem in it."""
    flattening: list[ManifestError] = []
    entries = [
        _Entry(document, source)
        for document in _flatten_lists(parse_documents(text, source), source, flattening, LIMITS)
    ]
    errors = [(0, error) for error in flattening]
    objects: list[KubeObject] = []
    for entry in _converted(entries, errors, []):
        try:
            objects.append(_read_entry(entry, registry, None))
        except (ManifestError, ManifestErrors) as error:
            errors.extend((0, e) for e in error.errors)
    if errors:
        raise ManifestErrors(error for _, error in errors)
    return objects


def parse_object(
    document: Mapping[str, object],
    registry: KindRegistry,
    source: str,
    rules: ExtraRules | None = None,
) -> KubeObject:
    """Read one document as the model its apiVersion and kind name, and check it.

    ``source`` names where the document came from (a file path); when the document came from
    :func:`parse_documents` the line of the offending field is added. Raises
    :class:`ManifestError` for one problem and :class:`ManifestErrors` for several; both have
    ``.errors``.
    """
    return _read_entry(_Entry(document, source), registry, rules)


def _converted(
    entries: list[_Entry],
    errors: list[tuple[int, ManifestError]],
    warnings: list[tuple[int, ManifestWarning]],
) -> list[_Entry]:
    """Retired Karpenter versions (v1alpha5, v1beta1, ...) read as the current ones; what
    conversion drops or guesses becomes a warning, what it cannot do an error."""
    if not any(needs_conversion(entry.document) for entry in entries):
        return entries
    conversion = convert_documents([entry.document for entry in entries])

    def where(note: ConversionNote) -> str:
        origin = entries[note.origin]
        return _at(origin.source, _line_of(origin.document, path_parts(note.error.field)))

    for note in conversion.warnings:
        error = note.error
        warning = ManifestWarning(
            where(note), error.message, kind=error.kind, name=error.name, field=error.field
        )
        warnings.append((entries[note.origin].order, warning))
    for note in conversion.errors:
        error = note.error
        problem = ManifestError(
            where(note), error.message, kind=error.kind, name=error.name, field=error.field
        )
        errors.append((entries[note.origin].order, problem))
    converted: list[_Entry] = []
    for document, origin in zip(conversion.documents, conversion.origins, strict=True):
        source = entries[origin]
        if document is source.document:
            converted.append(source)
        else:
            converted.append(
                _Entry(document, source.source, original=source.document, order=source.order)
            )
    return converted


def _read_entry(entry: _Entry, registry: KindRegistry, rules: ExtraRules | None) -> KubeObject:
    document = entry.document
    name = _object_name(document)
    api_version = document.get("apiVersion")
    kind = document.get("kind")
    kind_text = kind if isinstance(kind, str) else ""
    for field_name, value in (("apiVersion", api_version), ("kind", kind)):
        if value is None or value == "":
            raise ManifestError(
                entry.where([field_name]),
                f"{field_name} is missing",
                kind=kind_text,
                name=name,
                field=field_name,
            )
        if not isinstance(value, str):
            raise ManifestError(
                entry.where([field_name]),
                f"must be a string, got {excerpt(value)}",
                kind=kind_text,
                name=name,
                field=field_name,
            )
    assert isinstance(api_version, str)
    assert isinstance(kind, str)
    model = registry.lookup(api_version, kind)
    if model is None:
        raise UnknownKindError(
            entry.where(["kind"]),
            _unsupported(api_version, kind, registry),
            api_version=api_version,
            kind=kind,
            name=name,
        )
    cleaned = _without_nulls(document)
    assert isinstance(cleaned, Mapping)

    def error_at(
        location: Sequence[object], message: str, path: str | None = None
    ) -> ManifestError:
        return ManifestError(
            entry.where(location),
            message,
            kind=kind,
            name=name,
            field=render_path(location) if path is None else path,
        )

    problems = [
        error_at(p.location, p.message) for p in schema_problems(cleaned, api_version, kind)
    ]
    try:
        obj = model.model_validate(cleaned)
    except pydantic.ValidationError as error:
        # The schema's words first; the model's only when the schema found nothing.
        _raise(
            problems
            or _merge_alternatives(
                [
                    _field_error(problem, model=model, entry=entry, kind=kind, name=name)
                    for problem in error.errors(include_url=False)
                ]
            )
        )
    except (RecursionError, ValueError) as error:
        raise ManifestError(
            entry.where([]), f"cannot be read: {excerpt(str(error))}", kind=kind, name=name
        ) from None
    field_errors = list(validate_object(obj))
    if rules is not None:
        field_errors.extend(rules(obj))
    reported = {problem.field for problem in problems}
    unique = [
        (path, message)
        for path, message in dict.fromkeys((e.field, e.message) for e in field_errors)
        if path not in reported
    ]
    problems.extend(error_at(path_parts(path), message, path) for path, message in unique)
    if problems:
        _raise(problems)
    return obj


def _raise(problems: list[ManifestError]) -> typing.NoReturn:
    if len(problems) == 1:
        raise problems[0]
    raise ManifestErrors(problems)


def _without_nulls(value: object) -> object:
    """``value`` without null entries in mappings: the API server reads a null field as an
    absent one. Marked mappings and lists keep their line numbers."""
    if isinstance(value, _MarkedDict):
        copy = _MarkedDict((k, _without_nulls(v)) for k, v in value.items() if v is not None)
        copy.line, copy.span, copy.key_lines = value.line, value.span, value.key_lines
        return copy
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, _MarkedList):
        items = _MarkedList(_without_nulls(v) for v in value)
        items.line, items.item_lines = value.line, value.item_lines
        return items
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _flatten_lists(
    documents: Iterable[Mapping[str, object]],
    source: str,
    errors: list[ManifestError],
    limits: Limits,
) -> Iterator[Mapping[str, object]]:
    """Yield documents, replacing each list (``kind: List``, ``NodePoolList``...) by its items."""
    for document in documents:
        if not _is_list(document):
            if isinstance(document, _MarkedDict) and document.span > limits.object_bytes:
                errors.append(
                    ManifestError(
                        _at(source, document.line),
                        f"refused: an object of {document.span} characters; the API server "
                        f"takes at most {limits.object_bytes}",
                        kind=str(document.get("kind", ""))
                        if isinstance(document.get("kind"), str)
                        else "",
                        name=_object_name(document),
                    )
                )
                continue
            yield document
            continue
        items = document.get("items", [])
        if not isinstance(items, list):
            errors.append(
                ManifestError(
                    _at(source, _line_of(document, ["items"])),
                    f"must be a list, got {excerpt(items)}",
                    kind="List",
                    field="items",
                )
            )
            continue
        for index, item in enumerate(items):
            if isinstance(item, Mapping):
                yield from _flatten_lists([item], source, errors, limits)
            else:
                errors.append(
                    ManifestError(
                        _at(source, _line_of(document, ["items", index])),
                        f"list item is a {_describe_type(item)}, expected an object",
                        kind="List",
                        field=f"items[{index}]",
                    )
                )


def _is_list(document: Mapping[str, object]) -> bool:
    kind = document.get("kind")
    if kind == "List":
        return True
    return isinstance(kind, str) and kind.endswith("List") and "items" in document


def _object_name(document: Mapping[str, object]) -> str:
    metadata = document.get("metadata")
    if isinstance(metadata, Mapping):
        name = metadata.get("name") or metadata.get("generateName")
        if isinstance(name, str):
            return cut(name, 80)
    return ""


def _unsupported(api_version: str, kind: str, registry: KindRegistry) -> str:
    shown_kind, shown_version = cut(kind, 80), cut(api_version, 80)
    served = registry.versions(kind)
    if served:
        return f"apiVersion {shown_version} is not served for {shown_kind}; use {', '.join(served)}"
    replacement = _RETIRED_KINDS.get(kind)
    if replacement is not None:
        return f"kind {shown_kind} ({shown_version}) is no longer supported; use {replacement}"
    supported = sorted({served_kind for _, served_kind in registry.kinds()})
    return (
        f"unknown kind {shown_kind} (apiVersion {shown_version}); "
        f"supported kinds: {', '.join(supported)}"
    )


# --- field paths -------------------------------------------------------------------------------

_PATH_PART = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


def path_parts(path: str) -> list[str | int]:
    """``spec.containers[0].resources.requests[cpu]`` as ``['spec', 'containers', 0,
    'resources', 'requests', 'cpu']`` (bracketed digits are list indexes)."""
    parts: list[str | int] = []
    for match in _PATH_PART.finditer(path):
        bracketed, plain = match.groups()
        if plain is not None:
            parts.append(plain)
        elif bracketed.isdigit():
            parts.append(int(bracketed))
        else:
            parts.append(MapKey(bracketed))
    return parts


def render_path(location: Sequence[object]) -> str:
    """The inverse of :func:`path_parts`: fields joined by dots, map keys and indexes in
    brackets."""
    path = ""
    for part in location:
        if isinstance(part, int | MapKey):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


# --- pydantic errors in the manifest's words ---------------------------------------------------


def _field_error(
    problem: Mapping[str, Any],
    *,
    model: type[pydantic.BaseModel],
    entry: _Entry,
    kind: str,
    name: str,
) -> ManifestError:
    location: tuple[object, ...] = tuple(problem["loc"])
    path, known_fields = _render_location(model, location)
    where = entry.where(location)
    kind_of_problem = problem["type"]
    if kind_of_problem == "extra_forbidden":
        message = unknown_field_message(
            str(location[-1]), known_fields, top_level=len(location) == 1
        )
    elif kind_of_problem == "missing":
        message = "required field is missing"
    else:
        text = str(problem["msg"])
        if text.startswith("Input should be "):
            text = "must be " + text.removeprefix("Input should be ")
        elif text.startswith("Value error, "):
            text = text.removeprefix("Value error, ")
        text = re.sub(r"a valid dictionary or instance of \w+", "a mapping", text)
        text = text.replace("a valid dictionary", "a mapping")
        message = f"{cut(text, 200)}, got {excerpt(problem.get('input'))}"
    return ManifestError(where, message, kind=kind, name=name, field=path)


def _merge_alternatives(problems: list[ManifestError]) -> list[ManifestError]:
    """One error per field when pydantic reports each branch of a union separately.

    ``minAvailable: [1]`` fails both ``int`` and ``str``; say "must be a valid integer or a
    valid string" once.
    """
    merged: list[ManifestError] = []
    for problem in problems:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and (previous.source, previous.field) == (problem.source, problem.field)
            and previous.message.startswith("must be ")
            and problem.message.startswith("must be ")
        ):
            head, _, got = previous.message.rpartition(", got ")
            other, _, other_got = problem.message.rpartition(", got ")
            if got == other_got:
                merged[-1] = ManifestError(
                    previous.source,
                    f"{head} or {other.removeprefix('must be ')}, got {got}",
                    kind=previous.kind,
                    name=previous.name,
                    field=previous.field,
                )
                continue
        merged.append(problem)
    return merged


def _render_location(
    model: type[pydantic.BaseModel], location: Sequence[object]
) -> tuple[str, list[str]]:
    """The camelCase path for a pydantic error location, and the field names known at its end.

    Walks the model's annotations so map keys render as ``labels[team]`` and list indexes as
    ``requirements[0]``; union tags pydantic adds to locations are dropped.
    """
    path = ""
    current: object = model
    known: list[str] = []
    for part in location:
        current = _unwrap_optional(current)
        origin = typing.get_origin(current)
        if isinstance(current, type) and issubclass(current, pydantic.BaseModel):
            fields = current.model_fields
            known = [info.alias or field_name for field_name, info in fields.items()]
            path += f".{part}" if path else str(part)
            match = next(
                (info for field_name, info in fields.items() if part in (info.alias, field_name)),
                None,
            )
            current = match.annotation if match is not None else None
        elif origin is list and isinstance(part, int):
            path += f"[{part}]"
            current = typing.get_args(current)[0] if typing.get_args(current) else None
        elif origin is dict:
            path += f"[{cut(str(part), 80)}]"
            args = typing.get_args(current)
            current = args[1] if len(args) == 2 else None
        elif current is None and not isinstance(part, int):
            path += f".{part}" if path else str(part)
        elif isinstance(part, int):
            path += f"[{part}]"
        else:
            break  # a union tag such as 'int' or 'str' under a scalar field
    return path, known


def _unwrap_optional(annotation: object) -> object:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        options = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(options) == 1:
            return options[0]
    return annotation
