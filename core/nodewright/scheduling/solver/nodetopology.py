"""What a pod's topology groups say of existing nodes during one attempt to place it.

An attempt walks the existing nodes in order until one takes the pod, and no count moves
until it does. A hostname group answers for one host; any other group (a zone spread, a
zonal affinity) answers alike for every node in one domain. A :class:`TopologyCheck` is
made for one attempt and keeps those answers by domain, so a walk over a hundred nodes in
three zones asks each zonal group three times, not a hundred.

The answer is Karpenter's: the requirements each group adds on the node
(:meth:`~nodewright.scheduling.topology.Topology.requirements`), or the group that refuses
it, and then whether the node's labels lie in every domain added.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.scheduling.requirements import Requirement, Requirements
from nodewright.scheduling.solver.constraints import LASTING, PASSING, Refusal
from nodewright.scheduling.solver.preferences import PodState
from nodewright.scheduling.topology import TopologyGroup

#: What a group says of a domain: no domain allowed at all, the node's domain among those
#: allowed, or the node outside them.
_REFUSED = 0
_INSIDE = 1
_OUTSIDE = 2


class PodGroups:
    """The topology groups of one pod at its current relaxation: each with whether it
    selects the pod and the pod's own requirement on its key."""

    __slots__ = ("domain_keys", "groups", "volatile")

    def __init__(self, state: PodState) -> None:
        pod = state.topology
        strict = state.strict
        self.groups: list[tuple[TopologyGroup, bool, Requirement | None]] = []
        self.volatile = False
        if pod is not None:
            self.groups = [
                (group, selects, strict.get(group.key))
                for group, selects in zip(pod.constraining, pod.selects, strict=True)
            ]
            self.volatile = pod.volatile
        #: The keys of the groups that answer by domain (all but hostname groups).
        self.domain_keys = tuple(group.key for group, _, _ in self.groups if not group.hostname)


class TopologyCheck:
    """A pod's topology groups asked of existing nodes while the counts stand still."""

    __slots__ = ("_answers", "_groups", "_volatile")

    def __init__(self, pod: PodGroups) -> None:
        self._groups = pod.groups
        self._volatile = pod.volatile
        #: (position of a non-hostname group, a node's label for its key) -> answer.
        self._answers: dict[tuple[int, str | None], int] = {}

    def refusal(
        self,
        labels: Mapping[str, str],
        node_requirements: Requirements,
        hostname: str,
        unlike: frozenset[str],
    ) -> Refusal | None:
        """Why the groups turn away a node with these labels, requirements and hostname.

        ``unlike``: the keys on which the node's requirement is not just its label on that
        key (``In`` that one value, or nothing without the label). Answers on other keys
        may be kept by label; on these they are worked out for this node alone.
        """
        outside = False
        for position, (group, selects, pod_domains) in enumerate(self._groups):
            if group.hostname:
                if not group.allowed(selects, pod_domains, None, hostname):
                    return LASTING if group.monotonic else PASSING
                continue
            by_label = not unlike or group.key not in unlike
            answer = self._answer(position, labels, node_requirements, by_label)
            if answer == _REFUSED:
                return LASTING if group.monotonic else PASSING
            if answer == _OUTSIDE:
                outside = True
        if outside:
            return PASSING if self._volatile else LASTING
        return None

    def turns_away(self, labels: Mapping[str, str], node_requirements: Requirements) -> bool:
        """Whether the groups that answer by domain refuse a node with these labels and
        requirements (by label on every such group's key, see :meth:`refusal`), whatever
        its hostname: then
        :meth:`refusal` refuses it too, though perhaps for a hostname group's reason."""
        for position, (group, _, _) in enumerate(self._groups):
            if not group.hostname and (
                self._answer(position, labels, node_requirements, True) != _INSIDE
            ):
                return True
        return False

    def _answer(
        self,
        position: int,
        labels: Mapping[str, str],
        node_requirements: Requirements,
        by_label: bool,
    ) -> int:
        group, selects, pod_domains = self._groups[position]
        domain = labels.get(group.key)
        answer = self._answers.get((position, domain)) if by_label else None
        if answer is None:
            node_domains = node_requirements.get(group.key)
            allowed = group.allowed(selects, pod_domains, node_domains, None)
            if not allowed:
                answer = _REFUSED
            elif domain is not None and domain in allowed:
                answer = _INSIDE
            else:
                answer = _OUTSIDE
            if by_label:
                self._answers[(position, domain)] = answer
        return answer
