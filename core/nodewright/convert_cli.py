"""``nodewright convert``: print retired Karpenter manifests as current ones.

The conversion itself is :mod:`nodewright.api.convert`; this module reads files, prints YAML
on stdout and one warning per field that could not be carried over on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from nodewright.api.convert import convert_documents
from nodewright.api.manifests import MANIFEST_SUFFIXES, ManifestError, parse_documents

EXIT_OK = 0
EXIT_INVALID_INPUT = 2


def _plain(value: Any) -> Any:
    """Plain dicts and lists (the YAML loader's marked subclasses do not dump cleanly)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _files(paths: Sequence[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
            )
        else:
            files.append(path)
    return files


def run_convert(paths: Sequence[Path], out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Convert every document in ``paths`` (files or directories) and print them as YAML."""
    out = out or sys.stdout
    err = err or sys.stderr
    documents: list[dict[str, object]] = []
    problems: list[str] = []
    for file in _files(paths):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            problems.append(f"{file}: cannot be read: {error}")
            continue
        try:
            documents.extend(parse_documents(text, str(file)))
        except ManifestError as error:
            problems.append(str(error))
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=err)
        return EXIT_INVALID_INPUT
    result = convert_documents(documents)
    for warning in result.warnings:
        print(f"warning: {warning}", file=err)
    out.write(
        yaml.safe_dump_all(
            [_plain(d) for d in result.documents], sort_keys=False, default_flow_style=False
        )
    )
    return EXIT_OK
