"""A provider's bundled offline catalog: one JSON document, gzip-compressed byte for byte
reproducibly, that a generation script writes (or checks) and the provider reads.

A generation script builds the document and ends with :func:`write_or_check_catalog`::

    sys.exit(write_or_check_catalog(TARGET, build(today), sys.argv[1:], summary=describe))

``--check`` compares the document with the file (``generated`` aside) and says what differs
(exit 1), else the file is written and ``summary`` says what it holds.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: The field holding the generation date, left out of comparisons.
GENERATED = "generated"


def encode_catalog(document: Mapping[str, Any]) -> bytes:
    """Compact, byte-for-byte reproducible gzip (no file name, mtime 0)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def decode_catalog(data: bytes) -> dict[str, Any]:
    """The document of an encoded catalog."""
    document: dict[str, Any] = json.loads(gzip.decompress(data))
    return document


def catalog_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Top-level fields that differ, ``generated`` aside."""
    keys = (set(old) | set(new)) - {GENERATED}
    return sorted(k for k in keys if old.get(k) != new.get(k))


def write_or_check_catalog(
    target: Path,
    document: Mapping[str, Any],
    argv: Sequence[str],
    summary: Callable[[Path, Mapping[str, Any]], str],
) -> int:
    """With ``--check`` in ``argv``: 0 if ``target`` holds ``document``, else 1 naming the
    fields that differ. Otherwise write it and print ``summary(target, document)``."""
    if "--check" in argv:
        changed = catalog_differences(decode_catalog(target.read_bytes()), document)
        if changed:
            print(f"{target.name} is out of date: {', '.join(changed)} differ; regenerate it")
            return 1
        print(f"{target.name} is up to date")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(encode_catalog(document))
    print(summary(target, document))
    return 0
