"""The plugin host: the one place the core calls hooks.

Everything else in the core talks to providers through :class:`PluginHost`'s typed methods,
never through ``pm.hook``. The host

* registers what :mod:`nodewright.plugin.loading` found, validating each plugin on its own:
  hook signatures, hooks that match no spec, the provider's :class:`ProviderInfo`, the hooks
  a provider must implement, and duplicate provider names or NodeClass kinds;
* keeps going when a plugin is broken: the error is recorded on that plugin and raised only
  when something needs it (:meth:`PluginHost.provider_for`);
* sends owner hooks only to the owning provider (plugins that are not providers, such as
  price overlays, still see the call), checks every result against the spec, and wraps
  anything unexpected in :class:`PluginContractError` naming the plugin, its distribution
  and the hook. The provider errors of :mod:`nodewright.plugin.errors` pass through as is;
* calls contributing hooks (labels, background work) plugin by plugin, so one failing
  plugin does not stop the others.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import math
import re
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

import pluggy

from nodewright import metrics
from nodewright.api.karpenter import NodeClaim, NodeClass
from nodewright.api.labels import (
    CAPACITY_TYPE_RESERVED,
    RESTRICTED_LABEL_DOMAINS,
    WELL_KNOWN_LABELS,
)
from nodewright.plugin import hookspecs
from nodewright.plugin.errors import (
    PluginConflictError,
    PluginContractError,
    PluginError,
    PluginLoadError,
    ProviderError,
    UnknownNodeClassError,
)
from nodewright.plugin.loading import PluginCandidate, collect_plugins, describe_exception
from nodewright.plugin.model import (
    CAPACITY_TYPES,
    DEFAULT_RECONCILE_PERIOD,
    Instance,
    InstanceType,
    LaunchRequest,
    LaunchResult,
    NodeClassKind,
    NodeClassReadiness,
    Offering,
    ProviderContext,
    ProviderInfo,
    RepairPolicy,
    Reservation,
)
from nodewright.plugin.names import ENTRY_POINT_GROUP, NAME

log = logging.getLogger("nodewright.plugins")
T = TypeVar("T")

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
_PROVIDER_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
#: How many recent call failures of contributing hooks the host remembers.
RECENT_ERRORS = 100


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


def _label_domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def _domain_within(domain: str, restricted: str) -> bool:
    return domain == restricted or domain.endswith("." + restricted)


def _normalise_distribution(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _call_impl(impl: pluggy.HookImpl, **kwargs: object) -> Any:
    """Call one implementation with the arguments it asks for (pluggy's opt-in arguments)."""
    return impl.function(*(kwargs[name] for name in impl.argnames))


class PluginHost:
    """Loads providers and is the only caller of their hooks. Build it with :meth:`load`."""

    def __init__(self) -> None:
        self._pm = pluggy.PluginManager(NAME)
        self._pm.add_hookspecs(hookspecs)
        self._entries: list[LoadedProvider] = []
        self._callers: dict[tuple[str, str], pluggy.HookCaller] = {}
        self._reconcile_due: dict[str, datetime] = {}
        self._recent_errors: deque[PluginError] = deque(maxlen=RECENT_ERRORS)
        #: Each provider's repair policies, asked once (the hook must not change its answer).
        self._repair_policies: dict[str, tuple[RepairPolicy, ...]] = {}

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        *,
        entry_points: bool = True,
        plugins: Mapping[str, object] | None = None,
        only: Collection[str] | None = None,
        blocked: Collection[str] = (),
        group: str = ENTRY_POINT_GROUP,
    ) -> PluginHost:
        """Discover, register and validate plugins; never raises because of a plugin.

        ``plugins`` registers objects directly under the given names (tests, ``simulate``);
        ``only`` limits entry points to those names; ``blocked`` names are never loaded.
        Problems are in :attr:`errors` and on each :class:`LoadedProvider`.
        """
        host = cls()
        candidates = collect_plugins(
            entry_points=entry_points, plugins=plugins, only=only, blocked=blocked, group=group
        )
        for candidate in candidates:
            host._add(candidate)
        host._check_conflicts()
        # Every impl is now either verified against a spec or its plugin was rejected above.
        host._pm.check_pending()
        for entry in host.errors:
            log.warning("%s", entry)
        return host

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
            self._break(index, problem)
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
            if other is not entry and other.plugin is plugin and self._is_registered(other):
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
        impl = self._impl("nodewright_provider_info", entry.key)
        if impl is None:
            return  # a contributing plugin, not a provider
        try:
            info = _call_impl(impl)
        except Exception as exc:
            log.debug("nodewright_provider_info of %s raised", entry.where, exc_info=True)
            self._break(
                index,
                PluginLoadError(
                    entry.name,
                    entry.distribution,
                    f"nodewright_provider_info raised {describe_exception(exc)}",
                ),
            )
            return
        problem = _provider_info_problem(info)
        if problem is not None:
            self._break(
                index,
                PluginContractError(
                    entry.name, entry.distribution, f"nodewright_provider_info {problem}"
                ),
            )
            return
        assert isinstance(info, ProviderInfo)  # NOTE: narrowed by _provider_info_problem
        entry = replace(entry, name=info.name, info=info)
        self._entries[index] = entry
        missing = [hook for hook in REQUIRED_PROVIDER_HOOKS if self._impl(hook, entry.key) is None]
        if missing:
            self._break(
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
                self._break(
                    index,
                    PluginConflictError(
                        entry.name, entry.distribution, f"declares {what}, as does {others}"
                    ),
                )

    def _break(self, index: int, error: PluginError) -> None:
        """Mark a plugin broken (keeping its first error) and stop calling it."""
        entry = self._entries[index]
        if entry.error is None:
            self._entries[index] = replace(entry, error=error)
        if self._is_registered(entry):
            self._pm.unregister(name=entry.key)
        self._callers.clear()

    def _is_registered(self, entry: LoadedProvider) -> bool:
        return entry.plugin is not None and self._pm.get_plugin(entry.key) is entry.plugin

    def _registered_entry(self, key: str) -> LoadedProvider | None:
        for entry in self._entries:
            if entry.key == key and self._is_registered(entry):
                return entry
        return None

    def _impl(self, hook: str, key: str) -> pluggy.HookImpl | None:
        caller: pluggy.HookCaller = getattr(self._pm.hook, hook)
        for impl in caller.get_hookimpls():
            if impl.plugin_name == key and not (impl.wrapper or impl.hookwrapper):
                return impl
        return None

    # -- set-up ----------------------------------------------------------------------------

    def configure(self, context_for: Callable[[str], ProviderContext]) -> None:
        """Hand every healthy plugin its context; a plugin that raises is marked broken."""
        for index, entry in enumerate(self._entries):
            if not entry.healthy or not self._is_registered(entry):
                continue
            impl = self._impl("nodewright_configure", entry.key)
            if impl is None:
                continue
            context = context_for(entry.name)
            try:
                _call_impl(impl, context=context)
            except Exception as exc:
                log.debug("nodewright_configure of %s raised", entry.where, exc_info=True)
                self._break(
                    index,
                    PluginLoadError(
                        entry.name,
                        entry.distribution,
                        f"nodewright_configure failed: {describe_exception(exc)}",
                    ),
                )
                log.warning("%s", self._entries[index].error)

    # -- what is loaded --------------------------------------------------------------------

    @property
    def providers(self) -> list[LoadedProvider]:
        """Every plugin found, in load order, healthy or not."""
        return list(self._entries)

    @property
    def errors(self) -> list[PluginError]:
        """Load, validation and configuration problems, each naming plugin and distribution."""
        return [entry.error for entry in self._entries if entry.error is not None]

    @property
    def recent_errors(self) -> list[PluginError]:
        """The latest failures of contributing hooks (labels, background work), oldest first."""
        return list(self._recent_errors)

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

    def describe(self) -> list[dict[str, str]]:
        """Rows for ``nodewright plugins``: name, distribution, version, node_classes,
        hooks and status (``ok`` or ``error: ...``)."""
        rows = []
        for entry in self._entries:
            kinds = entry.info.node_classes if entry.info is not None else ()
            hooks = sorted(
                name.removeprefix(HOOK_PREFIX)
                for name in HOOK_NAMES
                if entry.plugin is not None
                and self._pm.parse_hookimpl_opts(entry.plugin, name) is not None
            )
            rows.append(
                {
                    "name": entry.name,
                    "distribution": entry.distribution,
                    "version": entry.version,
                    "node_classes": ", ".join(f"{k.kind} ({k.group})" for k in kinds),
                    "hooks": ", ".join(hooks),
                    "status": "ok" if entry.error is None else f"error: {entry.error.detail}",
                }
            )
        return rows

    # -- owner hooks -----------------------------------------------------------------------

    def _owner_of(self, node_class: NodeClass) -> LoadedProvider:
        api_version = node_class.api_version or type(node_class).API_VERSION
        return self.provider_for(
            api_version.split("/", 1)[0], node_class.kind or type(node_class).KIND
        )

    def _caller(self, hook: str, owner: LoadedProvider) -> pluggy.HookCaller:
        """``hook`` without the other providers' implementations (cached)."""
        cached = self._callers.get((hook, owner.key))
        if cached is None:
            others = [
                entry.plugin
                for entry in self._entries
                if entry.info is not None and entry.key != owner.key and self._is_registered(entry)
            ]
            cached = self._pm.subset_hook_caller(hook, remove_plugins=others)
            self._callers[(hook, owner.key)] = cached
        return cached

    def _call_owner(self, owner: LoadedProvider, hook: str, **kwargs: object) -> Any:
        try:
            with metrics.cloudprovider_call(hook, owner.name):
                return self._caller(hook, owner)(**kwargs)
        except (ProviderError, PluginError):
            raise
        except Exception as exc:
            raise PluginContractError(
                owner.name, owner.distribution, f"{hook} raised {describe_exception(exc)}"
            ) from exc

    def configuration_problem(self, provider: str) -> str | None:
        """Why ``provider`` cannot work as configured (its own line), or None."""
        owner = self.provider(provider)
        hook = "nodewright_configuration_problem"
        if self._impl(hook, owner.key) is None:
            return None
        result = self._call_owner(owner, hook)
        if result is not None and not (isinstance(result, str) and result):
            raise _contract(owner, hook, f"returned {_shown(result)}, not a line or None")
        return result

    def report_notes(self, provider: str) -> list[str]:
        """What ``provider`` wants a simulation report to say about its figures."""
        owner = self.provider(provider)
        hook = "nodewright_report_notes"
        if self._impl(hook, owner.key) is None:
            return []
        result = self._call_owner(owner, hook)
        if result is None:
            return []
        if not isinstance(result, list | tuple) or not all(isinstance(x, str) for x in result):
            raise _contract(owner, hook, f"returned {_shown(result)}, not a list of lines")
        return [line for line in result if line]

    def node_class_status(self, node_class: NodeClass) -> NodeClassReadiness:
        """Whether nodes can be launched from ``node_class`` (``None`` from the hook: ready)."""
        owner = self._owner_of(node_class)
        result = self._call_owner(owner, "nodewright_node_class_status", node_class=node_class)
        if result is None:
            return NodeClassReadiness(ready=True)
        _expect(owner, "nodewright_node_class_status", result, NodeClassReadiness)
        return result  # type: ignore[no-any-return]

    def instance_types(self, node_class: NodeClass) -> list[InstanceType]:
        """The owner's catalog for ``node_class``, priced by its offerings hook."""
        owner = self._owner_of(node_class)
        hook = "nodewright_instance_types"
        result = self._call_owner(owner, hook, node_class=node_class)
        return self.price(node_class, _check_instance_types(owner, hook, result))

    def price(self, node_class: NodeClass, types: Sequence[InstanceType]) -> list[InstanceType]:
        """``types`` with the offerings the owner's offerings hook gives them now."""
        owner = self._owner_of(node_class)
        hook = "nodewright_offerings"
        priced = self._call_owner(owner, hook, node_class=node_class, instance_types=tuple(types))
        offerings = _check_offerings_map(owner, hook, priced)
        merged = []
        for listed in types:
            found = offerings.get(listed.name, listed.offerings)
            # Re-deriving zone and capacity-type requirements keeps them true to the offerings.
            merged.append(listed.with_offerings(found) if found else listed)
        return merged

    def launch(self, request: LaunchRequest) -> Instance:
        """Launch one instance for ``request.node_claim`` through the NodeClass's owner."""
        return self.launch_result(request).instance

    def launch_result(self, request: LaunchRequest) -> LaunchResult:
        """Launch as :meth:`launch` does, with the offerings the provider found without
        capacity on the way (none when it answered with a bare Instance)."""
        owner = self._owner_of(request.node_class)
        # New instances are background work (registration, status); run it on the next pass.
        self._reconcile_due.pop(owner.key, None)
        result = self._call_owner(owner, "nodewright_launch", request=request)
        if isinstance(result, Instance):
            result = LaunchResult(result)
        if not isinstance(result, LaunchResult):
            raise _contract(owner, "nodewright_launch", f"returned {_shown(result)}, not Instance")
        _check_launch_result(owner, "nodewright_launch", result)
        return result

    def get(self, provider: str, provider_id: str) -> Instance:
        owner = self.provider(provider)
        result = self._call_owner(owner, "nodewright_get", provider_id=provider_id)
        _expect(owner, "nodewright_get", result, Instance)
        return result  # type: ignore[no-any-return]

    def list_instances(self, provider: str) -> list[Instance]:
        owner = self.provider(provider)
        result = self._call_owner(owner, "nodewright_list")
        return _check_sequence(owner, "nodewright_list", result, Instance)

    def delete(self, provider: str, provider_id: str) -> None:
        """Start or continue terminating; raises InstanceNotFoundError once it is gone."""
        owner = self.provider(provider)
        self._reconcile_due.pop(owner.key, None)
        result = self._call_owner(owner, "nodewright_delete", provider_id=provider_id)
        if result is not None:
            raise PluginContractError(
                owner.name,
                owner.distribution,
                f"nodewright_delete returned {type(result).__name__}, not None",
            )

    def is_drifted(self, node_class: NodeClass, node_claim: NodeClaim) -> str | None:
        """The owner's drift reason for ``node_claim``, or None."""
        owner = self._owner_of(node_class)
        result = self._call_owner(
            owner, "nodewright_is_drifted", node_claim=node_claim, node_class=node_class
        )
        if result is not None and not (isinstance(result, str) and result):
            raise PluginContractError(
                owner.name,
                owner.distribution,
                f"nodewright_is_drifted returned {result!r}, not a drift reason or None",
            )
        return result

    def repair_policies(self, provider: str) -> tuple[RepairPolicy, ...]:
        """The node conditions that mark ``provider``'s nodes for repair (none when it does
        not answer the hook); asked once, then remembered."""
        known = self._repair_policies.get(provider)
        if known is not None:
            return known
        owner = self.provider(provider)
        hook = "nodewright_repair_policies"
        if self._impl(hook, owner.key) is None:
            policies: tuple[RepairPolicy, ...] = ()
        else:
            result = self._call_owner(owner, hook)
            policies = () if result is None else tuple(_check_repair_policies(owner, hook, result))
        self._repair_policies[provider] = policies
        return policies

    # -- contributing hooks ----------------------------------------------------------------

    def _contributors(self, hook: str) -> list[tuple[LoadedProvider, pluggy.HookImpl]]:
        """Healthy plugins implementing ``hook``, in load order, with their implementation."""
        found = []
        for entry in self._entries:
            if entry.healthy and self._is_registered(entry):
                impl = self._impl(hook, entry.key)
                if impl is not None:
                    found.append((entry, impl))
        return found

    def _record(self, error: PluginError) -> None:
        log.warning("%s", error)
        self._recent_errors.append(error)

    def node_labels(self, node_claim: NodeClaim, instance: Instance) -> dict[str, str]:
        """Merge every plugin's labels for a Node.

        A plugin that raises or returns garbage is recorded and skipped, as is a key in a
        restricted domain the plugin does not own; two plugins disagreeing on a value raise
        :class:`PluginConflictError` naming both.
        """
        hook = "nodewright_node_labels"
        merged: dict[str, str] = {}
        setters: dict[str, LoadedProvider] = {}
        restricted = self.restricted_label_domains()
        for entry, impl in self._contributors(hook):
            try:
                result = _call_impl(impl, node_claim=node_claim, instance=instance)
            except Exception as exc:
                log.debug("%s of %s raised", hook, entry.where, exc_info=True)
                self._record(
                    PluginContractError(
                        entry.name, entry.distribution, f"{hook} raised {describe_exception(exc)}"
                    )
                )
                continue
            if result is None:
                continue
            if not isinstance(result, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in result.items()
            ):
                self._record(
                    PluginContractError(
                        entry.name,
                        entry.distribution,
                        f"{hook} returned {_shown(result)}, not a mapping of strings to strings",
                    )
                )
                continue
            for key, value in result.items():
                if not self._may_set(entry, key, restricted):
                    self._record(
                        PluginContractError(
                            entry.name,
                            entry.distribution,
                            f"{hook} set label {key!r}, which is in a restricted domain "
                            "the plugin does not own; ignored",
                        )
                    )
                    continue
                previous = setters.get(key)
                if previous is not None and merged[key] != value:
                    raise PluginConflictError(
                        entry.name,
                        entry.distribution,
                        f"sets label {key}={value!r}, but {previous.where} sets it to "
                        f"{merged[key]!r}",
                    )
                merged[key] = value
                setters[key] = entry
        return merged

    @staticmethod
    def _may_set(entry: LoadedProvider, key: str, restricted: frozenset[str]) -> bool:
        domain = _label_domain(key)
        if not domain:
            return True
        claimed = [r for r in restricted if _domain_within(domain, r)]
        if not claimed:
            return True
        info = entry.info
        if info is None:
            return False
        return key in info.well_known_labels or any(
            r in info.restricted_label_domains for r in claimed
        )

    def reconcile(self, now: datetime) -> timedelta:
        """Run the background work of every plugin that is due; return the time until the
        next one is. Failures are logged with the plugin's name and never raised."""
        hook = "nodewright_reconcile"
        waits: list[timedelta] = []
        for entry, impl in self._contributors(hook):
            due = self._reconcile_due.get(entry.key)
            if due is None or due <= now:
                period = DEFAULT_RECONCILE_PERIOD
                try:
                    result = _call_impl(impl, now=now)
                except Exception as exc:
                    log.debug("%s of %s raised", hook, entry.where, exc_info=True)
                    self._record(
                        PluginContractError(
                            entry.name,
                            entry.distribution,
                            f"{hook} raised {describe_exception(exc)}",
                        )
                    )
                else:
                    if isinstance(result, timedelta) and result >= timedelta(0):
                        period = result
                    elif result is not None:
                        self._record(
                            PluginContractError(
                                entry.name,
                                entry.distribution,
                                f"{hook} returned {_shown(result)}, not a timedelta >= 0 or None",
                            )
                        )
                due = now + period
                self._reconcile_due[entry.key] = due
            waits.append(due - now)
        return min(waits, default=DEFAULT_RECONCILE_PERIOD)


# -- result checks -------------------------------------------------------------------------


def _shown(value: object) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{type(value).__name__} {text}"


def _contract(owner: LoadedProvider, hook: str, message: str) -> PluginContractError:
    return PluginContractError(owner.name, owner.distribution, f"{hook} {message}")


def _expect(owner: LoadedProvider, hook: str, result: object, kind: type) -> None:
    if not isinstance(result, kind):
        raise _contract(owner, hook, f"returned {_shown(result)}, not {kind.__name__}")


def _check_instance(owner: LoadedProvider, hook: str, instance: Instance) -> None:
    """Fields the core writes into Kubernetes objects must be strings, or the write fails."""
    if not isinstance(instance.node_name, str):
        raise _contract(owner, hook, f"returned node_name {_shown(instance.node_name)}, not str")
    annotations = instance.annotations
    if not isinstance(annotations, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in annotations.items()
    ):
        raise _contract(
            owner, hook, f"returned annotations {_shown(annotations)}, not a str-to-str mapping"
        )


def _check_launch_result(owner: LoadedProvider, hook: str, result: LaunchResult) -> None:
    if not isinstance(result.instance, Instance):
        raise _contract(owner, hook, f"returned instance {_shown(result.instance)}, not Instance")
    _check_instance(owner, hook, result.instance)
    for triple in result.unavailable_offerings:
        if not (
            isinstance(triple, tuple)
            and len(triple) == 3
            and all(isinstance(part, str) and part for part in triple)
        ):
            raise _contract(
                owner,
                hook,
                f"returned unavailable offering {_shown(triple)}, not an "
                "(instance_type, zone, capacity_type) triple of strings",
            )
    if not isinstance(result.unavailable_ttl, timedelta) or result.unavailable_ttl <= timedelta(0):
        raise _contract(
            owner, hook, f"returned unavailable_ttl {_shown(result.unavailable_ttl)}, not positive"
        )


def _check_sequence(owner: LoadedProvider, hook: str, result: object, kind: type[T]) -> list[T]:
    if not isinstance(result, Sequence) or isinstance(result, str | bytes):
        raise _contract(
            owner, hook, f"returned {_shown(result)}, not a sequence of {kind.__name__}"
        )
    for item in result:
        if not isinstance(item, kind):
            raise _contract(owner, hook, f"returned an item {_shown(item)}, not {kind.__name__}")
    return list(result)


#: The statuses a Node condition can have.
CONDITION_STATUSES = ("True", "False", "Unknown")


def _check_repair_policies(owner: LoadedProvider, hook: str, result: object) -> list[RepairPolicy]:
    policies = _check_sequence(owner, hook, result, RepairPolicy)
    for policy in policies:
        declared: Any = policy  # plugins are untyped at run time
        if not isinstance(declared.condition_type, str) or not declared.condition_type:
            raise _contract(owner, hook, f"returned a policy without a condition type: {policy}")
        if declared.condition_status not in CONDITION_STATUSES:
            raise _contract(
                owner,
                hook,
                f"returned a policy for {declared.condition_type!r} with status "
                f"{declared.condition_status!r}, not one of {', '.join(CONDITION_STATUSES)}",
            )
        toleration = declared.toleration
        if not isinstance(toleration, timedelta) or toleration < timedelta(0):
            raise _contract(
                owner,
                hook,
                f"returned a policy for {declared.condition_type!r} with toleration "
                f"{_shown(toleration)}, not a timedelta >= 0",
            )
    return policies


def _offering_problem(offering: Offering) -> str | None:
    if not isinstance(offering.zone, str) or not offering.zone:
        return "has no zone"
    if offering.capacity_type not in CAPACITY_TYPES:
        allowed = ", ".join(CAPACITY_TYPES)
        return f"has capacity type {offering.capacity_type!r}, not one of {allowed}"
    price = offering.price
    if isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price):
        return f"has price {price!r}, not a finite number"
    if price < 0:
        return f"has a negative price {price!r}"
    declared: object = offering.reservation  # plugins may pass anything
    if declared is not None:
        if not isinstance(declared, Reservation):
            return f"has reservation {_shown(declared)}, not a Reservation"
        reservation = declared
        if offering.capacity_type != CAPACITY_TYPE_RESERVED:
            return f"names reservation {reservation.id!r} but is not of capacity type reserved"
        if not isinstance(reservation.id, str) or not reservation.id:
            return "has a reservation without an id"
        if not isinstance(reservation.label, str) or not reservation.label:
            return f"has reservation {reservation.id!r} without a label key"
        capacity = reservation.capacity
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            return f"has reservation {reservation.id!r} with capacity {capacity!r}, not a count"
    return None


