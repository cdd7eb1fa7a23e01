"""What one load may read: beyond these limits, input is refused with an error, not read."""

from __future__ import annotations

from dataclasses import dataclass

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
    #: Values (mappings, lists and strings or other scalars) in one file: what they take in
    #: memory, tens of bytes each, is bounded whatever their shape (``[{}, {}, ...]``).
    values: int = 1_000_000
    #: Characters of one string (key or value): the API server's limit for all of an
    #: object's annotations together.
    string_length: int = 256 * 1024


LIMITS = Limits()


def file_too_big(size: int, limit: int) -> str:
    """Why a file of ``size`` bytes is refused."""
    return (
        f"refused: {size} bytes is more than the {limit} a manifest file may have; "
        "split it into several files"
    )
