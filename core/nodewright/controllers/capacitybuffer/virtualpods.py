"""The virtual pods of CapacityBuffers: the one store that the ``capacitybuffer`` controller
fills, provisioning places (and reports back on, as each buffer's ``Provisioning``
condition), and disruption keeps room for.

The operator hands the same store to all three, so none of them imports another. Virtual pods
are never written to the cluster, get no events and are never nominated.
"""

from __future__ import annotations

from collections import Counter

from nodewright.api.capacitybuffer import (
    BUFFER_NAME_ANNOTATION,
    BUFFER_NAMESPACE_ANNOTATION,
    CONDITION_PROVISIONING,
    CONDITION_READY_FOR_PROVISIONING,
    REASON_BUFFER_EMPTY,
    REASON_FITS_EXISTING_CAPACITY,
    REASON_NOT_READY_FOR_PROVISIONING,
    REASON_REQUIRES_NEW_CAPACITY,
    VIRTUAL_POD_ANNOTATION,
    CapacityBuffer,
)
from nodewright.api.core import Pod
from nodewright.api.meta import copy_model, find_condition, is_true, set_condition
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ClusterError
from nodewright.scheduling.model import SchedulingResult


def is_virtual(pod: Pod) -> bool:
    return pod.metadata.annotations.get(VIRTUAL_POD_ANNOTATION) == "true"


def buffer_key_of(pod: Pod) -> str | None:
    """``namespace/name`` of the buffer a virtual pod belongs to."""
    if not is_virtual(pod):
        return None
    annotations = pod.metadata.annotations
    namespace = annotations.get(BUFFER_NAMESPACE_ANNOTATION)
    name = annotations.get(BUFFER_NAME_ANNOTATION)
    return f"{namespace}/{name}" if namespace and name else None


class VirtualPods:
    """Every ready buffer's virtual pods, and which existing nodes the last provisioning pass
    placed them on."""

    def __init__(self, cluster: Cluster, clock: Clock, *, enabled: bool) -> None:
        self._cluster = cluster
        self._clock = clock
        #: Feature gate ``CapacityBuffer``: while it is off the store stays empty.
        self.enabled = enabled
        #: buffer key -> its virtual pods
        self._virtual: dict[str, list[Pod]] = {}
        #: node (or in-flight NodeClaim) name -> virtual pods placed there last pass
        self._placed: Counter[str] = Counter()
        #: Bumped by every change to the store (readers' "did anything change").
        self.version = 0

    def replace(self, virtual: dict[str, list[Pod]]) -> None:
        """The buffer controller's pass: each ready buffer's virtual pods, by buffer key."""
        self._virtual = virtual
        self.version += 1

    def pods(self) -> list[Pod]:
        """Every ready buffer's virtual pods (none while the gate is off)."""
        if not self.enabled:
            return []
        return [pod for key in sorted(self._virtual) for pod in self._virtual[key]]

    def record(self, result: SchedulingResult) -> None:
        """After a provisioning pass: which existing nodes hold virtual pods, and each
        buffer's ``Provisioning`` condition."""
        if not self.enabled:
            return
        by_key = {pod.key: pod for pods in self._virtual.values() for pod in pods}
        placed: Counter[str] = Counter()
        existing: Counter[str] = Counter()
        new: Counter[str] = Counter()
        failed: Counter[str] = Counter()
        for node_name, requests in result.existing_nodes.items():
            for request in requests:
                pod = by_key.get(request.key)
                owner = buffer_key_of(pod) if pod is not None else None
                if owner is not None:
                    placed[node_name] += 1
                    existing[owner] += 1
        for claim in result.new_node_claims:
            for request in claim.pods:
                pod = by_key.get(request.key)
                owner = buffer_key_of(pod) if pod is not None else None
                if owner is not None:
                    new[owner] += 1
        for key in result.errors:
            pod = by_key.get(key)
            owner = buffer_key_of(pod) if pod is not None else None
            if owner is not None:
                failed[owner] += 1
        self._placed = placed
        self.version += 1
        for stored in list(self._cluster.state.sorted(CapacityBuffer)):
            key = f"{stored.namespace}/{stored.name}"
            self._set_provisioning(stored, existing[key], new[key], failed[key])

    def hold(self, claim_name: str, count: int) -> None:
        """A NodeClaim just created for ``count`` virtual pods holds them until the next pass
        (its node must not look empty meanwhile)."""
        if count:
            self._placed[claim_name] += count
            self.version += 1

    def holds_buffer(self, node_name: str) -> bool:
        """Whether the last provisioning pass placed virtual pods on this node."""
        return self.enabled and self._placed.get(node_name, 0) > 0

    def _set_provisioning(
        self, buffer: CapacityBuffer, existing: int, new: int, failed: int
    ) -> None:
        status = buffer.status
        desired = status.replicas or 0
        if not is_true(status.conditions, CONDITION_READY_FOR_PROVISIONING):
            verdict = (
                "False",
                REASON_NOT_READY_FOR_PROVISIONING,
                "Buffer is not ReadyForProvisioning",
            )
        elif desired == 0:
            verdict = ("False", REASON_BUFFER_EMPTY, "Buffer has zero desired replicas")
        elif new or failed:
            verdict = (
                "False",
                REASON_REQUIRES_NEW_CAPACITY,
                f"{new}/{desired} virtual pods required new capacity, {failed} failed",
            )
        elif existing == desired:
            verdict = (
                "True",
                REASON_FITS_EXISTING_CAPACITY,
                f"All {desired} virtual pods fit on existing capacity",
            )
        else:
            return
        current = find_condition(status.conditions, CONDITION_PROVISIONING)
        if current is not None and (current.status, current.reason, current.message) == verdict:
            return
        updated = copy_model(buffer)
        set_condition(
            updated.status.conditions,
            CONDITION_PROVISIONING,
            verdict[0],  # type: ignore[arg-type]
            self._clock.now(),
            reason=verdict[1],
            message=verdict[2],
            observed_generation=buffer.metadata.generation,
        )
        try:
            self._cluster.update_status(updated)
        except ClusterError:
            return  # the next pass writes it
