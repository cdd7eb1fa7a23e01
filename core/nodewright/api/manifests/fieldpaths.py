"""Field paths as manifests write them (``spec.containers[0].resources.requests[cpu]``) and
as the parts a document is walked by."""

from __future__ import annotations

import re
from collections.abc import Sequence

from nodewright.api.kubeschema import MapKey

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
