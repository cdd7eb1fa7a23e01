"""Launch: the provider creates the NodeClaim's instance, cheapest compatible offering first,
and the NodeClaim records what was launched (Karpenter's ``launch.go``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from nodewright.api.karpenter import CONDITION_LAUNCHED, NodeClaim
from nodewright.api.labels import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import set_condition
from nodewright.api.nodeoverlay import RESTRICTED_CAPACITY
from nodewright.cluster.objects import mutable
from nodewright.controllers.catalog import NodeClassNotFoundError
from nodewright.controllers.events import WARNING
from nodewright.controllers.metrics.disruption import record_disrupted
from nodewright.controllers.nodeclaim.lifecycle.ready import set_ready
from nodewright.controllers.nodeclaim.lifecycle.step import ProviderStep
from nodewright.controllers.state.solverdata import requirements_from_api
from nodewright.logfields import fields, ref
from nodewright.plugin.errors import (
    InsufficientCapacityError,
    LaunchError,
    NodeClassNotReadyError,
    PluginError,
    TemporaryProviderError,
    UnknownNodeClassError,
)
from nodewright.plugin.model import LaunchRequest
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import ResourceList, format_resources

log = logging.getLogger("nodewright.nodeclaim.lifecycle")

#: A launch that failed is tried again this much later.
LAUNCH_RETRY = timedelta(seconds=5)


class Launch(ProviderStep):
    def reconcile(self, claim: NodeClaim) -> timedelta | None:
        now = self._clock.now()
        try:
            node_class = self._catalog.node_class(claim.spec.node_class_ref)
            requirements = requirements_from_api(claim.spec.requirements)
            catalog = self._catalog.pool_instance_types(
                node_class, claim.metadata.labels.get(NODEPOOL_LABEL)
            )
            options = _launch_options(catalog, requirements)
            if not options:
                raise InsufficientCapacityError(
                    "all requested instance types were unavailable during launch"
                )
            launched = self._host.launch_result(
                LaunchRequest(claim, node_class, tuple(options), requirements)
            )
        except InsufficientCapacityError as error:
            for instance_type, zone, capacity_type in error.offerings:
                self._catalog.mark_unavailable(instance_type, zone, capacity_type, error.ttl)
            self._events.publish(
                claim,
                "InsufficientCapacityError",
                f"NodeClaim {claim.name} event: creating nodeclaim, insufficient capacity, {error}",
                WARNING,
            )
            log.warning("Deleting nodeclaim %s: insufficient capacity, %s", claim.name, error)
            self._cluster.delete(NodeClaim, claim.name)
            record_disrupted(claim, "insufficient_capacity")
            return None
        except (NodeClassNotReadyError, NodeClassNotFoundError, UnknownNodeClassError) as error:
            self._events.publish(claim, "NodeClassNotReady", str(error), WARNING)
            log.warning("Deleting nodeclaim %s: %s", claim.name, error)
            self._cluster.delete(NodeClaim, claim.name)
            record_disrupted(claim, "nodeclass_not_ready")
            return None
        except LaunchError as error:
            return self._failed(claim, error.reason, error.message)
        except TemporaryProviderError as error:
            self._failed(claim, "LaunchFailed", str(error))
            return error.delay
        except PluginError as error:
            return self._failed(claim, "LaunchFailed", str(error))

        instance = launched.instance
        for instance_type, zone, capacity_type in launched.unavailable_offerings:
            self._catalog.mark_unavailable(
                instance_type, zone, capacity_type, launched.unavailable_ttl
            )
        labels = dict(instance.labels)
        labels.update(
            {
                INSTANCE_TYPE_LABEL: instance.instance_type,
                ZONE_LABEL: instance.zone,
                CAPACITY_TYPE_LABEL: instance.capacity_type,
            }
        )
        labels.update(claim.metadata.labels)
        annotations = {**claim.metadata.annotations, **instance.annotations}
        if labels != claim.metadata.labels or annotations != claim.metadata.annotations:
            claim.metadata.labels = labels
            claim.metadata.annotations = annotations
            claim = mutable(self._cluster.update(claim))
        claim.status.provider_id = instance.provider_id
        claim.status.image_id = instance.image_id or None
        extended = _overlaid_resources(options, instance.instance_type)
        claim.status.capacity = format_resources({**instance.capacity, **extended})
        claim.status.allocatable = format_resources({**instance.allocatable, **extended})
        set_condition(claim.status.conditions, CONDITION_LAUNCHED, "True", now)
        set_ready(claim, now)
        self._cluster.update_status(claim)
        log.info(
            "launched nodeclaim",
            extra=fields(
                {
                    "NodeClaim": ref(claim.name),
                    "provider-id": instance.provider_id,
                    "instance-type": instance.instance_type,
                    "zone": instance.zone,
                    "capacity-type": instance.capacity_type,
                    "allocatable": claim.status.allocatable,
                }
            ),
        )
        return timedelta(0)

    def _failed(self, claim: NodeClaim, reason: str, message: str) -> timedelta:
        now = self._clock.now()
        if set_condition(
            claim.status.conditions,
            CONDITION_LAUNCHED,
            "Unknown",
            now,
            reason=reason,
            message=message,
        ):
            set_ready(claim, now)
            self._cluster.update_status(claim)
            self._events.publish(claim, reason, message, WARNING)
            log.error("Launching nodeclaim %s failed: %s", claim.name, message)
        return LAUNCH_RETRY


def _launch_options(
    instance_types: list[InstanceType], requirements: Requirements
) -> list[InstanceType]:
    """The NodeClaim's instance types, with only compatible available offerings, cheapest first."""
    options: list[tuple[float, InstanceType]] = []
    named = requirements.get(INSTANCE_TYPE_LABEL)
    listed = named.values if named is not None and not named.complement else frozenset()
    for instance_type in instance_types:
        # The claim's instance-type requirement is one of the keys checked here; a type
        # whose own name it leaves out fails it whatever the rest says (most of a catalog).
        own = instance_type.requirements.get(INSTANCE_TYPE_LABEL)
        if listed and own is not None and not own.complement and own.values.isdisjoint(listed):
            continue
        if not instance_type.requirements.meets(requirements):
            continue
        launchable = instance_type.for_launch(requirements)
        if launchable is not None:
            price = min(o.price for o in launchable.offerings)
            options.append((price, launchable))
    options.sort(key=lambda item: (item[0], item[1].name))
    return [it for _, it in options]


def _overlaid_resources(options: Sequence[InstanceType], launched: str) -> ResourceList:
    """The extended resources NodeOverlays gave the launched type: Karpenter expects them on
    the node (a device plugin there registers them), so they are part of its capacity."""
    for instance_type in options:
        if instance_type.name == launched and instance_type.capacity_overlaid:
            return {
                name: value
                for name, value in instance_type.capacity.items()
                if name not in RESTRICTED_CAPACITY
            }
    return {}
