"""Turning YAML and JSON manifests into API models, with errors a user can act on.

Every error names where it happened (file and line), which object (kind and name) and which
field (the manifest's camelCase path, such as ``spec.template.spec.requirements[0].operator``).
Loading collects every problem across all files before failing, so one run shows them all.

This module only checks that documents fit the models. Karpenter's own rules (weights,
restricted labels, operators and so on) live in :mod:`nodewright.api.validation`; callers run
both.
"""

from __future__ import annotations

import difflib
import json
import logging
import types
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
from nodewright.api.convert import convert_documents, needs_conversion
from nodewright.api.core import Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.meta import KubeObject

_log = logging.getLogger("nodewright.convert")

#: File name endings read when a directory is loaded.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

CORE_KINDS: tuple[type[KubeObject], ...] = (
    Namespace,
    Pod,
    Node,
    PersistentVolumeClaim,
    PersistentVolume,
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
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.source] if self.source else []
        if self.kind:
            parts.append(f'{self.kind} "{self.name}"' if self.name else self.kind)
        if self.field:
            parts.append(self.field)
        parts.append(self.message)
        return ": ".join(parts)

    @property
    def errors(self) -> list[ManifestError]:
        """``[self]``, so callers can treat ManifestError and ManifestErrors alike."""
        return [self]


class ManifestErrors(ValueError):
    """Several manifest problems, reported together."""

    def __init__(self, errors: Iterable[ManifestError]) -> None:
        self.errors = list(errors)
        super().__init__(str(self))

    def __str__(self) -> str:
        count = len(self.errors)
        heading = f"{count} problem{'s' if count != 1 else ''} in manifests:"
        return "\n".join([heading, *(f"  {error}" for error in self.errors)])


# --- YAML with line numbers ------------------------------------------------------------------


class _MarkedDict(dict[str, object]):
    """A mapping that remembers the line of itself and of each key (1-based)."""

    line: int = 0
    key_lines: dict[object, int]


class _MarkedList(list[object]):
    line: int = 0
    item_lines: list[int]


_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Loader(yaml.SafeLoader):
    """SafeLoader that records line numbers and rejects duplicate keys."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Iterator[_MarkedDict]:
    data = _MarkedDict()
    data.line = node.start_mark.line + 1
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
                f"found duplicate key {key_node.value!r}",
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
        if isinstance(node, _MarkedDict) and part in node:
            line = node.key_lines.get(part, line)
            node = typing.cast(dict[object, object], node)[part]
        elif isinstance(node, _MarkedList) and isinstance(part, int) and 0 <= part < len(node):
            line = node.item_lines[part]
            node = node[part]
        else:
            break
    return line


def _at(source: str, line: int | None) -> str:
    return f"{source}:{line}" if line else source


def parse_documents(text: str, source: str) -> list[dict[str, object]]:
    """The non-empty documents of a (multi-document) YAML or JSON text.

    Raises :class:`ManifestError` naming ``source``, line and column for malformed YAML, and
    for a document that is not a mapping.
    """
    documents: list[dict[str, object]] = []
    try:
        for index, document in enumerate(yaml.load_all(text, Loader=_Loader)):
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
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = error.problem or error.context or "cannot be parsed"
        raise ManifestError(where, f"malformed YAML: {problem}") from error
    except yaml.YAMLError as error:
        raise ManifestError(source, f"malformed YAML: {error}") from error
    return documents


def _describe_type(value: object) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


# --- documents to models ---------------------------------------------------------------------


def parse_object(document: Mapping[str, object], registry: KindRegistry, source: str) -> KubeObject:
    """Read one document as the model its apiVersion and kind name.

    ``source`` names where the document came from (a file path); when the document came from
    :func:`parse_documents` the line of the offending field is added. Raises
    :class:`ManifestError` for one problem and :class:`ManifestErrors` for several; both have
    ``.errors``.
    """
    api_version = document.get("apiVersion")
    kind = document.get("kind")
    name = _object_name(document)
    kind_text = kind if isinstance(kind, str) else ""
    if not isinstance(api_version, str) or not api_version:
        raise ManifestError(
            _at(source, _line_of(document, ["apiVersion"])),
            "apiVersion is missing",
            kind=kind_text,
            name=name,
            field="apiVersion",
        )
    if not isinstance(kind, str) or not kind:
        raise ManifestError(
            _at(source, _line_of(document, ["kind"])),
            "kind is missing",
            name=name,
            field="kind",
        )
    model = registry.lookup(api_version, kind)
    if model is None:
        raise ManifestError(
            _at(source, _line_of(document, ["kind"])),
            _unsupported(api_version, kind, registry),
            kind=kind,
            name=name,
        )
    try:
        return model.model_validate(document)
    except pydantic.ValidationError as error:
        problems = [
            _field_error(
                problem, model=model, document=document, source=source, kind=kind, name=name
            )
            for problem in error.errors(include_url=False)
        ]
        problems = _merge_alternatives(problems)
    if len(problems) == 1:
        raise problems[0]
    raise ManifestErrors(problems)


def load_text(text: str, source: str, registry: KindRegistry) -> list[KubeObject]:
    """Every object in a manifest text (``kind: List`` flattened), or every problem in it."""
    documents = parse_documents(text, source)
    objects: list[KubeObject] = []
    errors: list[ManifestError] = []
    for document in _converted(list(_flatten_lists(documents, source, errors)), source):
        try:
            objects.append(parse_object(document, registry, source))
        except (ManifestError, ManifestErrors) as error:
            errors.extend(error.errors)
    if errors:
        raise ManifestErrors(errors)
    return objects


def _converted(
    documents: list[Mapping[str, object]], source: str
) -> Sequence[Mapping[str, object]]:
    """Retired Karpenter versions (v1alpha5, v1beta1, ...) read as the current ones."""
    if not any(needs_conversion(document) for document in documents):
        return documents
    result = convert_documents(documents)
    for warning in result.warnings:
        _log.warning("%s: %s (not carried over by conversion)", source, warning)
    return result.documents


def load_paths(paths: Sequence[Path], registry: KindRegistry) -> list[KubeObject]:
    """Every object in the given files and directories (searched recursively, in name order).

    Problems in all files are collected and raised together as :class:`ManifestErrors`.
    """
    objects: list[KubeObject] = []
    errors: list[ManifestError] = []
    for path in paths:
        if not path.exists():
            errors.append(ManifestError(str(path), "no such file or directory"))
            continue
        files = (
            sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
            if path.is_dir()
            else [path]
        )
        for file in files:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as error:
                errors.append(ManifestError(str(file), f"cannot be read: {error}"))
                continue
            try:
                objects.extend(load_text(text, str(file), registry))
            except ManifestError as error:
                errors.extend(_retry_as_json(file, text, error, registry, objects))
            except ManifestErrors as error:
                errors.extend(error.errors)
    if errors:
        raise ManifestErrors(errors)
    return objects


def _retry_as_json(
    file: Path,
    text: str,
    yaml_error: ManifestError,
    registry: KindRegistry,
    objects: list[KubeObject],
) -> list[ManifestError]:
    """JSON that YAML cannot read (tabs, for one) is read as JSON; otherwise report YAML's error."""
    if file.suffix != ".json":
        return [yaml_error]
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        return [
            ManifestError(f"{file}:{error.lineno}:{error.colno}", f"malformed JSON: {error.msg}")
        ]
    if not isinstance(document, dict):
        return [
            ManifestError(
                str(file), f"document is a {_describe_type(document)}, expected a mapping"
            )
        ]
    errors: list[ManifestError] = []
    for item in _flatten_lists([document], str(file), errors):
        try:
            objects.append(parse_object(item, registry, str(file)))
        except (ManifestError, ManifestErrors) as error:
            errors.extend(error.errors)
    return errors


