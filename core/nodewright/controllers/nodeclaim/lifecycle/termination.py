"""The NodeClaim's termination finalizer (Karpenter's ``nodeclaim/lifecycle/termination.go``):
the drain deadline, the Node deleted (its own termination drains it), the instance deleted
until the provider reports it gone, then the NodeClaim lets go."""

from __future__ import annotations

import logging
from datetime import timedelta

from nodewright import metrics
from nodewright.api.core import Node
from nodewright.api.duration import DurationError, parse_duration
from nodewright.api.karpenter import CONDITION_INSTANCE_TERMINATING, NodeClaim
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    NODEPOOL_LABEL,
    TERMINATION_FINALIZER,
    TERMINATION_TIMESTAMP_ANNOTATION,
    ZONE_LABEL,
)
from nodewright.api.meta import set_condition
from nodewright.api.timestamps import format_timestamp
from nodewright.cluster.objects import mutable
from nodewright.controllers.events import WARNING
from nodewright.controllers.nodeclaim.lifecycle.step import ProviderStep
from nodewright.logfields import fields, ref
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    PluginError,
    TemporaryProviderError,
    UnknownNodeClassError,
)

log = logging.getLogger("nodewright.nodeclaim.lifecycle")

#: While the instance is not reported gone (or its deletion failed), look again this often.
INSTANCE_POLL = timedelta(seconds=5)
#: While the NodeClaim's Node is still terminating, look again this often.
POLL = timedelta(seconds=1)


class Termination(ProviderStep):
    def reconcile(self, claim: NodeClaim, nodes: list[Node]) -> timedelta | None:
        """The termination finalizer: set the drain deadline, have the Node terminated, then
        delete the instance until the provider reports it gone, then let the NodeClaim go."""
        if TERMINATION_FINALIZER not in claim.metadata.finalizers:
            return None
        claim = self._annotate_termination_deadline(claim)
        if nodes:
            for node in nodes:
                if not node.deleting:
                    self._cluster.delete(Node, node.name)
            return POLL  # the node's own termination drains it and deletes the instance
        try:
            provider = self._catalog.provider_name(claim.spec.node_class_ref)
            if not self._instances_gone(claim, provider):
                now = self._clock.now()
                if set_condition(
                    claim.status.conditions, CONDITION_INSTANCE_TERMINATING, "True", now
                ):
                    self._cluster.update_status(claim)
                return INSTANCE_POLL
        except (PluginError, TemporaryProviderError) as error:
            log.error("Deleting the instance of nodeclaim %s failed: %s", claim.name, error)
            return INSTANCE_POLL
        except UnknownNodeClassError as error:
            # Without a provider nothing can be deleted; keep the finalizer so nothing leaks.
            log.error("Cannot delete the instance of nodeclaim %s: %s", claim.name, error)
            return INSTANCE_POLL
        claim.metadata.finalizers = [
            f for f in claim.metadata.finalizers if f != TERMINATION_FINALIZER
        ]
        self._cluster.update(claim)
        log.info(
            "deleted nodeclaim",
            extra=fields(
                {
                    "NodeClaim": ref(claim.name),
                    "Node": ref(claim.status.node_name or ""),
                    "provider-id": claim.status.provider_id or "",
                }
            ),
        )
        metrics.nodeclaims_terminated.labels(
            claim.metadata.labels.get(NODEPOOL_LABEL, ""),
            claim.metadata.labels.get(CAPACITY_TYPE_LABEL, ""),
            claim.metadata.labels.get(ZONE_LABEL, ""),
        ).inc()
        return None

    def _annotate_termination_deadline(self, claim: NodeClaim) -> NodeClaim:
        """Record when draining stops waiting (deletion time + terminationGracePeriod).

        Written once: the Node's termination reads it, and a restart must not move it.
        """
        annotations = claim.metadata.annotations
        deleted = claim.metadata.deletion_timestamp
        grace = claim.spec.termination_grace_period
        if TERMINATION_TIMESTAMP_ANNOTATION in annotations or grace is None or deleted is None:
            return claim
        try:
            deadline = deleted + parse_duration(grace)
        except DurationError as error:
            log.error("nodeclaim %s: invalid terminationGracePeriod: %s", claim.name, error)
            return claim
        stamp = format_timestamp(deadline)
        annotations[TERMINATION_TIMESTAMP_ANNOTATION] = stamp
        claim = mutable(self._cluster.update(claim))
        log.info(
            "annotated nodeclaim",
            extra=fields({"NodeClaim": ref(claim.name), TERMINATION_TIMESTAMP_ANNOTATION: stamp}),
        )
        self._events.publish(
            claim, "TerminationGracePeriodExpiring", f"All pods will be deleted by {stamp}", WARNING
        )
        return claim

    def _instances_gone(self, claim: NodeClaim, provider: str) -> bool:
        """Ask the provider to delete the claim's instance; True once it reports it gone.

        A NodeClaim whose provider ID was never recorded (a crash between launch and the
        status write) is matched to instances by name, so the instance cannot leak.
        """
        ids = (
            [claim.status.provider_id]
            if claim.status.provider_id
            else [
                i.provider_id
                for i in self._host.list_instances(provider)
                if i.node_claim == claim.name
            ]
        )
        gone = True
        for provider_id in ids:
            try:
                self._host.delete(provider, provider_id)
                gone = False
            except InstanceNotFoundError:
                continue
        return gone
