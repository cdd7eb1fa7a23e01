"""Karpenter's cluster "consolidation state": a counter moved by every change that can change
what a consolidation search finds, which the consolidated memo (:mod:`.memo`) compares.

Karpenter moves it (``MarkUnconsolidated``) when a Node or NodeClaim comes or goes, is
initialized or marked for deletion, when a pod is bound or deleted, when a NodePool's spec
changes and when NodeOverlays are applied. Here every change to a Node, NodeClaim, Pod or
NodePool moves it (a new label or taint on a node, a new pending pod and a NodeClaim becoming
consolidatable change what a search finds, and Karpenter waits up to its five minutes for
those), except the updates a search never reads:

- a NodeClaim's ``status.lastPodEventTime`` and its ``ConsistentStateFound`` condition
  (bookkeeping: the Consolidatable condition they lead to is a change of its own);
- a NodePool's ``status.resources`` and ``status.nodes`` (limits are counted from the nodes);
- a pod's conditions other than what PodScheduled says (``status`` and ``reason``: whether
  the pod waits for capacity), such as readiness and condition messages.

PodDisruptionBudgets are not counted here: the memo compares what they allow directly.
"""

from __future__ import annotations

from typing import cast

from pydantic import BaseModel

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import CONDITION_CONSISTENT_STATE_FOUND, NodeClaim, NodePool
from nodewright.cluster.state import Change, ClusterState


class ConsolidationState:
    """Counts, from the cluster's changes, those that can change a consolidation search."""

    def __init__(self, state: ClusterState) -> None:
        self._changes = state.feed(Node, NodeClaim, Pod, NodePool)
        self._version = 0

    def refresh(self) -> int:
        """Take in the changes since the last call (every pass drains them); the counter."""
        for change in self._changes.drain():
            if _matters(change):
                self._version += 1
        return self._version


def _matters(change: Change) -> bool:
    old, new = change.old, change.new
    if old is None or new is None:
        return True
    if change.kind is Pod:
        return _pod_matters(cast(Pod, old), cast(Pod, new))
    if change.kind is NodeClaim:
        return _claim_matters(cast(NodeClaim, old), cast(NodeClaim, new))
    if change.kind is NodePool:
        return _pool_matters(cast(NodePool, old), cast(NodePool, new))
    return True


def _pod_matters(old: Pod, new: Pod) -> bool:
    if old.spec is not new.spec and old.spec != new.spec:
        return True
    if _differ(old.metadata, new.metadata, "resource_version"):
        return True
    if _differ(old.status, new.status, "conditions"):
        return True
    return _scheduled(old) != _scheduled(new)


def _scheduled(pod: Pod) -> tuple[str, str | None] | None:
    condition = pod.condition("PodScheduled")
    return None if condition is None else (condition.status, condition.reason)


def _claim_matters(old: NodeClaim, new: NodeClaim) -> bool:
    if old.spec is not new.spec and old.spec != new.spec:
        return True
    if _differ(old.metadata, new.metadata, "resource_version"):
        return True
    if _differ(old.status, new.status, "conditions", "last_pod_event_time"):
        return True
    return _read_conditions(old) != _read_conditions(new)


def _read_conditions(claim: NodeClaim) -> list[object]:
    return [c for c in claim.status.conditions if c.type != CONDITION_CONSISTENT_STATE_FOUND]


def _pool_matters(old: NodePool, new: NodePool) -> bool:
    if old.spec is not new.spec and old.spec != new.spec:
        return True
    if _differ(old.metadata, new.metadata, "resource_version"):
        return True
    return _differ(old.status, new.status, "resources", "nodes")


def _differ(old: BaseModel, new: BaseModel, *ignored: str) -> bool:
    """Whether two versions of a part of an object differ in a field other than ``ignored``."""
    if old is new:
        return False
    return any(
        getattr(old, name) != getattr(new, name)
        for name in type(old).model_fields
        if name not in ignored
    )
