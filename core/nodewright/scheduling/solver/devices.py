"""DRA device allocation inside one solve (Karpenter's scheduler with
``IGNORE_DRA_REQUESTS=false``).

A pod with ResourceClaims goes where its claims can be met: on an existing node, from the
devices it publishes (or, while it is not initialized, those its instance type offers); on a
NodeClaim being sized, from the published devices it could reach and each candidate instance
type's own, keeping only the instance types that can and the node requirements the chosen
devices bring. The allocation is recorded when the pod is placed, and the devices of instance
types the NodeClaim then drops are given back. Karpenter's words are kept for the pod's
FailedScheduling event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from nodewright.api.labels import INSTANCE_TYPE_LABEL, WELL_KNOWN_LABELS
from nodewright.scheduling.dra.allocator import Allocation, Allocator, Target
from nodewright.scheduling.dra.cluster import HeldDevices
from nodewright.scheduling.dra.constraints import build_bindings
from nodewright.scheduling.dra.devices import DynamicResources, ResourceSliceTemplate
from nodewright.scheduling.dra.pools import PublishedSlice
from nodewright.scheduling.dra.search import AllocationError
from nodewright.scheduling.model import ExistingNode, NodePoolTemplate, PodRequest
from nodewright.scheduling.requirements import Requirements

#: Karpenter's wrapping of an allocation failure.
ALLOCATING = "allocating dynamic resources, "
NO_COMMON_TYPE = "no instance type satisfies both scheduling and dynamic resource requirements"


@dataclass(frozen=True)
class DeviceFacts:
    """What the cluster says about devices for one solve."""

    #: Published slices the solve may allocate from (those of nodes in the solve, and those
    #: no node owns).
    slices: tuple[PublishedSlice, ...] = ()
    #: Devices claims hold (less those only leaving pods hold), and shares of shared ones.
    held: HeldDevices = field(default_factory=HeldDevices)
    #: UIDs of pods leaving their nodes (deleting, or on nodes being removed): claims only
    #: they hold are allocated again.
    leaving_pods: frozenset[str] = frozenset()


class DeviceRound:
    """The allocator of one solve, and what it needs to know about templates and nodes."""

    def __init__(
        self,
        facts: DeviceFacts,
        templates: Sequence[NodePoolTemplate],
        well_known: frozenset[str] = WELL_KNOWN_LABELS,
    ) -> None:
        self.by_pool: dict[str, dict[str, DynamicResources]] = {
            t.name: {it.name: it.dynamic_resources for it in t.instance_types} for t in templates
        }
        bindings = build_bindings(
            {pool: list(types.items()) for pool, types in self.by_pool.items()}
        )
        self.allocator = Allocator(
            facts.slices, facts.held, bindings, facts.leaving_pods, well_known
        )
        #: Pod UID -> the allocation found by the plan the solve is about to commit.
        self.pending: dict[str, Allocation] = {}

    def plan_node(
        self, node: ExistingNode, pod: PodRequest, requirements: Requirements
    ) -> str | None:
        """Whether ``pod``'s claims can be met on an existing node; Karpenter's error if not.
        The node's requirements are never widened or narrowed by it."""
        instance_type = node.labels.get(INSTANCE_TYPE_LABEL, "")
        pool = node.node_pool or ""
        templates: dict[str, Sequence[ResourceSliceTemplate]] = {}
        if not node.initialized and instance_type:
            offered = self.by_pool.get(pool, {}).get(instance_type)
            if offered:
                templates = {instance_type: offered.slices}
        target = Target(
            id=node.name,
            node_pool=pool,
            requirements=requirements,
            instance_types=(instance_type,),
            templates=templates,
            node_name="" if node.in_flight else node.name,
        )
        try:
            self.pending[pod.uid] = self.allocator.allocate(target, pod.claims)
        except AllocationError as exc:
            return f"{ALLOCATING}{exc}"
        return None

    def plan_claim(
        self,
        hostname: str,
        pool: str,
        pod: PodRequest,
        requirements: Requirements,
        instance_types: Sequence[str],
    ) -> tuple[Requirements, frozenset[str]] | str:
        """For a NodeClaim being sized: the requirements with the devices' reach added, and
        the instance types that can meet the pod's claims; or Karpenter's error."""
        target = Target(
            id=hostname,
            node_pool=pool,
            requirements=requirements,
            instance_types=tuple(instance_types),
            templates={
                name: self.by_pool[pool][name].slices
                for name in instance_types
                if self.by_pool.get(pool, {}).get(name)
            },
        )
        try:
            allocation = self.allocator.allocate(target, pod.claims)
        except AllocationError as exc:
            return f"{ALLOCATING}{exc}"
        self.pending[pod.uid] = allocation
        # The allocation's requirements are the claim's, narrowed by the devices' reach.
        return allocation.requirements, frozenset(allocation.instance_types)

    def commit(self, pod: PodRequest, kept: Sequence[str] | None = None) -> None:
        """``pod`` is placed: record its allocation, and free the devices of the instance types
        the NodeClaim no longer keeps (``kept``; None for an existing node)."""
        allocation = self.pending.pop(pod.uid, None)
        if allocation is None:
            return
        self.allocator.commit(allocation)
        if kept is not None:
            dropped = [t for t in allocation.instance_types if t not in set(kept)]
            self.allocator.release(allocation.target, dropped)

    def drivers(self, hostname: str) -> tuple[str, ...]:
        return tuple(self.allocator.drivers(hostname))
