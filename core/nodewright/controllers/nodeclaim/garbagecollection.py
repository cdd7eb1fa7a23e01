"""Garbage collection: NodeClaims and provider instances that lost each other.

Two kinds of leftovers appear after crashes, lost writes and clouds acting on their own:

* a NodeClaim whose instance is gone (terminated by the cloud, or by hand): it is deleted,
  unless its Node is still Ready (the kubelet is alive, so the provider's answer is not
  trusted), and its Node is then drained like any other;
* an instance no NodeClaim owns (its NodeClaim was deleted while the launch was in flight,
  or the launch record was lost): it is deleted once it is older than a grace period, which
  leaves time for a NodeClaim that has not yet recorded its launch to adopt it.

The framework does this for every provider, from the provider's ``list``, ``get`` and
``delete`` hooks, so providers need no garbage collector of their own.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from nodewright.api.core import Node
from nodewright.api.karpenter import CONDITION_LAUNCHED, NodeClaim
from nodewright.api.meta import is_true
from nodewright.clock import Clock, Poll
from nodewright.cluster import Cluster, object_version
from nodewright.controllers.catalog import Catalog
from nodewright.controllers.metrics.disruption import record_disrupted, reschedulable_pods
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    PluginError,
    TemporaryProviderError,
    UnknownNodeClassError,
)
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import Instance

log = logging.getLogger("nodewright.nodeclaim.garbagecollection")

#: How often NodeClaims and instances are compared (Karpenter's NodeClaim GC period).
PERIOD = timedelta(minutes=2)
#: An instance younger than this is never collected: its NodeClaim may not have recorded
#: the launch yet (Karpenter's AWS provider waits the same 30 seconds).
ORPHAN_GRACE = timedelta(seconds=30)
#: How soon an instance being deleted is asked again, until the provider reports it gone.
DELETE_POLL = timedelta(seconds=5)


class GarbageCollection:
    name = "nodeclaim.garbagecollection"

    def __init__(self, cluster: Cluster, host: PluginHost, catalog: Catalog, clock: Clock) -> None:
        self._cluster = cluster
        self._host = host
        self._catalog = catalog
        self._clock = clock
        self._due: datetime | None = None
        #: Whether the next pass is only the period's (nothing found due sooner).
        self._periodic = False
        #: The cluster's version at the end of the last pass.
        self._seen: int | None = None

    def resync(self) -> None:
        self._due = None

    def reconcile(self) -> timedelta | None:
        now = self._clock.now()
        if self._due is not None and now < self._due:
            return self._wait(now)
        due = now + PERIOD
        claims = self._cluster.list(NodeClaim)
        for provider in self._provider_names():
            try:
                instances = self._host.list_instances(provider)
            except (PluginError, TemporaryProviderError) as error:
                log.warning("Cannot list the instances of provider %s: %s", provider, error)
                due = min(due, now + DELETE_POLL)
                continue
            self._collect_claims(provider, claims, instances)
            next_orphan = self._collect_instances(provider, claims, instances, now)
            if next_orphan is not None:
                due = min(due, next_orphan)
        self._due = due
        self._periodic = due == now + PERIOD
        self._seen = object_version(self._cluster)
        return self._wait(now)

    def _wait(self, now: datetime) -> timedelta:
        """Until the next pass. Instances come and go only through this process's launches
        and deletes (which change the cluster) or a provider's background work (which says
        when), so waiting out the period is a poll while nothing changed since the last pass;
        an orphan or a failed listing is due."""
        assert self._due is not None
        wait = self._due - now
        unchanged = self._seen == object_version(self._cluster)
        return Poll(wait) if self._periodic and unchanged else wait

    def _provider_names(self) -> list[str]:
        return [
            entry.info.name
            for entry in self._host.providers
            if entry.info is not None and entry.healthy
        ]

    def _owner(self, claim: NodeClaim) -> str | None:
        try:
            return self._catalog.provider_name(claim.spec.node_class_ref)
        except (PluginError, UnknownNodeClassError):
            return None

    def _collect_claims(
        self, provider: str, claims: list[NodeClaim], instances: list[Instance]
    ) -> None:
        """Delete launched NodeClaims whose instance the provider no longer has."""
        listed = {instance.provider_id for instance in instances}
        for claim in claims:
            provider_id = claim.status.provider_id
            if (
                claim.deleting
                or not provider_id
                or provider_id in listed
                or not is_true(claim.status.conditions, CONDITION_LAUNCHED)
                or self._owner(claim) != provider
            ):
                continue
            try:
                self._host.get(provider, provider_id)
                continue  # a list that lagged behind: the instance is there
            except InstanceNotFoundError:
                pass
            except (PluginError, TemporaryProviderError) as error:
                log.warning("Cannot look up instance %s: %s", provider_id, error)
                continue
            if any(node.ready for node in self._cluster.state.nodes_with_provider_id(provider_id)):
                continue  # the kubelet still reports in; do not trust the provider alone
            log.info(
                "Garbage collecting nodeclaim %s with no cloudprovider representation (%s)",
                claim.name,
                provider_id,
            )
            self._cluster.delete(NodeClaim, claim.name)
            pods = reschedulable_pods(self._cluster.state, claim)
            record_disrupted(claim, "garbage_collected", pods=pods)

    def _collect_instances(
        self,
        provider: str,
        claims: list[NodeClaim],
        instances: list[Instance],
        now: datetime,
    ) -> datetime | None:
        """Delete instances no NodeClaim owns; return when to look again, if sooner."""
        owned = {claim.status.provider_id for claim in claims if claim.status.provider_id}
        # A NodeClaim that has not recorded its launch yet adopts its instance by name.
        adopting = {claim.name for claim in claims if not claim.status.provider_id}
        due: datetime | None = None
        for instance in instances:
            if instance.provider_id in owned or instance.node_claim in adopting:
                continue
            collectable = instance.created_at + ORPHAN_GRACE
            if now < collectable:
                due = collectable if due is None else min(due, collectable)
                continue
            log.info(
                "Garbage collecting instance %s of provider %s with no nodeclaim (was %s)",
                instance.provider_id,
                provider,
                instance.node_claim,
            )
            try:
                self._host.delete(provider, instance.provider_id)
            except InstanceNotFoundError:
                continue
            except (PluginError, TemporaryProviderError) as error:
                log.warning("Deleting instance %s failed: %s", instance.provider_id, error)
            for node in self._cluster.state.nodes_with_provider_id(instance.provider_id):
                if not node.deleting:
                    self._cluster.delete(Node, node.name)
            poll = now + DELETE_POLL
            due = poll if due is None else min(due, poll)
        return due
