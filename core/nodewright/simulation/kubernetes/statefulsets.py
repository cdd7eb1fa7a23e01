"""The StatefulSet controller: pods ``<name>-<ordinal>``, each with its own claims."""

from __future__ import annotations

from nodewright.api.apps import StatefulSet
from nodewright.api.core import (
    PersistentVolumeClaim,
    PersistentVolumeClaimVolumeSource,
    Pod,
    Volume,
)
from nodewright.api.meta import ObjectMeta
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.state import Key, object_key
from nodewright.simulation.kubernetes.ownerchanges import OwnerChanges
from nodewright.simulation.kubernetes.ownership import create_unless_taken, pod_from_template
from nodewright.simulation.kubernetes.revisions import Revisions


class StatefulSetController:
    """Keeps ordinals ``0..replicas-1`` of each StatefulSet, and their claims.

    A pass looks only at StatefulSets that changed, or whose pods did, since the last; a
    deleted claim brings back every StatefulSet of its namespace.
    """

    def __init__(self, cluster: MemoryCluster, revisions: Revisions) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self.revisions = revisions
        self._changes = OwnerChanges(self.state, StatefulSet, Pod)
        self._claims = self.state.feed(PersistentVolumeClaim)

    def reconcile(self) -> None:
        """Pods ``<name>-<ordinal>`` with one claim per volumeClaimTemplate and ordinal,
        labelled with the StatefulSet's revision.

        Claims outlive the pods (the default ``Retain`` policy), so a pod that comes back
        finds its volume. All ordinals start at once (``Parallel`` pod management).
        """
        for key in sorted(self._affected()):
            sts = self.state.get(StatefulSet, key)
            if sts is None or sts.deleting:
                continue
            owned = self.state.controlled_by(Pod, sts.metadata.uid or "")
            pods = {pod.name: pod for pod in owned.values()}
            for ordinal in range(sts.spec.replicas):
                name = f"{sts.name}-{ordinal}"
                claims = self._ensure_claims(sts, ordinal)
                if name in pods:
                    continue
                pod = pod_from_template(
                    sts.spec.template,
                    sts,
                    name=name,
                    labels={
                        **self.revisions.labels(sts),
                        "statefulset.kubernetes.io/pod-name": name,
                        "apps.kubernetes.io/pod-index": str(ordinal),
                    },
                )
                pod.spec.volumes = [
                    v for v in pod.spec.volumes if v.name not in {c for c, _ in claims}
                ] + [
                    Volume(
                        name=volume,
                        persistent_volume_claim=PersistentVolumeClaimVolumeSource(claim_name=claim),
                    )
                    for volume, claim in claims
                ]
                # Looked at again next pass: to see it, or to try again while another pod
                # holds the name.
                create_unless_taken(self.cluster, pod)
                self._changes.requeue(key)
            extra = sorted(
                (pod for pod in pods.values() if _ordinal(pod.name, sts.name) >= sts.spec.replicas),
                key=lambda pod: -_ordinal(pod.name, sts.name),
            )
            for pod in extra:
                if not pod.deleting:
                    self.cluster.delete(Pod, pod.name, pod.namespace)

    def _affected(self) -> set[Key]:
        keys = self._changes.affected()
        for change in self._claims.drain():
            if change.new is None:  # a claim went: its StatefulSet makes it again
                namespace = change.key[0]
                keys.update(k for k in self.state.objects(StatefulSet) if k[0] == namespace)
        return keys

    def _ensure_claims(self, sts: StatefulSet, ordinal: int) -> list[tuple[str, str]]:
        """Create missing claims for one ordinal; returns ``(volume name, claim name)`` pairs."""
        pairs: list[tuple[str, str]] = []
        for template in sts.spec.volume_claim_templates:
            claim = f"{template.name}-{sts.name}-{ordinal}"
            pairs.append((template.name, claim))
            if self.cluster.get(PersistentVolumeClaim, claim, sts.namespace) is not None:
                continue
            self._changes.requeue(object_key(sts))
            self.cluster.create(
                PersistentVolumeClaim(
                    metadata=ObjectMeta(
                        name=claim,
                        namespace=sts.namespace,
                        labels={**sts.spec.selector.match_labels, **template.metadata.labels},
                        annotations=dict(template.metadata.annotations),
                    ),
                    spec=template.spec.model_copy(deep=True),
                )
            )
        return pairs


def _ordinal(pod_name: str, set_name: str) -> int:
    suffix = pod_name[len(set_name) + 1 :]
    return int(suffix) if suffix.isdigit() else -1