def _check_offerings(
    owner: LoadedProvider, hook: str, type_name: str, offerings: object
) -> tuple[Offering, ...]:
    checked = _check_sequence(owner, hook, offerings, Offering)
    for offering in checked:
        problem = _offering_problem(offering)
        if problem is not None:
            raise _contract(
                owner,
                hook,
                f"returned an offering of {type_name!r} in {offering.zone!r} that {problem}",
            )
    return tuple(checked)


def _check_instance_types(owner: LoadedProvider, hook: str, result: object) -> list[InstanceType]:
    types = _check_sequence(owner, hook, result, InstanceType)
    seen: set[str] = set()
    for instance_type in types:
        if instance_type.name in seen:
            raise _contract(owner, hook, f"returned instance type {instance_type.name!r} twice")
        seen.add(instance_type.name)
        _check_offerings(owner, hook, instance_type.name, instance_type.offerings)
    return types


def _check_offerings_map(
    owner: LoadedProvider, hook: str, result: object
) -> dict[str, tuple[Offering, ...]]:
    if result is None:
        return {}
    if not isinstance(result, Mapping):
        raise _contract(owner, hook, f"returned {_shown(result)}, not a mapping")
    return {
        str(name): _check_offerings(owner, hook, str(name), offerings)
        for name, offerings in result.items()
    }


