"""A queued pod and the preferences it has given up so far (Karpenter's ``Preferences``):
each failed attempt relaxes one more, in Karpenter's order."""

from __future__ import annotations

from nodewright.scheduling.model import PodRequest
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.topology import PodTopology, TopologyTerm


class PodState:
    """A queued pod and how far its preferences have been relaxed.

    Karpenter relaxes in this order, one step per failed attempt: the first of several ORed
    required node-affinity terms, the heaviest preferred pod-affinity term, the heaviest
    preferred pod anti-affinity term, the heaviest preferred node-affinity term, one
    ScheduleAnyway spread, then a toleration of PreferNoSchedule taints.
    """

    __slots__ = (
        "affinity",
        "anti_affinity",
        "anyway",
        "label_key",
        "pod",
        "preferred",
        "relaxed_taints",
        "required",
        "requirements",
        "respect",
        "seq",
        "shape",
        "strict",
        "topo_key",
        "topology",
    )

    def __init__(self, pod: PodRequest, seq: int, respect_preferences: bool) -> None:
        self.pod = pod
        self.seq = seq
        self.respect = respect_preferences
        self.label_key = tuple(sorted(pod.labels.items()))
        self.topology: PodTopology | None = None
        self.shape = 0
        self.topo_key = 0
        self.reset()

    def reset(self) -> None:
        """Back to every preference (a pod that failed is retried in full later)."""
        pod = self.pod
        respect = self.respect
        self.required = 0
        self.preferred = 0 if respect else len(pod.preferred_terms)
        self.affinity = 0 if respect else len(pod.preferred_affinity)
        self.anti_affinity = 0 if respect else len(pod.preferred_anti_affinity)
        self.anyway: list[TopologyTerm] = list(pod.schedule_anyway) if respect else []
        self.relaxed_taints = False
        self._update()

    def _update(self) -> None:
        terms = self.pod.requirement_terms or (Requirements(),)
        self.strict = terms[self.required]
        active = self.strict
        if self.preferred < len(self.pod.preferred_terms):
            active = active.add(self.pod.preferred_terms[self.preferred][1])
        self.requirements = active

    def active_terms(self) -> tuple[TopologyTerm, ...]:
        pod = self.pod
        return (
            *pod.topology,
            *pod.preferred_affinity[self.affinity :],
            *pod.preferred_anti_affinity[self.anti_affinity :],
            *self.anyway,
        )

    def relax(self, prefer_no_schedule_exists: bool) -> bool:
        """Drop one preference (Karpenter's order); False when nothing is left to drop."""
        pod = self.pod
        if self.required < len(pod.requirement_terms) - 1:
            self.required += 1
        elif self.affinity < len(pod.preferred_affinity):
            self.affinity += 1
        elif self.anti_affinity < len(pod.preferred_anti_affinity):
            self.anti_affinity += 1
        elif self.preferred < len(pod.preferred_terms):
            self.preferred += 1
        elif self.anyway:
            # Karpenter removes the first and moves the last into its place.
            last = self.anyway.pop()
            if self.anyway:
                self.anyway[0] = last
        elif prefer_no_schedule_exists and not self.relaxed_taints:
            self.relaxed_taints = True
        else:
            return False
        self._update()
        return True
