"""The plugin registry: which plugins are loaded, under which name, and whether they work.

Plugins are keyed by the name they declare (``ProviderInfo.name``; the entry-point name for
plugins that only contribute). Registering one validates it on its own: hook signatures,
hooks that match no spec (with the nearest hook name as a hint), functions named like hooks
but not marked, its :class:`~nodewright.plugin.model.ProviderInfo`, the hooks a provider must
implement. Then duplicate provider names and NodeClass kinds are found across plugins. A
plugin that fails any of this is kept, marked broken with a
:class:`~nodewright.plugin.errors.PluginError` naming it and its distribution, and
unregistered, so it is never called; the error is raised only when something needs that
plugin (:meth:`PluginRegistry.provider_for`).

The registry never calls a hook except ``nodewright_provider_info``, to learn who a plugin
is; :class:`~nodewright.plugin.host.PluginHost` calls the others.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pluggy

from nodewright.api.karpenter import NodeClass
from nodewright.api.labels import RESTRICTED_LABEL_DOMAINS, WELL_KNOWN_LABELS
from nodewright.plugin import hookspecs
from nodewright.plugin.errors import (
    PluginConflictError,
    PluginContractError,
    PluginError,
    PluginLoadError,
    UnknownNodeClassError,
)
from nodewright.plugin.loading import PluginCandidate, describe_exception
from nodewright.plugin.model import NodeClassKind, ProviderInfo
from nodewright.plugin.names import NAME
from nodewright.plugin.results import provider_info_problem

log = logging.getLogger("nodewright.plugins")

HOOK_PREFIX = f"{NAME}_"
#: Every hook in the contract, in the order of :mod:`nodewright.plugin.hookspecs`.
HOOK_NAMES: tuple[str, ...] = tuple(
    name
    for name, _ in sorted(
        (
            (name, obj.__code__.co_firstlineno)
            for name, obj in vars(hookspecs).items()
            if name.startswith(HOOK_PREFIX) and inspect.isfunction(obj)
        ),
        key=lambda item: item[1],
    )
)
#: Hooks every provider (a plugin implementing ``nodewright_provider_info``) must implement.
REQUIRED_PROVIDER_HOOKS = (
    "nodewright_instance_types",
    "nodewright_launch",
    "nodewright_get",
    "nodewright_list",
    "nodewright_delete",
)
#: NodeClass kinds served by first-party providers, and the extra that installs each.
FIRST_PARTY_NODE_CLASSES: Mapping[tuple[str, str], tuple[str, str]] = {
    ("karpenter.kwok.sh", "KWOKNodeClass"): ("nodewright-kwok", "kwok"),
    ("karpenter.k8s.aws", "EC2NodeClass"): ("nodewright-aws", "aws"),
    ("karpenter.azure.com", "AKSNodeClass"): ("nodewright-azure", "azure"),
}


@dataclass(frozen=True)
class LoadedProvider:
    """One plugin as the host sees it: where it came from and whether it can be used.

    Plugins that only contribute (labels, background work) have ``info=None`` and no error.
    A plugin that failed before declaring itself also has ``info=None``, with ``error`` set.
    """

    #: The declared provider name, or the entry-point name when there is no declaration.
    name: str
    distribution: str
    version: str
    info: ProviderInfo | None
    error: PluginError | None = None
    #: The entry-point name (or the key given to :meth:`PluginHost.load`).
    key: str = ""
    plugin: object | None = field(default=None, repr=False, compare=False)

    @property
    def healthy(self) -> bool:
        return self.error is None

    @property
    def where(self) -> str:
        """``plugin 'x' (distribution y 1.0)``, for messages about another plugin."""
        dist = " ".join(part for part in (self.distribution, self.version) if part)
        return f"plugin {self.name!r}" + (f" (distribution {dist})" if dist else "")


def call_impl(impl: pluggy.HookImpl, **kwargs: object) -> Any:
    """Call one implementation with the arguments it asks for (pluggy's opt-in arguments)."""
    return impl.function(*(kwargs[name] for name in impl.argnames))


def _normalise_distribution(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class PluginRegistry:
    """Every plugin found, in load order, healthy or not; build it with :meth:`build`."""

    def __init__(self) -> None:
        self._pm = pluggy.PluginManager(NAME)
        self._pm.add_hookspecs(hookspecs)
        self._entries: list[LoadedProvider] = []
        self._callers: dict[tuple[str, str], pluggy.HookCaller] = {}

    @classmethod
    def build(cls, candidates: list[PluginCandidate]) -> PluginRegistry:
        """Register and validate ``candidates``; never raises because of a plugin."""
        registry = cls()
        for candidate in candidates:
            registry._add(candidate)
        registry._check_conflicts()
        # Every impl is now either verified against a spec or its plugin was rejected above.
        registry._pm.check_pending()
        return registry

    # -- registering -----------------------------------------------------------------------

    def _add(self, candidate: PluginCandidate) -> None:
        entry = LoadedProvider(
            name=candidate.name,
            distribution=candidate.distribution,
            version=candidate.version,
            info=None,
            error=candidate.error,
            key=candidate.name,
            plugin=candidate.plugin,
        )
        self._entries.append(entry)
        if entry.error is not None or candidate.plugin is None:
            return
        index = len(self._entries) - 1
        problem = self._register(entry)
        if problem is not None:
            self.mark_broken(index, problem)
            return
        self._declare(index)

    def _register(self, entry: LoadedProvider) -> PluginError | None:
        plugin = entry.plugin
        holder = self._registered_entry(entry.key)
        if holder is not None:
            return PluginConflictError(
                entry.name,
                entry.distribution,
                f"is registered under the name {entry.key!r}, which {holder.where} already uses",
            )
        for other in self._entries:
            if other is not entry and other.plugin is plugin and self.is_registered(other):
                return PluginConflictError(
                    entry.name,
                    entry.distribution,
                    f"is the same object as {other.where}",
                )
        unmarked = sorted(
            attr
            for attr in dir(plugin)
            if attr.startswith(HOOK_PREFIX)
            and inspect.isroutine(getattr(plugin, attr, None))
            and self._pm.parse_hookimpl_opts(plugin, attr) is None
        )
        if unmarked:
            return PluginLoadError(
                entry.name,
                entry.distribution,
                f"function {unmarked[0]!r} is not marked with @hookimpl "
                "(from nodewright.plugin import hookimpl)",
            )
        try:
            self._pm.register(plugin, name=entry.key)
        except pluggy.PluginValidationError as exc:
            lines = str(exc).splitlines()
            return PluginLoadError(
                entry.name,
                entry.distribution,
                "invalid hook implementation: " + "; ".join(line.strip() for line in lines[1:]),
            )
        except ValueError as exc:
            return PluginLoadError(entry.name, entry.distribution, describe_exception(exc))
        for caller in self._pm.get_hookcallers(plugin) or []:
            own = [impl for impl in caller.get_hookimpls() if impl.plugin is plugin]
            if caller.has_spec() or all(impl.optionalhook for impl in own):
                continue
            suggestion = difflib.get_close_matches(caller.name, HOOK_NAMES, n=1)
            hint = f"; did you mean {suggestion[0]!r}?" if suggestion else ""
            self._pm.unregister(name=entry.key)
            return PluginLoadError(
                entry.name,
                entry.distribution,
                f"function {caller.name!r} matches no hook in the nodewright contract{hint}",
            )
        return None

    def _declare(self, index: int) -> None:
        """Ask a registered plugin who it is; check the answer and the hooks it must have."""
        entry = self._entries[index]
        impl = self.impl("nodewright_provider_info", entry.key)
        if impl is None:
            return  # a contributing plugin, not a provider
        try:
            info = call_impl(impl)
        except Exception as exc:
            log.debug("nodewright_provider_info of %s raised", entry.where, exc_info=True)
            self.mark_broken(
                index,
                PluginLoadError(
                    entry.name,
                    entry.distribution,
                    f"nodewright_provider_info raised {describe_exception(exc)}",
                ),
            )
            return
        problem = provider_info_problem(info)
        if problem is not None:
            self.mark_broken(
                index,
                PluginContractError(
                    entry.name, entry.distribution, f"nodewright_provider_info {problem}"
                ),
            )
            return
        assert isinstance(info, ProviderInfo)  # NOTE: narrowed by provider_info_problem
        entry = replace(entry, name=info.name, info=info)
        self._entries[index] = entry
        missing = [hook for hook in REQUIRED_PROVIDER_HOOKS if self.impl(hook, entry.key) is None]
        if missing:
            self.mark_broken(
                index,
                PluginLoadError(
                    entry.name,
                    entry.distribution,
                    f"is a provider but does not implement {', '.join(missing)}",
                ),
            )

    def _check_conflicts(self) -> None:
        by_name: dict[str, list[int]] = {}
        by_kind: dict[tuple[str, str], list[int]] = {}
        for index, entry in enumerate(self._entries):
            if entry.info is None or not entry.healthy:
                continue
            by_name.setdefault(entry.info.name, []).append(index)
            for kind in entry.info.node_classes:
                by_kind.setdefault((kind.group, kind.kind), []).append(index)
        clashes: list[tuple[str, list[int]]] = [
            (f"provider name {name!r}", indices)
            for name, indices in by_name.items()
            if len(indices) > 1
        ]
        clashes += [
            (f"NodeClass kind {kind} ({group})", indices)
            for (group, kind), indices in by_kind.items()
            if len(indices) > 1
        ]
        for what, indices in clashes:
            for index in indices:
                others = " and ".join(
                    self._entries[other].where for other in indices if other != index
                )
                entry = self._entries[index]
                self.mark_broken(
                    index,
                    PluginConflictError(
                        entry.name, entry.distribution, f"declares {what}, as does {others}"
                    ),
                )

    def mark_broken(self, index: int, error: PluginError) -> None:
        """Mark the plugin at ``index`` broken (keeping its first error) and stop calling it."""
        entry = self._entries[index]
        if entry.error is None:
            self._entries[index] = replace(entry, error=error)
        if self.is_registered(entry):
            self._pm.unregister(name=entry.key)
        self._callers.clear()

    # -- what is loaded --------------------------------------------------------------------

    @property
    def entries(self) -> list[LoadedProvider]:
        """Every plugin found, in load order, healthy or not."""
        return list(self._entries)

    def is_registered(self, entry: LoadedProvider) -> bool:
        return entry.plugin is not None and self._pm.get_plugin(entry.key) is entry.plugin

    def _registered_entry(self, key: str) -> LoadedProvider | None:
        for entry in self._entries:
            if entry.key == key and self.is_registered(entry):
                return entry
        return None

    def provider(self, name: str) -> LoadedProvider:
        """The provider declared as ``name``; raises its error if it is broken."""
        for entry in self._entries:
            if entry.info is not None and entry.info.name == name:
                if entry.error is not None:
                    raise entry.error
                return entry
        loaded = ", ".join(sorted(e.name for e in self._entries if e.info and e.healthy))
        raise PluginLoadError(
            name, "", f"no provider of this name is loaded (loaded: {loaded or 'none'})"
        )

    def provider_for(self, group: str, kind: str) -> LoadedProvider:
        """The provider that owns a NodeClass kind.

        Raises that provider's error when it is broken, and :class:`UnknownNodeClassError`,
        with an install hint, when no loaded provider declares the kind.
        """
        for entry in self._entries:
            if entry.info is None:
                continue
            if any(k.group == group and k.kind == kind for k in entry.info.node_classes):
                if entry.error is not None:
                    raise entry.error
                return entry
        hints: list[str] = []
        first_party = FIRST_PARTY_NODE_CLASSES.get((group, kind))
        if first_party is not None:
            distribution, extra = first_party
            for entry in self._entries:
                same = _normalise_distribution(entry.distribution) == distribution
                if entry.error is not None and entry.info is None and (same or entry.key == extra):
                    raise entry.error
            hints.append(f'install its provider with: pip install "nodewright[{extra}]"')
        served = sorted(f"{k.kind} ({k.group})" for k in self.node_class_kinds())
        hints.append(
            f"installed providers serve: {', '.join(served)}"
            if served
            else "no provider is installed"
        )
        raise UnknownNodeClassError(group, kind, "; ".join(hints))

    def owner_of(self, node_class: NodeClass) -> LoadedProvider:
        """The provider that owns ``node_class``'s kind (see :meth:`provider_for`)."""
        api_version = node_class.api_version or type(node_class).API_VERSION
        return self.provider_for(
            api_version.split("/", 1)[0], node_class.kind or type(node_class).KIND
        )

    def node_class_kinds(self) -> list[NodeClassKind]:
        """NodeClass kinds of every healthy provider."""
        return [
            kind
            for entry in self._entries
            if entry.info is not None and entry.healthy
            for kind in entry.info.node_classes
        ]

    def restricted_label_domains(self) -> frozenset[str]:
        """Label domains users may not set: Karpenter's and every provider's."""
        domains = set(RESTRICTED_LABEL_DOMAINS)
        for entry in self._entries:
            if entry.info is not None and entry.healthy:
                domains |= entry.info.restricted_label_domains
        return frozenset(domains)

    def well_known_labels(self) -> frozenset[str]:
        """Labels every instance type defines: Karpenter's and every provider's."""
        labels = set(WELL_KNOWN_LABELS)
        for entry in self._entries:
            if entry.info is not None and entry.healthy:
                labels |= entry.info.well_known_labels
        return frozenset(labels)

    def implemented_hooks(self, entry: LoadedProvider) -> list[str]:
        """The hooks ``entry``'s plugin marks, without the ``nodewright_`` prefix, sorted."""
        return sorted(
            name.removeprefix(HOOK_PREFIX)
            for name in HOOK_NAMES
            if entry.plugin is not None
            and self._pm.parse_hookimpl_opts(entry.plugin, name) is not None
        )

    # -- finding implementations -----------------------------------------------------------

    def impl(self, hook: str, key: str) -> pluggy.HookImpl | None:
        """The registered plugin ``key``'s own implementation of ``hook``, if any."""
        caller: pluggy.HookCaller = getattr(self._pm.hook, hook)
        for impl in caller.get_hookimpls():
            if impl.plugin_name == key and not (impl.wrapper or impl.hookwrapper):
                return impl
        return None

    def contributors(self, hook: str) -> list[tuple[LoadedProvider, pluggy.HookImpl]]:
        """Healthy plugins implementing ``hook``, in load order, with their implementation."""
        found = []
        for entry in self._entries:
            if entry.healthy and self.is_registered(entry):
                impl = self.impl(hook, entry.key)
                if impl is not None:
                    found.append((entry, impl))
        return found

    def owner_caller(self, hook: str, owner: LoadedProvider) -> pluggy.HookCaller:
        """``hook`` without the other providers' implementations (cached); plugins that are
        not providers, such as price overlays, still see the call."""
        cached = self._callers.get((hook, owner.key))
        if cached is None:
            others = [
                entry.plugin
                for entry in self._entries
                if entry.info is not None and entry.key != owner.key and self.is_registered(entry)
            ]
            cached = self._pm.subset_hook_caller(hook, remove_plugins=others)
            self._callers[(hook, owner.key)] = cached
        return cached
