"""The Eviction subresource's PodDisruptionBudget check, as the in-memory API server makes
it: a running pod may be evicted only while the one budget that selects it allows one more
disruption (healthy pods above the desired count); more than one budget is refused."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from nodewright.api.apps import PodDisruptionBudget, ReplicaSet, StatefulSet
from nodewright.api.core import Pod
from nodewright.api.meta import KubeObject
from nodewright.cluster import EvictionBlockedError, InvalidError
from nodewright.cluster.selectors import label_selector_matches
from nodewright.cluster.state import ClusterState


class EvictionCheck:
    """The API server's eviction check over one cluster state, with each budget's answer kept
    while no pod, ReplicaSet, StatefulSet or budget changed (a drain asks about every pod of
    a node, and asks again while a budget holds it back)."""

    def __init__(self, state: ClusterState) -> None:
        self._state = state
        #: Budget key -> the kinds' versions it was counted at, and how many more may go.
        self._allowed: dict[tuple[str, str], tuple[tuple[int, ...], int]] = {}

    def __call__(self, pod: Pod) -> None:
        """Raise :class:`~nodewright.cluster.EvictionBlockedError` when the API server would
        refuse to evict ``pod``."""
        check_eviction(self._state, pod, self._disruptions_allowed)

    def _disruptions_allowed(self, state: ClusterState, pdb: PodDisruptionBudget) -> int:
        versions = tuple(state.kind_version(kind) for kind in _COUNTED_KINDS)
        key = (pdb.namespace, pdb.name)
        kept = self._allowed.get(key)
        if kept is not None and kept[0] == versions:
            return kept[1]
        if len(self._allowed) >= _BUDGETS_KEPT:
            self._allowed.clear()
        allowed = _disruptions_allowed(state, pdb)
        self._allowed[key] = (versions, allowed)
        return allowed


def check_eviction(
    state: ClusterState,
    pod: Pod,
    allowed: Callable[[ClusterState, PodDisruptionBudget], int] | None = None,
) -> None:
    """Raise :class:`~nodewright.cluster.EvictionBlockedError` when the API server would
    refuse to evict ``pod``."""
    # The API server lets pods that are not running (or already going) leave freely.
    if pod.deleting or pod.status.phase in ("Pending", "Succeeded", "Failed"):
        return
    budgets = [
        pdb
        for pdb in state.sorted(PodDisruptionBudget, pod.namespace)
        if label_selector_matches(pdb.spec.selector, pod.metadata.labels)
    ]
    if len(budgets) > 1:
        names = ", ".join(pdb.name for pdb in budgets)
        raise EvictionBlockedError(
            f"pod {pod.key} has more than one PodDisruptionBudget ({names}), "
            "which the eviction subresource does not support"
        )
    count = allowed if allowed is not None else _disruptions_allowed
    if budgets and count(state, budgets[0]) <= 0:
        raise EvictionBlockedError(
            f"Cannot evict pod {pod.key} as it would violate the pod's disruption "
            f"budget {budgets[0].name}."
        )


def _disruptions_allowed(state: ClusterState, pdb: PodDisruptionBudget) -> int:
    """How many more pods the budget lets go: healthy pods minus the desired count."""
    selector = pdb.spec.selector
    pods = [
        pod
        for pod in state.in_namespace(Pod, pdb.namespace).values()
        if label_selector_matches(selector, pod.metadata.labels)
        and pod.status.phase not in ("Succeeded", "Failed")
    ]
    healthy = sum(1 for pod in pods if pod.status.phase == "Running" and not pod.deleting)
    expected = _expected_pods(state, pods)
    if pdb.spec.max_unavailable is not None:
        desired = max(0, expected - _scaled(pdb.spec.max_unavailable, expected))
    elif pdb.spec.min_available is not None:
        desired = _scaled(pdb.spec.min_available, expected)
    else:
        desired = expected  # policy/v1 default: minAvailable 100%
    return healthy - desired


def _expected_pods(state: ClusterState, pods: Iterable[Pod]) -> int:
    """Pods the budget expects: the scale of each owning controller, else one per live pod."""
    expected = 0
    controllers: set[tuple[str, str]] = set()
    for pod in pods:
        owner = next((ref for ref in pod.metadata.owner_references if ref.controller), None)
        if owner is not None and (owner.kind, owner.name) in controllers:
            continue  # its controller's scale is counted
        scale = _controller_scale(state, pod.namespace, owner.kind, owner.name) if owner else None
        if scale is None or owner is None:
            expected += 0 if pod.deleting else 1
        else:
            controllers.add((owner.kind, owner.name))
            expected += scale
    return expected


_SCALABLE: dict[str, type[KubeObject]] = {"ReplicaSet": ReplicaSet, "StatefulSet": StatefulSet}
#: What a budget's count reads besides the budget itself.
_COUNTED_KINDS: tuple[type[KubeObject], ...] = (Pod, ReplicaSet, StatefulSet, PodDisruptionBudget)
#: Budgets' answers kept before the memo starts over.
_BUDGETS_KEPT = 1024


def _controller_scale(state: ClusterState, namespace: str, kind: str, name: str) -> int | None:
    owner_kind = _SCALABLE.get(kind)
    if owner_kind is None:
        return None
    owner = state.get(owner_kind, (namespace, name))
    if owner is None:
        return None
    replicas: int = getattr(owner, "spec").replicas  # noqa: B009
    return replicas


def _scaled(value: int | str, total: int) -> int:
    """An int, or a percentage of ``total`` rounded up (as the disruption controller does)."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%"):
        try:
            percent = int(text[:-1])
        except ValueError as error:
            raise InvalidError(f"invalid percentage {value!r}") from error
        return math.ceil(percent * total / 100)
    try:
        return int(text)
    except ValueError as error:
        raise InvalidError(f"invalid int-or-percentage {value!r}") from error
