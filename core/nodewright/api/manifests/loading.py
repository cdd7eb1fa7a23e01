"""Documents to models: every object in the given files, checked as the API server checks it
(the schema of built-in kinds, the model, the object rules) plus any rules the caller adds,
with retired Karpenter versions converted first."""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pydantic

from nodewright.api.convert import convert_documents, needs_conversion, source_path
from nodewright.api.convert.batch import ConversionNote
from nodewright.api.excerpt import cut, excerpt
from nodewright.api.fielderror import FieldError
from nodewright.api.kubeschema import schema_problems
from nodewright.api.kubevalidation import validate_object
from nodewright.api.manifests.documents import (
    at_line,
    describe_type,
    documents_of_file,
    line_of,
    parse_documents,
    without_nulls,
)
from nodewright.api.manifests.errors import (
    ManifestError,
    ManifestErrors,
    ManifestWarning,
    UnknownKindError,
)
from nodewright.api.manifests.fieldpaths import path_parts, render_path
from nodewright.api.manifests.files import read_manifest, walk_paths
from nodewright.api.manifests.kinds import KindRegistry, unsupported_kind
from nodewright.api.manifests.limits import LIMITS, Limits
from nodewright.api.manifests.marked import MarkedDict
from nodewright.api.manifests.modelerrors import field_error, merge_alternatives
from nodewright.api.meta import KubeObject


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
            return at_line(self.source, line_of(self.document, location))
        kind = self.original.get("kind")
        translated = source_path(kind if isinstance(kind, str) else "", location, self.original)
        return at_line(self.source, line_of(self.original, translated))


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
    for position, file in enumerate(walk_paths(paths, limits)):
        if isinstance(file, ManifestError):
            errors.append((position, file))
            continue
        try:
            documents = documents_of_file(file, read_manifest(file, limits), limits)
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
        return at_line(origin.source, line_of(origin.document, path_parts(note.error.field)))

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
            unsupported_kind(api_version, kind, registry),
            api_version=api_version,
            kind=kind,
            name=name,
        )
    cleaned = without_nulls(document)
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
            or merge_alternatives(
                [
                    field_error(problem, model=model, locate=entry.where, kind=kind, name=name)
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


def _flatten_lists(
    documents: Iterable[Mapping[str, object]],
    source: str,
    errors: list[ManifestError],
    limits: Limits,
) -> Iterator[Mapping[str, object]]:
    """Yield documents, replacing each list (``kind: List``, ``NodePoolList``...) by its items."""
    for document in documents:
        if not _is_list(document):
            if isinstance(document, MarkedDict) and document.span > limits.object_bytes:
                errors.append(
                    ManifestError(
                        at_line(source, document.line),
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
                    at_line(source, line_of(document, ["items"])),
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
                        at_line(source, line_of(document, ["items", index])),
                        f"list item is a {describe_type(item)}, expected an object",
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
