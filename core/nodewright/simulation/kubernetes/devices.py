"""Dynamic Resource Allocation in the simulated cluster.

Plays kube-controller-manager's resourceclaim controller: a pod entry naming a
ResourceClaimTemplate gets a claim made from it (``<pod>-<entry>-`` and a suffix), owned by
the pod so it goes with it, and named in the pod's ``status.resourceClaimStatuses``; a claim
whose reserving pods are gone or finished is released (``reservedFor`` emptied, allocation
removed), so its devices are free again.

And the DRA part of kube-scheduler: a pod with claims goes only to a node whose published
ResourceSlices (the KWOK provider publishes those of a node's instance type when it registers
it) meet them, with the device allocator provisioning uses; binding writes each claim's
allocation and reserves it for the pod.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from nodewright.api.core import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodResourceClaimStatus,
)
from nodewright.api.meta import ObjectMeta
from nodewright.api.resource import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    ResourceClaim,
    ResourceClaimConsumerReference,
    ResourceClaimTemplate,
    ResourceSlice,
)
from nodewright.cluster import ClusterError
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.state import Key, is_terminal
from nodewright.scheduling.dra.allocator import Allocator, Target
from nodewright.scheduling.dra.capacity import quantity_text
from nodewright.scheduling.dra.claims import ClaimSpec, read_claim
from nodewright.scheduling.dra.cluster import MissingClaim, held_devices, pod_claims
from nodewright.scheduling.dra.devices import DeviceID
from nodewright.scheduling.dra.pools import NODE_NAME_FIELD, published_slice
from nodewright.scheduling.dra.search import AllocationError
from nodewright.scheduling.requirements import Requirements
from nodewright.simulation.kubernetes.ownership import controller_ref

#: kube-scheduler's DynamicResources filter, for a node whose devices cannot meet the claims.
CANNOT_ALLOCATE = "cannot allocate all claims"
#: The annotation kube-controller-manager puts on a claim made from a template.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


class ResourceClaimController:
    """kube-controller-manager's resourceclaim controller, for the simulated cluster."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self._changes = self.state.feed(Pod)
        self._started = False

    def reconcile(self) -> None:
        changes = self._changes.drain()
        suspects: set[Key] = set()
        released = not self._started
        if not self._started:
            suspects = set(self.state.objects(Pod))
            self._started = True
        for change in changes:
            new = change.new
            if isinstance(new, Pod) and new.spec.resource_claims and not is_terminal(new):
                suspects.add(change.key)
            if isinstance(change.old, Pod) and change.old.spec.resource_claims:
                released = released or new is None or (isinstance(new, Pod) and is_terminal(new))
        for key in sorted(suspects):
            pod = self.state.get(Pod, key)
            if pod is not None and pod.spec.resource_claims and not pod.deleting:
                self._make_claims(pod)
        if released:
            self._release()

    def _make_claims(self, pod: Pod) -> None:
        made = {s.name for s in pod.status.resource_claim_statuses or ()}
        added: list[PodResourceClaimStatus] = []
        for entry in pod.spec.resource_claims or ():
            template_name = entry.resource_claim_template_name
            if not template_name or entry.name in made:
                continue
            template = self.state.get(ResourceClaimTemplate, (pod.namespace, template_name))
            if template is None:
                continue  # the pod waits for its template, as it does in a cluster
            claim = ResourceClaim(
                metadata=ObjectMeta(
                    generate_name=f"{pod.name}-{entry.name}-",
                    namespace=pod.namespace,
                    labels=dict(template.spec.metadata.labels),
                    annotations={
                        **template.spec.metadata.annotations,
                        POD_CLAIM_NAME_ANNOTATION: entry.name,
                    },
                    owner_references=[controller_ref(pod)],
                ),
                spec=template.spec.spec,
            )
            try:
                created = self.cluster.create(claim)
            except ClusterError:
                continue  # refused: the pod waits, as it would for a claim that cannot be made
            added.append(PodResourceClaimStatus(name=entry.name, resource_claim_name=created.name))
        if not added:
            return
        updated = pod.status_copy()
        updated.status.resource_claim_statuses = [
            *(pod.status.resource_claim_statuses or ()),
            *added,
        ]
        try:
            self.cluster.update_status(updated)
        except ClusterError:
            return  # the pod changed or went meanwhile: its next change brings it back

    def _release(self) -> None:
        """Drop reservations of pods that are gone or finished; a claim no pod reserves any
        more is deallocated."""
        live = {
            pod.metadata.uid
            for pod in self.state.objects(Pod).values()
            if not is_terminal(pod) and pod.metadata.uid
        }
        for claim in self.state.sorted(ResourceClaim):
            reserved = claim.status.reserved_for
            if not reserved:
                continue
            kept = [r for r in reserved if not r.is_pod or r.uid in live]
            if len(kept) == len(reserved):
                continue
            updated = claim.status_copy()
            updated.status.reserved_for = kept
            if not kept:
                updated.status.allocation = None
            try:
                self.cluster.update_status(updated)
            except ClusterError:
                continue