def _provider_info_problem(info: object) -> str | None:
    """Why ``info`` is not a usable ProviderInfo, or None."""
    if not isinstance(info, ProviderInfo):
        return f"returned {_shown(info)}, not ProviderInfo"
    # Plugins are untyped at run time: check every field, whatever its annotation says.
    declared: Any = info
    if not isinstance(declared.name, str) or not _PROVIDER_NAME.match(declared.name):
        return (
            f"declared the name {declared.name!r}; a provider name is lower-case letters, "
            "digits and dashes"
        )
    if not isinstance(declared.node_classes, tuple | list):
        return f"declared node_classes as {_shown(declared.node_classes)}, not a tuple"
    for kind in declared.node_classes:
        if not isinstance(kind, NodeClassKind):
            return f"declared a node class {_shown(kind)}, not NodeClassKind"
        model: Any = kind.model
        if not (isinstance(model, type) and issubclass(model, NodeClass)):
            return f"declared {kind.kind} with model {model!r}, not a NodeClass subclass"
        if kind.kind != model.KIND or model.group() != kind.group:
            return (
                f"declared {kind.kind} ({kind.group}), but its model {model.__name__} is "
                f"{model.KIND} ({model.group()})"
            )
    for attribute in ("restricted_label_domains", "well_known_labels"):
        values = getattr(declared, attribute)
        if not isinstance(values, frozenset | set) or not all(isinstance(v, str) for v in values):
            return f"declared {attribute} as {_shown(values)}, not a frozenset of strings"
    return None


__all__ = [
    "FIRST_PARTY_NODE_CLASSES",
    "HOOK_NAMES",
    "REQUIRED_PROVIDER_HOOKS",
    "LoadedProvider",
    "PluginHost",
]
