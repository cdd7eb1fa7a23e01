"""The Eviction subresource's PodDisruptionBudget check, as the in-memory API server makes
it: a running pod may be evicted only while the one budget that selects it allows one more
disruption (healthy pods above the desired count); more than one budget is refused."""

from __future__ import annotations

import math
from collections.abc import Iterable

from nodewright.api.apps import PodDisruptionBudget, ReplicaSet, StatefulSet
from nodewright.api.core import Pod
from nodewright.api.meta import KubeObject
from nodewright.cluster import EvictionBlockedError, InvalidError
from nodewright.cluster.selectors import label_selector_matches
from nodewright.cluster.state import ClusterState


def check_eviction(state: ClusterState, pod: Pod) -> None:
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
    if budgets and _disruptions_allowed(state, budgets[0]) <= 0:
        raise EvictionBlockedError(
            f"Cannot evict pod {pod.key} as it would violate the pod's disruption "
            f"budget {budgets[0].name}."
        )


def _disruptions_allowed(state: ClusterState, pdb: PodDisruptionBudget) -> int:
    """How many more pods the budget lets go: healthy pods minus the desired count."""
    pods = [
        pod
        for pod in state.sorted(Pod, pdb.namespace)
        if label_selector_matches(pdb.spec.selector, pod.metadata.labels)
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
        scale = _controller_scale(state, pod.namespace, owner.kind, owner.name) if owner else None
        if scale is None or owner is None:
            expected += 0 if pod.deleting else 1
        elif (owner.kind, owner.name) not in controllers:
            controllers.add((owner.kind, owner.name))
            expected += scale
    return expected


def _controller_scale(state: ClusterState, namespace: str, kind: str, name: str) -> int | None:
    scalable: dict[str, type[KubeObject]] = {
        "ReplicaSet": ReplicaSet,
        "StatefulSet": StatefulSet,
    }
    owner_kind = scalable.get(kind)
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
