"""An existing node or in-flight NodeClaim during one solve (Karpenter's ``ExistingNode``):
what is left on it and the pods this solve has placed there."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.labels import HOSTNAME_LABEL, KNOWN_EPHEMERAL_TAINTS, normalize_label
from nodewright.scheduling.model import ExistingNode, PodRequest
from nodewright.scheduling.solver.constraints import (
    LASTING,
    Refusal,
    port_conflict,
    untolerated,
)
from nodewright.scheduling.solver.devices import DeviceRound
from nodewright.scheduling.solver.nodetopology import PodGroups, TopologyCheck
from nodewright.scheduling.solver.preferences import PodState
from nodewright.scheduling.taints import Taint
from nodewright.scheduling.topology import Topology


def _is_ephemeral(taint: Taint, startup: Sequence[Taint]) -> bool:
    if (taint.key, taint.effect) in KNOWN_EPHEMERAL_TAINTS:
        return True
    if taint.key.startswith("readiness.k8s.io/"):
        return True
    return any(s.key == taint.key and s.effect == taint.effect for s in startup)


class ExistingNodeState:
    """An existing node or in-flight NodeClaim, with what this solve has placed on it."""

    def __init__(self, node: ExistingNode, devices: DeviceRound | None = None) -> None:
        self.node = node
        self.devices = devices
        managed = node.node_claim is not None or node.node_pool is not None or node.in_flight
        if managed and not node.initialized:
            self.taints = tuple(t for t in node.taints if not _is_ephemeral(t, node.startup_taints))
        else:
            self.taints = node.taints
        remaining = dict(node.allocatable)
        for name, value in node.requested.items():
            remaining[name] = remaining.get(name, 0) - value
        self.remaining = remaining
        self.ports = list(node.host_ports)
        self.pods: list[PodRequest] = []
        self.hostname = node.labels.get(HOSTNAME_LABEL, node.name)
        self.label_requirements = node.label_requirements
        #: Keys on which its requirement is not just its label there: a deprecated label
        #: key stands for the key (``failure-domain.beta.kubernetes.io/zone`` for the zone)
        #: with another value, or without the key's own label. Topology answers on every
        #: other key go by label (kubelet's ``beta.kubernetes.io/arch`` leaves zones alone).
        self.unlike = frozenset(
            normal
            for key, value in node.labels.items()
            if (normal := normalize_label(key)) != key and node.labels.get(normal) != value
        )
        self.volumes = {driver: set(ids) for driver, ids in node.volumes.items()}

    def _volume_problem(self, pod: PodRequest) -> bool:
        limits = self.node.volume_limits
        for driver, ids in pod.volumes.items():
            limit = limits.get(driver)
            if limit is None:
                continue
            attached = self.volumes.get(driver, set())
            if len(attached | ids) > limit:
                return True
        return False

    def copy(self) -> ExistingNodeState:
        """A copy a solve may place pods on, leaving this one as it is."""
        copied = object.__new__(ExistingNodeState)
        copied.__dict__.update(self.__dict__)
        copied.remaining = dict(self.remaining)
        copied.ports = list(self.ports)
        copied.pods = list(self.pods)
        copied.volumes = {driver: set(ids) for driver, ids in self.volumes.items()}
        return copied

    def admits(self, state: PodState) -> bool:
        """Whether the pod fits here, topology aside. Placing pods only takes room, ports
        and volume slots away, so a node that does not admit a pod never will in this solve."""
        pod = state.pod
        if untolerated(pod.tolerations, self.taints, state.relaxed_taints):
            return False
        if not self._has_room(pod):
            return False
        if any(value < 0 for value in self.remaining.values()):
            return False
        labels = self.node.labels
        if not state.requirements.matches_labels(labels):
            return False
        if pod.volumes and self._volume_problem(pod):
            return False
        return not pod.volume_requirements or any(
            alternative.matches_labels(labels) for alternative in pod.volume_requirements
        )

    def still_admits(self, state: PodState) -> bool:
        """:meth:`admits`, for a pod this node admitted before this solve placed pods here:
        only its room, ports and volume slots can have changed since. (Nothing it holds
        goes below zero: a pod is placed only where each of its requests fits.)"""
        pod = state.pod
        return self._has_room(pod) and not (pod.volumes and self._volume_problem(pod))

    def _has_room(self, pod: PodRequest) -> bool:
        """Its host ports are free here and each of its requests fits in what is left."""
        if pod.host_ports and port_conflict(pod.host_ports, self.ports) is not None:
            return False
        remaining = self.remaining
        for name, value in pod.requests.items():
            if value > 0 and value > remaining.get(name, 0):
                return False
        return True

    def plan(
        self,
        state: PodState,
        admitted: bool = False,
        check: TopologyCheck | None = None,
    ) -> Refusal | None:
        """None when the pod fits here (kube-scheduler's view plus Karpenter's topology).

        ``admitted``: the caller knows the node admits the pod as it stands. ``check``: the
        pod's topology answers, kept for the rest of this attempt to place it (see
        :mod:`.nodetopology`).
        """
        if not admitted and not self.admits(state):
            return LASTING
        if state.topology is not None and state.topology.constraining:
            if check is None:
                check = TopologyCheck(PodGroups(state))
            refusal = check.refusal(
                self.node.labels, self.label_requirements, self.hostname, self.unlike
            )
            if refusal is not None:
                return refusal
        if state.pod.claims and self.devices is not None:
            problem = self.devices.plan_node(self.node, state.pod, self.label_requirements)
            if problem is not None:
                return Refusal(problem, lasting=False)
        return None

    def commit(self, state: PodState, topology: Topology) -> None:
        pod = state.pod
        remaining = self.remaining
        for name, value in pod.requests.items():
            remaining[name] = remaining.get(name, 0) - value
        self.ports.extend(pod.host_ports)
        for driver, ids in pod.volumes.items():
            self.volumes.setdefault(driver, set()).update(ids)
        self.pods.append(pod)
        if pod.claims and self.devices is not None:
            self.devices.commit(pod)
        if state.topology is not None:
            topology.record(
                state.topology,
                self.taints,
                self.label_requirements,
                self.hostname,
                allow_undefined=False,
            )
