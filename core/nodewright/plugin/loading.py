"""Finding plugins: entry points one at a time, each failure kept and named, never raised.

Load order, which ``nodewright plugins`` and the operator rely on:

1. Plugin objects given directly (tests, ``nodewright simulate``), in the order given.
2. Entry points in the group ``nodewright.providers``, sorted by name, unless entry-point
   loading is switched off.

``blocked`` names are skipped in both. ``only``, when given, limits entry points to those
names; a name in ``only`` that no entry point provides is reported as not installed.

An entry point that fails to import becomes a :class:`~nodewright.plugin.errors.PluginLoadError`
naming the plugin and its distribution, with the exception's text; the traceback goes to the
``nodewright.plugins`` log at debug level, not into the message. One broken distribution
therefore never stops the others, nor the commands a user would run to find out what is wrong.
"""

from __future__ import annotations

import importlib.metadata
import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from nodewright.plugin.errors import PluginLoadError
from nodewright.plugin.names import ENTRY_POINT_GROUP

log = logging.getLogger("nodewright.plugins")


@dataclass(frozen=True)
class PluginCandidate:
    """A plugin found by discovery: either its object or why it could not be had."""

    #: Entry-point name, or the key a directly given plugin was registered under.
    name: str
    plugin: object | None
    distribution: str = ""
    version: str = ""
    #: Set when the plugin could not be imported; ``plugin`` is then None.
    error: PluginLoadError | None = None


def describe_exception(exc: BaseException) -> str:
    """``TypeName: message``, one line, for error messages that must not carry tracebacks."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _distribution_of(entry_point: importlib.metadata.EntryPoint) -> tuple[str, str]:
    dist = entry_point.dist
    if dist is None:
        return "", ""
    return dist.metadata["Name"] or dist.name, dist.version


def load_entry_point(entry_point: importlib.metadata.EntryPoint) -> PluginCandidate:
    """Import one entry point; an exception becomes the candidate's ``error``."""
    distribution, version = _distribution_of(entry_point)
    try:
        plugin = entry_point.load()
    except Exception as exc:
        # The host logs the error itself; the traceback is only for whoever debugs it.
        log.debug(
            "plugin %r (distribution %s %s) failed to import from %r",
            entry_point.name,
            distribution,
            version,
            entry_point.value,
            exc_info=True,
        )
        error = PluginLoadError(
            entry_point.name,
            distribution,
            f"failed to import {entry_point.value!r}: {describe_exception(exc)}",
        )
        return PluginCandidate(entry_point.name, None, distribution, version, error)
    return PluginCandidate(entry_point.name, plugin, distribution, version)


def discover_entry_points(
    group: str = ENTRY_POINT_GROUP,
    *,
    only: Collection[str] | None = None,
    blocked: Collection[str] = (),
    entry_points: Iterable[importlib.metadata.EntryPoint] | None = None,
) -> list[PluginCandidate]:
    """Import every entry point in ``group`` that is allowed, in name order.

    ``entry_points`` replaces what ``importlib.metadata`` reports (for tests).
    """
    found = (
        list(entry_points)
        if entry_points is not None
        else list(importlib.metadata.entry_points(group=group))
    )
    found.sort(key=lambda ep: ep.name)
    candidates: list[PluginCandidate] = []
    seen: set[str] = set()
    for entry_point in found:
        if entry_point.name in blocked:
            log.info("plugin %r is blocked; not loading it", entry_point.name)
            continue
        if only is not None and entry_point.name not in only:
            continue
        seen.add(entry_point.name)
        candidates.append(load_entry_point(entry_point))
    for name in sorted(set(only or ()) - seen - set(blocked)):
        candidates.append(
            PluginCandidate(
                name,
                None,
                error=PluginLoadError(
                    name, "", f"is not installed: no entry point named {name!r} in group {group!r}"
                ),
            )
        )
    return candidates


def collect_plugins(
    *,
    entry_points: bool = True,
    plugins: Mapping[str, object] | None = None,
    only: Collection[str] | None = None,
    blocked: Collection[str] = (),
    group: str = ENTRY_POINT_GROUP,
) -> list[PluginCandidate]:
    """Everything the host should try to register, in load order (see the module docstring)."""
    candidates = [
        PluginCandidate(name, plugin)
        for name, plugin in (plugins or {}).items()
        if name not in blocked
    ]
    if entry_points:
        # A plugin given directly takes the place of an entry point of the same name.
        direct = {candidate.name for candidate in candidates}
        candidates.extend(discover_entry_points(group, only=only, blocked=(*blocked, *direct)))
    return candidates
