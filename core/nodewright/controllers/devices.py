"""What provisioning and disruption read about DRA devices for one solve (with
``IGNORE_DRA_REQUESTS=false``): the pods' claims, the devices claims hold, and the published
slices the solve may allocate from. Karpenter's provisioner builds the same before each
scheduling loop (``gatherResourceSlices``, ``gatherAllocatedDevices``,
``resolvePodClaims``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping

from nodewright.api.core import Pod
from nodewright.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from nodewright.cluster.state import ClusterState
from nodewright.scheduling.dra.claims import ClaimSpec, read_claim
from nodewright.scheduling.dra.cluster import MissingClaim, held_devices, pod_claims, usable_slices
from nodewright.scheduling.dra.pools import published_slice
from nodewright.scheduling.model import ExistingNode, PodRequest
from nodewright.scheduling.solver.devices import DeviceFacts


def read_claims(state: ClusterState) -> dict[str, ClaimSpec]:
    """Every ResourceClaim, read with the cluster's DeviceClasses, by ``namespace/name``."""
    classes = {c.name: c for c in state.sorted(DeviceClass)}
    return {c.key: read_claim(c, classes) for c in state.sorted(ResourceClaim)}


def with_claims(request: PodRequest, pod: Pod, claims: Mapping[str, ClaimSpec]) -> PodRequest:
    """``request`` with the pod's claims, or why they cannot be read yet."""
    if not request.dynamic_resources:
        return request
    try:
        found = pod_claims(pod, claims)
    except MissingClaim as missing:
        return dataclasses.replace(request, claims_problem=str(missing))
    return dataclasses.replace(request, claims=tuple(found))


def device_facts(
    state: ClusterState,
    claims: Mapping[str, ClaimSpec],
    existing: Collection[ExistingNode],
    leaving_pods: frozenset[str],
) -> DeviceFacts:
    """The devices a solve over ``existing`` nodes may allocate: the slices no Node owns and
    those of its initialized nodes (a node not initialized offers its instance type's
    templates instead, and nodes being removed offer nothing), less the devices claims hold
    for pods that stay."""
    initialized = {n.name for n in existing if n.initialized and not n.in_flight}
    slices = usable_slices((published_slice(s) for s in state.sorted(ResourceSlice)), initialized)
    return DeviceFacts(
        slices=tuple(slices),
        held=held_devices(claims.values(), leaving_pods),
        leaving_pods=leaving_pods,
    )
