"""What the cluster's objects say about devices, read for one scheduling pass: the claims a
pod uses, the devices claims hold, and the published slices a pass may allocate from."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from nodewright.api.core import Pod
from nodewright.scheduling.dra.capacity import add
from nodewright.scheduling.dra.claims import ClaimSpec
from nodewright.scheduling.dra.devices import DeviceID
from nodewright.scheduling.dra.pools import PublishedSlice


class MissingClaim(LookupError):
    """A claim a pod names does not exist (yet): the pod waits for the next pass."""


def pod_claim_names(pod: Pod) -> list[str]:
    """The names of the ResourceClaims ``pod`` uses, in its order: a named claim, or the one
    kube-controller-manager made from a template (``status.resourceClaimStatuses``). A
    template entry with no claim recorded (none made, or none needed) adds nothing, as in
    Karpenter."""
    statuses = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses or ()}
    names: list[str] = []
    for entry in pod.spec.resource_claims or ():
        if entry.resource_claim_name:
            names.append(entry.resource_claim_name)
        elif statuses.get(entry.name):
            names.append(str(statuses[entry.name]))
    return names


def pod_claims(pod: Pod, claims: Mapping[str, ClaimSpec]) -> list[ClaimSpec]:
    """The claims ``pod`` uses, read; raises :class:`MissingClaim` for one not found
    (``claims`` by ``namespace/name``)."""
    found: list[ClaimSpec] = []
    for name in pod_claim_names(pod):
        key = f"{pod.namespace}/{name}"
        claim = claims.get(key)
        if claim is None:
            raise MissingClaim(f'resourceclaim "{key}" not found')
        found.append(claim)
    return found


@dataclass(frozen=True)
class HeldDevices:
    """What claims in the cluster hold (Karpenter's device-allocation index, less what
    leaving pods give back): devices held whole, and shared devices with what their claims
    take of each capacity."""

    exclusive: frozenset[DeviceID] = frozenset()
    shared: Mapping[DeviceID, Mapping[str, Fraction]] = field(default_factory=dict)

    def __contains__(self, device: object) -> bool:
        return device in self.exclusive or device in self.shared


def held_devices(claims: Iterable[ClaimSpec], leaving_pods: Collection[str]) -> HeldDevices:
    """Devices allocated claims hold, less those every consumer of which is a pod leaving its
    node: a device shared by claims counts their pods together, and one whose claims all have
    only pods as consumers, none of them, is free. A shared device (its results carry
    ``consumedCapacity``) that stays held gives back the share of each claim whose pods all
    leave."""
    pods: dict[DeviceID, list[str]] = {}
    releasable: dict[DeviceID, bool] = {}
    shares: dict[DeviceID, list[tuple[tuple[str, ...], Mapping[str, Fraction]]]] = {}
    for claim in claims:
        if not claim.allocated:
            continue
        only_pods = bool(claim.reserved_pods) and not claim.reserved_by_other
        for device in dict.fromkeys(claim.devices):
            pods.setdefault(device, []).extend(claim.reserved_pods)
            releasable[device] = releasable.get(device, True) and only_pods
            share = claim.consumed.get(device)
            if share is not None:
                shares.setdefault(device, []).append((claim.reserved_pods, share))
    exclusive: set[DeviceID] = set()
    shared: dict[DeviceID, dict[str, Fraction]] = {}
    for device, consumers in pods.items():
        if releasable[device] and not consumers:
            continue
        if consumers and all(uid in leaving_pods for uid in consumers):
            continue
        if device not in shares:
            exclusive.add(device)
            continue
        left: dict[str, Fraction] = {}
        for _, share in shares[device]:
            add(left, share)
        for holders, share in shares[device]:
            if holders and all(uid in leaving_pods for uid in holders):
                add(left, share, -1)
        kept = {name: amount for name, amount in left.items() if amount > 0}
        if kept:
            shared[device] = kept
    return HeldDevices(frozenset(exclusive), shared)


def usable_slices(slices: Iterable[PublishedSlice], nodes: Collection[str]) -> list[PublishedSlice]:
    """The published slices a pass allocates from: those no Node owns, and those of ``nodes``
    (the pass's initialized nodes; a node being removed or not yet initialized offers its
    instance type's templates, or nothing)."""
    return [s for s in slices if s.owner_node is None or s.owner_node in nodes]