@dataclass
class PodDevices:
    """One pending pod's claims, and the cluster's devices, for trying nodes in turn."""

    claims: list[ClaimSpec]
    allocator: Allocator
    #: node name -> claim key -> (request, device, share of a shared device) chosen there.
    found: dict[str, dict[str, list[tuple[str, DeviceID, Mapping[str, Fraction] | None]]]]

    def fits(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """Whether the node's published devices meet the pod's claims."""
        target = Target(
            id=node_name,
            node_pool="",
            requirements=Requirements.from_labels(labels),
            instance_types=("",),
            node_name=node_name,
        )
        try:
            allocation = self.allocator.allocate(target, self.claims)
        except AllocationError:
            return False
        self.found[node_name] = {
            key: meta.results.get("", []) for key, meta in allocation.claims.items()
        }
        return True


def pod_devices(pod: Pod, cluster: MemoryCluster) -> PodDevices | str:
    """What the scheduler needs to place ``pod`` by its claims, or why it cannot yet."""
    state = cluster.state
    classes = {c.name: c for c in state.sorted(DeviceClass)}
    read = {c.key: read_claim(c, classes) for c in state.sorted(ResourceClaim)}
    try:
        claims = pod_claims(pod, read)
    except MissingClaim as missing:
        return f"waiting for resource claims: {missing}"
    if len(claims) < sum(1 for _ in pod.spec.resource_claims or ()):
        return "waiting for resource claims to be created"
    for claim in claims:
        if claim.problem is not None and not claim.allocated:
            return claim.problem
    slices = [published_slice(s) for s in state.sorted(ResourceSlice)]
    mine = {c.key for c in claims}
    held = held_devices((c for k, c in read.items() if k not in mine), frozenset())
    return PodDevices(claims, Allocator(slices, held), {})


def _share_id(claim: str, index: int) -> str:
    """A result's ``shareID`` on a shared device: kube-scheduler draws a random UUID; the
    simulation derives one from the claim and the result, so runs repeat."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"resourceclaim/{claim}/{index}"))


def write_allocations(cluster: MemoryCluster, pod: Pod, devices: PodDevices, node: str) -> None:
    """``pod`` was bound to ``node``: allocate its claims there and reserve them for it."""
    chosen = devices.found.get(node, {})
    consumer = ResourceClaimConsumerReference(
        resource="pods", name=pod.name, uid=pod.metadata.uid or ""
    )
    for spec in devices.claims:
        claim = cluster.state.get(ResourceClaim, (spec.namespace, spec.name))
        if claim is None:
            continue
        updated = claim.status_copy()
        if updated.status.allocation is None:
            results = [
                DeviceRequestAllocationResult(
                    request=request,
                    driver=device.driver,
                    pool=device.pool,
                    device=device.device,
                    share_id=None if share is None else _share_id(spec.key, index),
                    consumed_capacity=None
                    if share is None
                    else {name: quantity_text(amount) for name, amount in share.items()},
                )
                for index, (request, device, share) in enumerate(chosen.get(spec.key, []))
            ]
            # Devices a node's slices publish are reached from that node only.
            updated.status.allocation = AllocationResult(
                devices=DeviceAllocationResult(results=results),
                node_selector=NodeSelector(
                    node_selector_terms=[
                        NodeSelectorTerm(
                            match_fields=[
                                NodeSelectorRequirement(
                                    key=NODE_NAME_FIELD, operator="In", values=[node]
                                )
                            ]
                        )
                    ]
                ),
            )
        if all(r.uid != consumer.uid for r in updated.status.reserved_for):
            updated.status.reserved_for = [*updated.status.reserved_for, consumer]
        try:
            cluster.update_status(updated)
        except ClusterError:
            continue
