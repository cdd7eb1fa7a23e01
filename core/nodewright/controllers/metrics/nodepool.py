"""NodePool metrics (``metrics.nodepool``, Karpenter's ``pkg/controllers/metrics/nodepool``
and ``pkg/state/cost``): ``karpenter_nodepools_usage``, ``_limit`` and ``_cost_total`` per
NodePool, and ``karpenter_nodepools_cost_tracker_errors_total``.

It follows NodeClaims and NodePools as they change, so a pass does work only for what
changed: a NodeClaim that launched is counted at its offering's price, one that is gone stops
counting, a NodePool's usage and limits are read from its status and spec when it changes,
and a deleted NodePool's series go with it. Every hour the counted offerings are priced again
from the catalog, as Karpenter's pricing refresh does.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import cast

from nodewright import metrics
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.labels import NODEPOOL_LABEL
from nodewright.api.quantity import QuantityError, parse_quantity
from nodewright.clock import Clock
from nodewright.cluster import Cluster
from nodewright.controllers.catalog import Catalog, NodeClassNotFoundError
from nodewright.controllers.state.cost import (
    CostError,
    OfferingKey,
    PoolCosts,
    offering_of,
    offering_prices,
)
from nodewright.controllers.workqueue import Resync, wait_until
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.scheduling.instancetype import InstanceType

log = logging.getLogger("nodewright.metrics")

#: How often counted offerings are priced again (Karpenter's pricing controller).
REPRICE_PERIOD = timedelta(hours=1)
#: How soon a NodeClaim that could not be counted is tried again.
RETRY_PERIOD = timedelta(minutes=1)


class NodePoolMetrics:
    name = "metrics.nodepool"

    def __init__(self, cluster: Cluster, catalog: Catalog, clock: Clock) -> None:
        self._cluster = cluster
        self._catalog = catalog
        self._clock = clock
        self._changes = cluster.state.feed(NodePool, NodeClaim)
        self._costs = PoolCosts()
        #: NodeClaims whose counting failed, to try again at :attr:`_retry_at`.
        self._failed: set[str] = set()
        self._retry_at: datetime | None = None
        self._reprice_at: datetime | None = None
        self._resync = Resync()
        #: NodePool -> the (gauge, resource) usage and limit series set for it.
        self._series: dict[str, set[tuple[str, str]]] = {}
        #: NodePools whose cost series is set.
        self._published_costs: set[str] = set()
        #: NodePool -> the instance types its counted offerings were last priced from.
        self._priced_from: dict[str, list[InstanceType]] = {}
        #: NodePool -> the last catalog its offerings' prices were read from, and those prices.
        self._price_tables: dict[str, tuple[list[InstanceType], dict[OfferingKey, float]]] = {}

    def resync(self) -> None:
        self._resync.reset()

    def reconcile(self) -> timedelta | None:
        state = self._cluster.state
        now = self._clock.now()
        dirty: set[str] = set()
        claims: set[str] = set()
        if self._resync.due(now):
            dirty |= {key[1] for key in state.objects(NodePool)} | set(self._series)
            claims |= {key[1] for key in state.objects(NodeClaim)}
        for change in self._changes.drain():
            if change.kind is NodePool:
                dirty.add(change.key[1])
            elif change.new is None:
                self._forget(cast(NodeClaim, change.old))
                dirty.add(cast(NodeClaim, change.old).metadata.labels.get(NODEPOOL_LABEL, ""))
            else:
                claims.add(change.key[1])
        if self._retry_at is not None and now >= self._retry_at:
            claims |= self._failed
            self._retry_at = None
        for name in sorted(claims):
            claim = state.get(NodeClaim, ("", name))
            if claim is not None and not self._costs.counted(name):
                dirty |= self._count(claim)
        if self._failed and self._retry_at is None:
            self._retry_at = now + RETRY_PERIOD
        if self._reprice_at is None or now >= self._reprice_at:
            self._reprice_at = now + REPRICE_PERIOD
            dirty |= self._reprice()
        for pool in sorted(dirty - {""}):
            self._publish(pool)
        # The resync only looks again; the price refresh and a retry fall due by time.
        due = min(t for t in (self._reprice_at, self._retry_at) if t is not None)
        return wait_until(now, due, self._resync.at)

    # -- cost ---------------------------------------------------------------------------------

    def _count(self, claim: NodeClaim) -> set[str]:
        """Count a NodeClaim that launched; the pools whose cost changed."""
        found = offering_of(claim)
        if found is None:
            return set()  # not launched yet: counted when its labels arrive
        pool_name, offering = found
        self._failed.discard(claim.name)
        price = self._costs.known_price(pool_name, offering)
        if price is None:
            try:
                prices = self._prices(pool_name, self._instance_types(pool_name))
            except _CostLookupError as error:
                metrics.cost_tracker_errors.labels(pool_name).inc()
                log.error("Cannot count the cost of nodeclaim %s: %s", claim.name, error)
                self._failed.add(claim.name)
                return set()
            price = prices.get(offering)
            if price is None:
                log.error(
                    "No price for nodeclaim %s: nodepool %s offers no %s in %s (%s); its cost "
                    "counts as 0 until the next price refresh",
                    claim.name,
                    pool_name,
                    offering.instance_type,
                    offering.zone,
                    offering.capacity_type,
                )
                price = 0.0
        self._costs.add(claim.name, pool_name, offering, price)
        return {pool_name}

    def _forget(self, claim: NodeClaim) -> None:
        self._failed.discard(claim.name)
        try:
            self._costs.remove(claim.name)
        except CostError as error:
            pool = claim.metadata.labels.get(NODEPOOL_LABEL, "")
            metrics.cost_tracker_errors.labels(pool).inc()
            log.error("Cost tracking: %s", error)

    def _reprice(self) -> set[str]:
        repriced = set()
        for key in self._cluster.state.objects(NodePool):
            pool = key[1]
            if not self._costs.offerings(pool):
                continue
            try:
                types = self._instance_types(pool)
            except _CostLookupError as error:
                log.warning("Cannot refresh the prices of nodepool %s: %s", pool, error)
                continue
            if self._priced_from.get(pool) is types:
                continue  # the same catalog (the host hands out one list per answer)
            self._priced_from[pool] = types
            self._costs.reprice(pool, self._prices(pool, types))
            repriced.add(pool)
        return repriced

    def _prices(self, pool: str, types: list[InstanceType]) -> dict[OfferingKey, float]:
        """Each offering's price in ``types``, read again only for another catalog (the host
        hands out one list per answer, and instance types are frozen)."""
        kept = self._price_tables.get(pool)
        if kept is not None and kept[0] is types:
            return kept[1]
        prices = offering_prices(types)
        self._price_tables[pool] = (types, prices)
        return prices

    def _instance_types(self, pool_name: str) -> list[InstanceType]:
        pool = self._cluster.state.get(NodePool, ("", pool_name))
        if pool is None:
            raise _CostLookupError(f'nodepool "{pool_name}" not found')
        try:
            node_class = self._catalog.node_class(pool.spec.template.spec.node_class_ref)
            return self._catalog.pool_instance_types(node_class, pool_name)
        except (UnknownNodeClassError, NodeClassNotFoundError, PluginError) as error:
            raise _CostLookupError(
                f'listing the instance types of nodepool "{pool_name}": {error}'
            ) from error

    # -- series -------------------------------------------------------------------------------

    def _publish(self, name: str) -> None:
        pool = self._cluster.state.get(NodePool, ("", name))
        old = self._series.pop(name, set())
        if pool is None:
            self._costs.drop_pool(name)
            self._priced_from.pop(name, None)
            self._price_tables.pop(name, None)
            for gauge, resource in old:
                _GAUGES[gauge].remove(name, resource)
            if name in self._published_costs:
                metrics.nodepools_cost.remove(name)
                self._published_costs.discard(name)
            return
        metrics.nodepools_cost.labels(name).set(self._costs.cost(name))
        self._published_costs.add(name)
        new: set[tuple[str, str]] = set()
        for gauge, resources in (("usage", pool.status.resources), ("limit", pool.spec.limits)):
            for resource, quantity in resources.items():
                try:
                    milli = parse_quantity(quantity)
                except QuantityError:
                    continue  # validation reports it; the pool's other series still count
                label = metrics.resource_type(resource)
                _GAUGES[gauge].labels(name, label).set(metrics.resource_value(resource, milli))
                new.add((gauge, label))
        for gauge, resource in old - new:
            _GAUGES[gauge].remove(name, resource)
        self._series[name] = new


class _CostLookupError(Exception):
    """The prices of a NodePool's offerings cannot be read now."""


_GAUGES = {"usage": metrics.nodepools_usage, "limit": metrics.nodepools_limit}
