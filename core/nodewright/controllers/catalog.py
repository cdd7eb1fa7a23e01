"""Instance types per NodeClass, cached between provider calls, with offerings the cloud
recently could not fill marked unavailable (Karpenter's unavailable-offerings cache).

Reserved capacity changes with every launch, so a NodeClass whose types offer reservations
is re-priced (the provider's offerings hook only) whenever the cluster changed since it was
last priced; the rest of its catalog still comes from the cache.

With the ``NodeOverlay`` gate on, the NodeOverlay controller hands the catalog its evaluation
(:meth:`Catalog.use_overlays`) and :meth:`Catalog.pool_instance_types` gives each NodePool its
overlaid types, rebuilt only when the evaluation or the NodeClass's catalog changed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from nodewright.api.karpenter import NodeClass, NodeClassReference
from nodewright.clock import Clock
from nodewright.cluster import Cluster, object_version
from nodewright.plugin.errors import PluginError
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.overlays import OverlayPlan

log = logging.getLogger("nodewright.catalog")

#: How long a provider's instance-type answer is reused.
CATALOG_TTL = timedelta(minutes=5)


class NodeClassNotFoundError(LookupError):
    """A NodePool or NodeClaim references a NodeClass object that does not exist."""


class NodePoolNotEvaluatedError(LookupError):
    """NodeOverlays are on and their last evaluation has not looked at this NodePool yet."""


@dataclass
class _Entry:
    fetched_at: datetime
    generation: int | None
    instance_types: list[InstanceType]
    #: The cluster's version (Events aside) when the offerings were last priced.
    priced_at: int
    #: Some offering is in a capacity reservation: re-price after every cluster change.
    reserved: bool = False

    def __post_init__(self) -> None:
        self.reserved = any(
            o.reservation is not None for it in self.instance_types for o in it.offerings
        )


class Catalog:
    def __init__(self, cluster: Cluster, host: PluginHost, clock: Clock) -> None:
        self._cluster = cluster
        self._host = host
        self._clock = clock
        self._entries: dict[tuple[str, str, str], _Entry] = {}
        self._unavailable: dict[tuple[str, str, str], datetime] = {}
        #: The NodeOverlay evaluation in force; None while the gate is off.
        self._overlays: OverlayPlan | None = None
        #: NodePool -> (the NodeClass catalog it was built from, the overlaid types).
        self._overlaid: dict[str, tuple[list[InstanceType], list[InstanceType]]] = {}
        #: id() of a list of types -> (that list, the unavailable offerings applied, the
        #: result): while neither changes, every caller gets the same list object, which lets
        #: readers that compare catalogs from pass to pass stop at identity.
        self._marked: dict[int, tuple[list[InstanceType], frozenset[object], list[InstanceType]]]
        self._marked = {}
        #: Counts the times a NodeClass's catalog was fetched or re-priced.
        self.generation = 0

    def node_class(self, ref: NodeClassReference) -> NodeClass:
        """The NodeClass object a reference points at.

        Raises UnknownNodeClassError when no provider serves the kind, and
        NodeClassNotFoundError when the object does not exist.
        """
        provider = self._host.provider_for(ref.group, ref.kind)
        assert provider.info is not None  # provider_for only returns healthy providers
        for kind in provider.info.node_classes:
            if kind.group == ref.group and kind.kind == ref.kind:
                found = self._cluster.get(kind.model, ref.name)
                if found is None:
                    raise NodeClassNotFoundError(
                        f"{ref.kind} {ref.name!r} (group {ref.group}) does not exist"
                    )
                return found
        raise NodeClassNotFoundError(f"{ref.kind} {ref.name!r} (group {ref.group}) is not served")

    def provider_name(self, ref: NodeClassReference) -> str:
        return self._host.provider_for(ref.group, ref.kind).name

    def instance_types(self, node_class: NodeClass) -> list[InstanceType]:
        """Every instance type of ``node_class``, with recently failed offerings unavailable."""
        return self._with_unavailable(self._entry(node_class).instance_types)

    def use_overlays(self, plan: OverlayPlan | None) -> None:
        """Apply this NodeOverlay evaluation from now on (None: no overlays, gate off)."""
        self._overlays = plan
        self._overlaid.clear()

    def pool_instance_types(
        self, node_class: NodeClass, pool: str | None, *, strict: bool = False
    ) -> list[InstanceType]:
        """The instance types NodePool ``pool`` launches from ``node_class``: with NodeOverlays
        applied, and recently failed offerings unavailable.

        A pool the overlay evaluation has not looked at yet gets the plain catalog, or raises
        :class:`NodePoolNotEvaluatedError` when ``strict`` (provisioning waits for it).
        """
        base = self._entry(node_class).instance_types
        plan = self._overlays
        if plan is None or pool is None:
            return self._with_unavailable(base)
        if pool not in plan.evaluated:
            if strict:
                raise NodePoolNotEvaluatedError(f'nodepool "{pool}" awaits nodeoverlay evaluation')
            return self._with_unavailable(base)
        cached = self._overlaid.get(pool)
        if cached is None or cached[0] is not base:
            cached = (base, plan.apply(pool, base))
            self._overlaid[pool] = cached
        return self._with_unavailable(cached[1])

    def _entry(self, node_class: NodeClass) -> _Entry:
        now = self._clock.now()
        key = (node_class.api_version, node_class.kind, node_class.name)
        entry = self._entries.get(key)
        if (
            entry is None
            or entry.generation != node_class.metadata.generation
            or now - entry.fetched_at >= CATALOG_TTL
        ):
            last = entry
            entry = _Entry(
                now,
                node_class.metadata.generation,
                self._host.instance_types(node_class),
                object_version(self._cluster),
            )
            self._entries[key] = entry
            # The host gives the same list back for an unchanged answer: no new catalog.
            if last is None or entry.instance_types is not last.instance_types:
                self.generation += 1
        elif entry.reserved and entry.priced_at != object_version(self._cluster):
            # Room in a reservation changes with launches and terminations, which are
            # cluster writes (Events aside); between them the last answer still holds.
            try:
                priced = self._host.price(node_class, entry.instance_types)
                entry.priced_at = object_version(self._cluster)
                if priced is not entry.instance_types:
                    entry.instance_types = priced
                    self.generation += 1
            except PluginError as error:
                log.warning(
                    "Could not refresh reserved capacity of %s %r, using the last answer: %s",
                    node_class.kind,
                    node_class.name,
                    error,
                )
        return entry

    def _with_unavailable(self, instance_types: list[InstanceType]) -> list[InstanceType]:
        now = self._clock.now()
        self._unavailable = {k: until for k, until in self._unavailable.items() if until > now}
        if not self._unavailable:
            if self._marked:
                self._marked.clear()
            return instance_types
        marks = frozenset(self._unavailable)
        found = self._marked.get(id(instance_types))
        if found is not None and found[0] is instance_types and found[1] == marks:
            return found[2]
        result = [self._apply_unavailable(it) for it in instance_types]
        if len(self._marked) > 64:
            self._marked.clear()
        self._marked[id(instance_types)] = (instance_types, marks, result)
        return result

    def _apply_unavailable(self, instance_type: InstanceType) -> InstanceType:
        if not any(
            (instance_type.name, o.zone, o.capacity_type) in self._unavailable
            for o in instance_type.offerings
        ):
            return instance_type
        offerings = tuple(
            replace(o, available=False)
            if (instance_type.name, o.zone, o.capacity_type) in self._unavailable
            else o
            for o in instance_type.offerings
        )
        return replace(instance_type, offerings=offerings)

    def mark_unavailable(
        self, instance_type: str, zone: str, capacity_type: str, ttl: timedelta
    ) -> None:
        """Stop offering this (type, zone, capacity type) for ``ttl``, e.g. after an ICE."""
        self._unavailable[(instance_type, zone, capacity_type)] = self._clock.now() + ttl
