"""Registration: the Node with the NodeClaim's provider ID joins it, taking its labels,
annotations, taints, finalizer and owner reference (Karpenter's ``registration.go``)."""

from __future__ import annotations

import logging
from datetime import timedelta

from nodewright import metrics
from nodewright.api.core import Node, Taint
from nodewright.api.karpenter import CONDITION_REGISTERED, NodeClaim
from nodewright.api.labels import (
    DO_NOT_SYNC_TAINTS_LABEL,
    NODEPOOL_LABEL,
    REGISTERED_LABEL,
    TERMINATION_FINALIZER,
    UNREGISTERED_TAINT_KEY,
    ZONE_LABEL,
)
from nodewright.api.meta import OwnerReference, set_condition
from nodewright.clock import Clock
from nodewright.cluster import Cluster
from nodewright.cluster.objects import mutable
from nodewright.controllers.catalog import Catalog
from nodewright.controllers.events import WARNING, EventRecorder
from nodewright.controllers.nodeclaim.lifecycle.ready import set_ready
from nodewright.controllers.nodeclaim.lifecycle.step import ProviderStep
from nodewright.controllers.state.nodepoolhealth import RegistrationOutcomes, record_outcome
from nodewright.logfields import fields, ref
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    PluginError,
    TemporaryProviderError,
    UnknownNodeClassError,
)
from nodewright.plugin.host import PluginHost

log = logging.getLogger("nodewright.nodeclaim.lifecycle")


class Registration(ProviderStep):
    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        catalog: Catalog,
        clock: Clock,
        events: EventRecorder,
        *,
        outcomes: RegistrationOutcomes,
    ) -> None:
        super().__init__(cluster, host, catalog, clock, events)
        self._outcomes = outcomes

    def reconcile(self, claim: NodeClaim, found: list[Node]) -> timedelta | None:
        now = self._clock.now()
        if len(found) > 1:
            if set_condition(
                claim.status.conditions,
                CONDITION_REGISTERED,
                "False",
                now,
                reason="MultipleNodesFound",
                message="Invariant violated, matched multiple nodes",
            ):
                set_ready(claim, now)
                self._cluster.update_status(claim)
            return None
        node = found[0] if found else None
        if node is None:
            if set_condition(
                claim.status.conditions,
                CONDITION_REGISTERED,
                "Unknown",
                now,
                reason="NodeNotFound",
                message="Node not registered with cluster",
            ):
                set_ready(claim, now)
                self._cluster.update_status(claim)
            return None  # the Node's arrival is a change that wakes this controller
        if (
            not any(
                t.key == UNREGISTERED_TAINT_KEY and t.effect == "NoExecute"
                for t in node.spec.taints
            )
            and node.metadata.labels.get(REGISTERED_LABEL) != "true"
        ):
            self._events.publish(
                claim,
                "UnregisteredTaintMissing",
                f"Missing {UNREGISTERED_TAINT_KEY} taint which prevents registration related "
                "race conditions on Karpenter-managed nodes",
                WARNING,
            )
        provided = self._provider_labels(claim)
        if isinstance(provided, TemporaryProviderError):
            # A label the provider must set is not known yet (Karpenter's registration hooks):
            # the Node keeps its unregistered taint until it is.
            if set_condition(
                claim.status.conditions,
                CONDITION_REGISTERED,
                "Unknown",
                now,
                reason="RegistrationHookPending",
                message=str(provided),
            ):
                set_ready(claim, now)
                self._cluster.update_status(claim)
            return provided.delay
        filled = {
            key: value
            for key, value in provided.items()
            if claim.metadata.labels.get(key) == "" and value
        }
        if filled:
            # A label the NodeClaim carried empty, a placeholder its launch could not fill (a
            # placement group partition EC2 chose): the NodeClaim takes the value too.
            claim.metadata.labels = {**claim.metadata.labels, **filled}
            claim = mutable(self._cluster.update(claim))
        node = mutable(node)
        labels = dict(node.metadata.labels)
        labels.update(claim.metadata.labels)
        labels.update(provided)
        labels[REGISTERED_LABEL] = "true"
        node.metadata.labels = labels
        node.metadata.annotations = {**node.metadata.annotations, **claim.metadata.annotations}
        if TERMINATION_FINALIZER not in node.metadata.finalizers:
            node.metadata.finalizers.append(TERMINATION_FINALIZER)
        if not any(ref.uid == claim.metadata.uid for ref in node.metadata.owner_references):
            node.metadata.owner_references.append(
                OwnerReference(
                    api_version=claim.api_version,
                    kind=claim.kind,
                    name=claim.name,
                    uid=claim.metadata.uid or "",
                    block_owner_deletion=True,
                )
            )
        taints = [t for t in node.spec.taints if t.key != UNREGISTERED_TAINT_KEY]
        if node.metadata.labels.get(DO_NOT_SYNC_TAINTS_LABEL) != "true":
            present = {(t.key, t.effect) for t in taints}
            for taint in [*claim.spec.taints, *claim.spec.startup_taints]:
                if (taint.key, taint.effect) not in present:
                    taints.append(Taint(key=taint.key, value=taint.value, effect=taint.effect))
                    present.add((taint.key, taint.effect))
        node.spec.taints = taints
        self._cluster.update(node)
        record_outcome(self._cluster, self._clock, self._outcomes, claim, registered=True)
        claim.status.node_name = node.name
        set_condition(claim.status.conditions, CONDITION_REGISTERED, "True", now)
        set_ready(claim, now)
        self._cluster.update_status(claim)
        log.info(
            "registered nodeclaim", extra=fields(NodeClaim=ref(claim.name), Node=ref(node.name))
        )
        labels = claim.metadata.labels
        metrics.nodes_created.labels(
            labels.get(NODEPOOL_LABEL, ""), labels.get(ZONE_LABEL, "")
        ).inc()
        return timedelta(0)

    def _provider_labels(self, claim: NodeClaim) -> dict[str, str] | TemporaryProviderError:
        """The providers' labels for the Node, or why registration must wait for them."""
        try:
            provider = self._catalog.provider_name(claim.spec.node_class_ref)
            instance = self._host.get(provider, claim.status.provider_id or "")
        except (PluginError, InstanceNotFoundError, UnknownNodeClassError) as error:
            log.warning("No provider labels for nodeclaim %s: %s", claim.name, error)
            return {}
        try:
            return self._host.node_labels(claim, instance)
        except TemporaryProviderError as pending:
            return pending
        except PluginError as error:
            log.warning("No provider labels for nodeclaim %s: %s", claim.name, error)
            return {}
