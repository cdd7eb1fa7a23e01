"""The plugin host: the one place the core calls hooks.

Everything else in the core talks to providers through :class:`PluginHost`'s typed methods,
never through pluggy. The host

* loads plugins (:mod:`nodewright.plugin.loading` finds them, a
  :class:`~nodewright.plugin.registry.PluginRegistry` registers and validates them, keeping a
  broken plugin's error until something needs that plugin);
* sends owner hooks only to the owning provider (plugins that are not providers, such as
  price overlays, still see the call), checks every result against the spec
  (:mod:`nodewright.plugin.results`), and wraps anything unexpected in
  :class:`PluginContractError` naming the plugin, its distribution and the hook. The
  provider errors of :mod:`nodewright.plugin.errors` pass through as is;
* calls contributing hooks (labels, background work) plugin by plugin, so one failing
  plugin does not stop the others.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from nodewright import metrics
from nodewright.api.karpenter import NodeClaim, NodeClass
from nodewright.api.validation import domain_within, label_domain
from nodewright.clock import Poll
from nodewright.cluster.fence import Fence
from nodewright.plugin.answers import CatalogAnswers
from nodewright.plugin.errors import (
    PluginConflictError,
    PluginContractError,
    PluginError,
    PluginLoadError,
    ProviderError,
    TemporaryProviderError,
)
from nodewright.plugin.loading import collect_plugins, describe_exception
from nodewright.plugin.model import (
    DEFAULT_RECONCILE_PERIOD,
    Instance,
    InstanceType,
    LaunchRequest,
    LaunchResult,
    NodeClassKind,
    NodeClassReadiness,
    ProviderContext,
    RepairPolicy,
)
from nodewright.plugin.names import ENTRY_POINT_GROUP
from nodewright.plugin.registry import LoadedProvider, PluginRegistry, call_impl
from nodewright.plugin.results import (
    ResultError,
    check_deleted,
    check_drift_reason,
    check_instance_types,
    check_launch,
    check_line,
    check_lines,
    check_offerings_map,
    check_readiness,
    check_repair_policies,
    check_sequence,
    check_type,
    labels_problem,
    reconcile_period_problem,
)

log = logging.getLogger("nodewright.plugins")

#: How many recent call failures of contributing hooks the host remembers.
RECENT_ERRORS = 100


@contextmanager
def _checking(owner: LoadedProvider, hook: str) -> Iterator[None]:
    """Turn a result that breaks the spec into an error naming the plugin and the hook."""
    try:
        yield
    except ResultError as problem:
        raise PluginContractError(owner.name, owner.distribution, f"{hook} {problem}") from None


class PluginHost:
    """Loads providers and is the only caller of their hooks. Build it with :meth:`load`."""

    def __init__(self, registry: PluginRegistry | None = None) -> None:
        self._registry = registry if registry is not None else PluginRegistry()
        self._reconcile_due: dict[str, datetime] = {}
        #: When each plugin's background work has something due by time alone (its wait, or
        #: the deadline of a :class:`~nodewright.clock.Poll` it returned; None: nothing).
        self._reconcile_deadline: dict[str, datetime | None] = {}
        #: The cluster's version when each plugin's background work last ran.
        self._reconcile_seen: dict[str, int | None] = {}
        self._recent_errors: deque[PluginError] = deque(maxlen=RECENT_ERRORS)
        #: Each provider's repair policies, asked once (the hook must not change its answer).
        self._repair_policies: dict[str, tuple[RepairPolicy, ...]] = {}
        #: Each provider's last catalog answers, so an unchanged answer costs no checking.
        self._answers = CatalogAnswers()
        #: How many times a provider's background work ran (it may change what the
        #: provider answers afterwards).
        self.work_done = 0
        #: When set, no provider is called while it is closed (a replica that is not leading
        #: must not touch its cloud): calls raise NotLeaderError instead.
        self.fence: Fence | None = None

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
        candidates = collect_plugins(
            entry_points=entry_points, plugins=plugins, only=only, blocked=blocked, group=group
        )
        host = cls(PluginRegistry.build(candidates))
        for entry in host.errors:
            log.warning("%s", entry)
        return host

    def configure(self, context_for: Callable[[str], ProviderContext]) -> None:
        """Hand every healthy plugin its context; a plugin that raises is marked broken."""
        registry = self._registry
        for index, entry in enumerate(registry.entries):
            if not entry.healthy or not registry.is_registered(entry):
                continue
            impl = registry.impl("nodewright_configure", entry.key)
            if impl is None:
                continue
            context = context_for(entry.name)
            try:
                call_impl(impl, context=context)
            except Exception as exc:
                log.debug("nodewright_configure of %s raised", entry.where, exc_info=True)
                registry.mark_broken(
                    index,
                    PluginLoadError(
                        entry.name,
                        entry.distribution,
                        f"nodewright_configure failed: {describe_exception(exc)}",
                    ),
                )
                log.warning("%s", registry.entries[index].error)

    # -- what is loaded --------------------------------------------------------------------

    @property
    def providers(self) -> list[LoadedProvider]:
        """Every plugin found, in load order, healthy or not."""
        return self._registry.entries

    @property
    def errors(self) -> list[PluginError]:
        """Load, validation and configuration problems, each naming plugin and distribution."""
        return [entry.error for entry in self._registry.entries if entry.error is not None]

    @property
    def recent_errors(self) -> list[PluginError]:
        """The latest failures of contributing hooks (labels, background work), oldest first."""
        return list(self._recent_errors)

    def provider(self, name: str) -> LoadedProvider:
        """The provider declared as ``name``; raises its error if it is broken."""
        return self._registry.provider(name)

    def provider_for(self, group: str, kind: str) -> LoadedProvider:
        """The provider that owns a NodeClass kind.

        Raises that provider's error when it is broken, and
        :class:`~nodewright.plugin.errors.UnknownNodeClassError`, with an install hint, when
        no loaded provider declares the kind.
        """
        return self._registry.provider_for(group, kind)

    def node_class_kinds(self) -> list[NodeClassKind]:
        """NodeClass kinds of every healthy provider."""
        return self._registry.node_class_kinds()

    def restricted_label_domains(self) -> frozenset[str]:
        """Label domains users may not set: Karpenter's and every provider's."""
        return self._registry.restricted_label_domains()

    def well_known_labels(self) -> frozenset[str]:
        """Labels every instance type defines: Karpenter's and every provider's."""
        return self._registry.well_known_labels()

    def describe(self) -> list[dict[str, str]]:
        """Rows for ``nodewright plugins``: name, distribution, version, node_classes,
        hooks and status (``ok`` or ``error: ...``)."""
        rows = []
        for entry in self._registry.entries:
            kinds = entry.info.node_classes if entry.info is not None else ()
            rows.append(
                {
                    "name": entry.name,
                    "distribution": entry.distribution,
                    "version": entry.version,
                    "node_classes": ", ".join(f"{k.kind} ({k.group})" for k in kinds),
                    "hooks": ", ".join(self._registry.implemented_hooks(entry)),
                    "status": "ok" if entry.error is None else f"error: {entry.error.detail}",
                }
            )
        return rows

    # -- owner hooks -----------------------------------------------------------------------

    def _call_owner(self, owner: LoadedProvider, hook: str, **kwargs: object) -> Any:
        if self.fence is not None:
            self.fence.check(f"{hook} of provider {owner.name}")
        try:
            with metrics.cloudprovider_call(hook, owner.name):
                return self._registry.owner_caller(hook, owner)(**kwargs)
        except (ProviderError, PluginError):
            raise
        except Exception as exc:
            raise PluginContractError(
                owner.name, owner.distribution, f"{hook} raised {describe_exception(exc)}"
            ) from exc

    def _implements(self, owner: LoadedProvider, hook: str) -> bool:
        return self._registry.impl(hook, owner.key) is not None

    def configuration_problem(self, provider: str) -> str | None:
        """Why ``provider`` cannot work as configured (its own line), or None."""
        owner = self.provider(provider)
        hook = "nodewright_configuration_problem"
        if not self._implements(owner, hook):
            return None
        result = self._call_owner(owner, hook)
        with _checking(owner, hook):
            return check_line(result)

    def report_notes(self, provider: str) -> list[str]:
        """What ``provider`` wants a simulation report to say about its figures."""
        owner = self.provider(provider)
        hook = "nodewright_report_notes"
        if not self._implements(owner, hook):
            return []
        result = self._call_owner(owner, hook)
        with _checking(owner, hook):
            return check_lines(result)

    def node_class_status(self, node_class: NodeClass) -> NodeClassReadiness:
        """Whether nodes can be launched from ``node_class`` (``None`` from the hook: ready)."""
        owner = self._registry.owner_of(node_class)
        hook = "nodewright_node_class_status"
        result = self._call_owner(owner, hook, node_class=node_class)
        with _checking(owner, hook):
            return check_readiness(result)

    def instance_types(self, node_class: NodeClass) -> list[InstanceType]:
        """The owner's catalog for ``node_class``, priced by its offerings hook."""
        owner = self._registry.owner_of(node_class)
        hook = "nodewright_instance_types"
        result = self._call_owner(owner, hook, node_class=node_class)

        def check(answer: object) -> list[InstanceType]:
            with _checking(owner, hook):
                return check_instance_types(answer)

        key = (owner.key, node_class.kind, node_class.name)
        return self.price(node_class, self._answers.instance_types(key, result, check))

    def price(self, node_class: NodeClass, types: Sequence[InstanceType]) -> list[InstanceType]:
        """``types`` with the offerings the owner's offerings hook gives them now (the same
        list as last time when the answer is the same)."""
        owner = self._registry.owner_of(node_class)
        hook = "nodewright_offerings"
        priced = self._call_owner(owner, hook, node_class=node_class, instance_types=tuple(types))

        def merge() -> list[InstanceType]:
            with _checking(owner, hook):
                offerings = check_offerings_map(priced)
            merged = []
            for listed in types:
                found = offerings.get(listed.name, listed.offerings)
                # Re-deriving zone and capacity-type requirements keeps them true to the
                # offerings.
                merged.append(listed.with_offerings(found) if found else listed)
            return merged

        return self._answers.priced(
            (owner.key, node_class.kind, node_class.name), types, priced, merge
        )

    def launch(self, request: LaunchRequest) -> Instance:
        """Launch one instance for ``request.node_claim`` through the NodeClass's owner."""
        return self.launch_result(request).instance

    def launch_result(self, request: LaunchRequest) -> LaunchResult:
        """Launch as :meth:`launch` does, with the offerings the provider found without
        capacity on the way (none when it answered with a bare Instance)."""
        owner = self._registry.owner_of(request.node_class)
        hook = "nodewright_launch"
        # New instances are background work (registration, status); run it on the next pass.
        self._reconcile_due.pop(owner.key, None)
        result = self._call_owner(owner, hook, request=request)
        with _checking(owner, hook):
            return check_launch(result)

    def get(self, provider: str, provider_id: str) -> Instance:
        owner = self.provider(provider)
        hook = "nodewright_get"
        result = self._call_owner(owner, hook, provider_id=provider_id)
        with _checking(owner, hook):
            return check_type(result, Instance)

    def list_instances(self, provider: str) -> list[Instance]:
        owner = self.provider(provider)
        hook = "nodewright_list"
        result = self._call_owner(owner, hook)
        with _checking(owner, hook):
            return check_sequence(result, Instance)

    def delete(self, provider: str, provider_id: str) -> None:
        """Start or continue terminating; raises InstanceNotFoundError once it is gone."""
        owner = self.provider(provider)
        hook = "nodewright_delete"
        self._reconcile_due.pop(owner.key, None)
        result = self._call_owner(owner, hook, provider_id=provider_id)
        with _checking(owner, hook):
            check_deleted(result)

    def is_drifted(self, node_class: NodeClass, node_claim: NodeClaim) -> str | None:
        """The owner's drift reason for ``node_claim``, or None."""
        owner = self._registry.owner_of(node_class)
        hook = "nodewright_is_drifted"
        result = self._call_owner(owner, hook, node_claim=node_claim, node_class=node_class)
        with _checking(owner, hook):
            return check_drift_reason(result)

    def repair_policies(self, provider: str) -> tuple[RepairPolicy, ...]:
        """The node conditions that mark ``provider``'s nodes for repair (none when it does
        not answer the hook); asked once, then remembered."""
        known = self._repair_policies.get(provider)
        if known is not None:
            return known
        owner = self.provider(provider)
        hook = "nodewright_repair_policies"
        policies: tuple[RepairPolicy, ...] = ()
        if self._implements(owner, hook):
            result = self._call_owner(owner, hook)
            with _checking(owner, hook):
                policies = check_repair_policies(result)
        self._repair_policies[provider] = policies
        return policies

    # -- contributing hooks ----------------------------------------------------------------

    def _record(self, error: PluginError) -> None:
        log.warning("%s", error)
        self._recent_errors.append(error)

    def node_labels(self, node_claim: NodeClaim, instance: Instance) -> dict[str, str]:
        """Merge every plugin's labels for a Node.

        A plugin that raises or returns garbage is recorded and skipped, as is a key in a
        restricted domain the plugin does not own; two plugins disagreeing on a value raise
        :class:`PluginConflictError` naming both. A plugin's
        :class:`TemporaryProviderError` (a label not known yet) is raised, its message
        prefixed with the plugin's name.
        """
        hook = "nodewright_node_labels"
        merged: dict[str, str] = {}
        setters: dict[str, LoadedProvider] = {}
        restricted = self.restricted_label_domains()
        for entry, impl in self._registry.contributors(hook):
            try:
                result = call_impl(impl, node_claim=node_claim, instance=instance)
            except TemporaryProviderError as pending:
                # A label it must set is not known yet: registration waits for it.
                raise TemporaryProviderError(f"{entry.where}: {pending}", pending.delay) from None
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
            problem = labels_problem(result)
            if problem is not None:
                self._record(
                    PluginContractError(entry.name, entry.distribution, f"{hook} {problem}")
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
        domain = label_domain(key)
        if not domain:
            return True
        claimed = [r for r in restricted if domain_within(domain, r)]
        if not claimed:
            return True
        info = entry.info
        if info is None:
            return False
        return key in info.well_known_labels or any(
            r in info.restricted_label_domains for r in claimed
        )

    def reconcile(self, now: datetime, version: Callable[[], int] | None = None) -> timedelta:
        """Run the background work of every plugin that is due; return the time until the
        next one is. Failures are logged with the plugin's name and never raised.

        ``version`` tells the cluster's version: the wait is a :class:`Poll` when every plugin
        returned one and nothing changed in the cluster since its work last ran (a plugin looks
        at what changed only when it runs)."""
        hook = "nodewright_reconcile"
        if self.fence is not None:
            self.fence.check("the providers' background work")
        waits: list[timedelta] = []
        deadlines: list[timedelta] = []
        polls = True
        for entry, impl in self._registry.contributors(hook):
            due = self._reconcile_due.get(entry.key)
            if due is None or due <= now:
                period: timedelta = DEFAULT_RECONCILE_PERIOD
                self.work_done += 1
                try:
                    result = call_impl(impl, now=now)
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
                    if result is not None:
                        problem = reconcile_period_problem(result)
                        if problem is None:
                            period = result
                        else:
                            self._record(
                                PluginContractError(
                                    entry.name, entry.distribution, f"{hook} {problem}"
                                )
                            )
                due = now + period
                self._reconcile_due[entry.key] = due
                self._reconcile_seen[entry.key] = version() if version is not None else None
                self._reconcile_deadline[entry.key] = (
                    (None if period.deadline is None else now + period.deadline)
                    if isinstance(period, Poll)
                    else due
                )
            waits.append(due - now)
            deadline = self._reconcile_deadline.get(entry.key, due)
            seen = self._reconcile_seen.get(entry.key)
            current = version() if version is not None else None
            polls = polls and deadline != due and seen is not None and seen == current
            if deadline is not None:
                deadlines.append(max(deadline - now, timedelta(0)))
        wait = min(waits, default=DEFAULT_RECONCILE_PERIOD)
        if not polls:
            return wait
        # Every plugin only polls: say so, with the earliest thing one has due.
        return Poll(wait, min(deadlines, default=None))


__all__ = ["PluginHost"]
