"""Default topology spread: ``SCHEDULER_CONFIG``'s ``podTopologySpread.defaultConstraints``
given to pods that declare no spread of their own, as kube-scheduler's PodTopologySpread
plugin gives them (Karpenter's ``DefaultTopologySpreadInjector``).

kube-scheduler forbids a selector on a default constraint and deduces one per pod
(``helper.DefaultSelector``): the selectors of the Services in the pod's namespace that select
it, merged, plus the selector of its controller when that is a ReplicationController,
ReplicaSet or StatefulSet. A pod for which nothing can be deduced gets no default spread (an
empty selector would count every pod of the namespace). Provisioning, consolidation
simulations and the simulated kube-scheduler all apply the same defaults, so they count the
same pods.

The constraints exist only on the copies being scheduled; nothing is written back.
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.api.apps import ReplicaSet, StatefulSet
from nodewright.api.core import (
    LabelSelector,
    LabelSelectorRequirement,
    Pod,
    ReplicationController,
    Service,
    TopologySpreadConstraint,
)
from nodewright.api.meta import KubeObject
from nodewright.cluster.state import ClusterState

#: The kinds a deduced selector is read from: a change to one may change it.
SELECTOR_SOURCES: tuple[type[KubeObject], ...] = (
    Service,
    ReplicationController,
    ReplicaSet,
    StatefulSet,
)

#: What a controller adds: (equality labels that overwrite the Services', expressions ANDed on).
_Contribution = tuple[dict[str, str], list[LabelSelectorRequirement]]


class DefaultSpread:
    """Deduces selectors and stamps the default constraints on pods, for one pass (lookups
    are remembered until :meth:`forget`)."""

    def __init__(
        self, state: ClusterState, constraints: Sequence[TopologySpreadConstraint]
    ) -> None:
        self.state = state
        self.constraints = tuple(constraints)
        self._services: dict[str, list[dict[str, str]]] = {}
        self._owners: dict[tuple[str, str, str], _Contribution | None] = {}
        self._selectors: dict[tuple[str, str, tuple[tuple[str, str], ...]], LabelSelector | None]
        self._selectors = {}

    def forget(self) -> None:
        self._services.clear()
        self._owners.clear()
        self._selectors.clear()

    def version(self) -> int:
        """Changes whenever an object a selector is deduced from changes."""
        if not self.constraints:
            return 0
        return sum(self.state.kind_version(kind) for kind in SELECTOR_SOURCES)

    def applies_to(self, pod: Pod) -> bool:
        return bool(self.constraints) and not pod.spec.topology_spread_constraints

    def apply(self, pod: Pod) -> Pod:
        """``pod`` itself, or a copy carrying the default constraints with its selector."""
        if not self.applies_to(pod):
            return pod
        selector = self.selector(pod)
        if selector is None:
            return pod
        defaults = [
            c.model_copy(update={"label_selector": selector.model_copy(deep=True)})
            for c in self.constraints
        ]
        spec = pod.spec.model_copy(update={"topology_spread_constraints": defaults})
        return pod.model_copy(update={"spec": spec})

    def selector(self, pod: Pod) -> LabelSelector | None:
        owner = _controller(pod)
        key = (
            pod.namespace,
            owner[2] if owner else "",
            tuple(sorted(pod.metadata.labels.items())),
        )
        if key not in self._selectors:
            self._selectors[key] = self._deduce(pod, owner)
        return self._selectors[key]

    def _deduce(self, pod: Pod, owner: tuple[str, str, str] | None) -> LabelSelector | None:
        labels = pod.metadata.labels
        match_labels: dict[str, str] = {}
        for selector in self._service_selectors(pod.namespace):
            if all(labels.get(k) == v for k, v in selector.items()):
                match_labels.update(selector)  # a later Service wins a shared key
        expressions: list[LabelSelectorRequirement] = []
        contribution = self._owner(pod.namespace, owner) if owner else None
        if contribution is not None:
            match_labels.update(contribution[0])
            expressions.extend(contribution[1])
        if not match_labels and not expressions:
            return None
        return LabelSelector(match_labels=match_labels, match_expressions=expressions)

    def _service_selectors(self, namespace: str) -> list[dict[str, str]]:
        found = self._services.get(namespace)
        if found is None:
            # A Service without a selector selects nothing, so it adds nothing.
            found = self._services[namespace] = [
                dict(s.spec.selector)
                for s in self.state.sorted(Service, namespace)
                if s.spec.selector is not None
            ]
        return found

    def _owner(self, namespace: str, owner: tuple[str, str, str]) -> _Contribution | None:
        key = (namespace, owner[0], owner[1])
        if key not in self._owners:
            self._owners[key] = self._contribution(namespace, owner[0], owner[1])
        return self._owners[key]

    def _contribution(self, namespace: str, kind: str, name: str) -> _Contribution | None:
        if kind == "ReplicationController":
            rc = self.state.get(ReplicationController, (namespace, name))
            if rc is None or not rc.spec.selector:
                return None
            return dict(rc.spec.selector), []
        workload: ReplicaSet | StatefulSet | None
        if kind == "ReplicaSet":
            workload = self.state.get(ReplicaSet, (namespace, name))
        elif kind == "StatefulSet":
            workload = self.state.get(StatefulSet, (namespace, name))
        else:
            return None
        if workload is None:
            return None  # gone while its pods linger: kube-scheduler proceeds without it
        return {}, _requirements(workload.spec.selector)


def _controller(pod: Pod) -> tuple[str, str, str] | None:
    """(kind, name, uid) of the pod's controller, if it has one."""
    for ref in pod.metadata.owner_references:
        if ref.controller:
            return ref.kind, ref.name, ref.uid
    return None


def _requirements(selector: LabelSelector | None) -> list[LabelSelectorRequirement]:
    """A selector as a list of requirements: each matchLabels entry becomes ``In [value]``."""
    if selector is None:
        return []
    return [
        *(
            LabelSelectorRequirement(key=k, operator="In", values=[v])
            for k, v in sorted(selector.match_labels.items())
        ),
        *(e.model_copy(deep=True) for e in selector.match_expressions),
    ]
