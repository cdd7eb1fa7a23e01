"""Each pending pod as a provisioning pass gives it to the solver, kept from pass to pass.

A pod that waits (behind a NodePool's limits, for a node that never comes) is the same object
pass after pass: the cluster state replaces a pod's object whenever the pod changes. What a
pass makes of it (the default spread stamped on it, why Karpenter would ignore it, its volumes'
topology, its :class:`~nodewright.scheduling.model.PodRequest`) depends on nothing else than
the pod and the context kept with it: the restricted label domains and well-known labels,
the namespaces' labels, the storage objects, the default spread constraints and the objects
their selectors are deduced from. An entry is used again only for the very same pod object
in an equal context, and a pass keeps the entries of the pods it saw and no others. Which
unbound pods a pass looks at (:class:`Provisionable`) is kept per pod object the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from nodewright.api.core import Pod
from nodewright.cluster.state import Key
from nodewright.controllers.capacitybuffer.virtualpods import is_virtual
from nodewright.controllers.provisioning.defaultspread import DefaultSpread
from nodewright.controllers.state.cluster import VolumeFacts, is_provisionable
from nodewright.scheduling.model import PodRequest
from nodewright.scheduling.pods import pod_request, validate_pod
from nodewright.scheduling.volumes import VolumeProblem, pod_volumes


@dataclass(frozen=True)
class PendingPod:
    """What a pass makes of one pending pod: the pod as scheduled (default spread applied),
    whether it is a CapacityBuffer's virtual pod, and its request at position 0 or why it has
    none."""

    scheduled: Pod
    virtual: bool
    request: PodRequest | None
    problem: str | None


@dataclass(frozen=True)
class Context:
    """What a :class:`PendingPod` reads besides its pod."""

    domains: frozenset[str]
    well_known: frozenset[str]
    namespaces: Mapping[str, Mapping[str, str]]
    #: The storage objects' change counters, summed.
    storage: int
    #: The default spread constraints, and the change counters of what their selectors are
    #: deduced from.
    spread: tuple[tuple[object, ...], int]


class Provisionable:
    """Which unbound pods provisioning looks at (:func:`is_provisionable`), the verdict kept
    per pod while the cluster state hands out the very same pod object."""

    def __init__(self) -> None:
        self._verdicts: dict[Key, tuple[Pod, bool]] = {}

    def pods(self, unbound: Mapping[Key, Pod]) -> list[Pod]:
        """The provisionable pods of ``unbound``, in its order."""
        kept = self._verdicts
        verdicts: dict[Key, tuple[Pod, bool]] = {}
        found: list[Pod] = []
        for key, pod in unbound.items():
            verdict = kept.get(key)
            if verdict is None or verdict[0] is not pod:
                verdict = (pod, is_provisionable(pod))
            verdicts[key] = verdict
            if verdict[1]:
                found.append(pod)
        self._verdicts = verdicts
        return found


class PendingPods:
    """The last pass's :class:`PendingPod` per pod key, with the pod object and the context
    it was made from, and the request at the position the pass gave it."""

    def __init__(self) -> None:
        self._context: Context | None = None
        #: pod key -> (the pod object, what was made of it, its request at its last position)
        self._entries: dict[str, tuple[Pod, PendingPod, PodRequest | None]] = {}
        self._seen: dict[str, tuple[Pod, PendingPod, PodRequest | None]] = {}

    def begin(self, context: Context) -> None:
        """Start a pass in ``context``: everything made in another context is forgotten."""
        if self._context != context:
            self._context = context
            self._entries = {}
        self._seen = {}

    def end(self) -> None:
        """Finish a pass: keep only what it saw."""
        self._entries, self._seen = self._seen, {}

    def take(
        self, pod: Pod, index: int, spread: DefaultSpread, facts: VolumeFacts
    ) -> tuple[PendingPod, PodRequest | None]:
        """What is made of ``pod``, and its request at position ``index`` (None when it has
        none)."""
        key = pod.key
        entry = self._entries.get(key)
        if entry is None or entry[0] is not pod:
            entry = (pod, self._make(pod, spread, facts), None)
        made = entry[1]
        placed = entry[2]
        if made.request is not None and (placed is None or placed.order != index):
            placed = made.request.at(index)
            entry = (pod, made, placed)
        self._seen[key] = entry
        return made, placed

    def _make(self, pending: Pod, spread: DefaultSpread, facts: VolumeFacts) -> PendingPod:
        context = self._context
        assert context is not None, "begin() first"
        pod = spread.apply(pending)
        virtual = is_virtual(pod)
        problem = validate_pod(pod, context.domains, context.well_known)
        if problem is not None:
            return PendingPod(pod, virtual, None, problem)
        try:
            volumes = pod_volumes(pod, facts.claims, facts.volumes, facts.storage_classes)
        except VolumeProblem as error:
            return PendingPod(pod, virtual, None, str(error))
        request = dataclasses.replace(
            pod_request(pod, 0, context.namespaces),
            volume_requirements=volumes.requirements,
            volumes=volumes.usage,
        )
        return PendingPod(pod, virtual, request, None)