def _flatten_lists(
    documents: Iterable[Mapping[str, object]], source: str, errors: list[ManifestError]
) -> Iterator[Mapping[str, object]]:
    """Yield documents, replacing each list (``kind: List``, ``NodePoolList``...) by its items."""
    for document in documents:
        if not _is_list(document):
            yield document
            continue
        items = document.get("items", [])
        if not isinstance(items, list):
            errors.append(
                ManifestError(
                    _at(source, _line_of(document, ["items"])),
                    f"items must be a list, got a {_describe_type(items)}",
                    kind="List",
                    field="items",
                )
            )
            continue
        for index, item in enumerate(items):
            if isinstance(item, Mapping):
                yield from _flatten_lists([item], source, errors)
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
            return name
    return ""


def _unsupported(api_version: str, kind: str, registry: KindRegistry) -> str:
    served = registry.versions(kind)
    if served:
        return f"apiVersion {api_version} is not served for {kind}; use {', '.join(served)}"
    replacement = _RETIRED_KINDS.get(kind)
    if replacement is not None:
        return f"kind {kind} ({api_version}) is no longer supported; use {replacement}"
    supported = sorted({served_kind for _, served_kind in registry.kinds()})
    return (
        f"unknown kind {kind} (apiVersion {api_version}); supported kinds: {', '.join(supported)}"
    )


# --- pydantic errors in the manifest's words -------------------------------------------------


def _field_error(
    problem: Mapping[str, Any],
    *,
    model: type[pydantic.BaseModel],
    document: Mapping[str, object],
    source: str,
    kind: str,
    name: str,
) -> ManifestError:
    location: tuple[object, ...] = tuple(problem["loc"])
    path, known_fields = _render_location(model, location)
    where = _at(source, _line_of(document, location))
    kind_of_problem = problem["type"]
    if kind_of_problem == "extra_forbidden":
        unknown = str(location[-1])
        message = f"unknown field {unknown!r}"
        close = difflib.get_close_matches(unknown, known_fields, n=1, cutoff=0.6)
        if close:
            message += f"; did you mean {close[0]!r}?"
        elif known_fields:
            message += f"; known fields: {', '.join(sorted(known_fields))}"
    elif kind_of_problem == "missing":
        message = "required field is missing"
    else:
        text = str(problem["msg"])
        if text.startswith("Input should be "):
            text = "must be " + text.removeprefix("Input should be ")
        elif text.startswith("Value error, "):
            text = text.removeprefix("Value error, ")
        message = f"{text}, got {_short(problem.get('input'))}"
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


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


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
            path += f"[{part}]"
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
