"""The Deployment controller: one ReplicaSet per pod template, the current one scaled."""

from __future__ import annotations

from datetime import UTC, datetime

from nodewright.api.apps import Deployment, ReplicaSet
from nodewright.api.meta import ObjectMeta
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.simulation.kubernetes.ownerchanges import OwnerChanges
from nodewright.simulation.kubernetes.ownership import controller_ref, create_unless_taken
from nodewright.simulation.kubernetes.revisions import POD_TEMPLATE_HASH_LABEL, TemplateHashes

_NEVER = datetime.min.replace(tzinfo=UTC)


class DeploymentController:
    """Keeps each Deployment's ReplicaSets: the current template's gets the replicas, older
    ones 0 (no rolling update: the switch is immediate).

    The current ReplicaSet is found as kube-controller-manager finds it: the oldest owned one
    whose template is the Deployment's, its ``pod-template-hash`` label aside, whatever its
    name. So a ReplicaSet a real cluster made (named by the hash it computed) stays the
    Deployment's, and a new one is made only for a template no ReplicaSet has.

    A pass looks only at Deployments that changed, or whose ReplicaSets did, since the last.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self._changes = OwnerChanges(self.state, Deployment, ReplicaSet)
        self._hashes = TemplateHashes()

    def reconcile(self) -> None:
        """One ReplicaSet per pod template; the current one gets the replicas, older ones 0."""
        for key in sorted(self._changes.affected()):
            deployment = self.state.get(Deployment, key)
            if deployment is None or deployment.deleting:
                continue
            wanted = self._hashes.of(deployment, deployment.spec.template)
            owned = sorted(
                self.state.controlled_by(ReplicaSet, deployment.metadata.uid or "").values(),
                key=lambda rs: (rs.metadata.creation_timestamp or _NEVER, rs.name),
            )
            current = next(
                (rs for rs in owned if self._hashes.of(rs, rs.spec.template) == wanted), None
            )
            if current is None:
                # Looked at again next pass: to see it, or to try again while another object
                # holds the name.
                create_unless_taken(self.cluster, _replica_set(deployment, wanted))
                self._changes.requeue(key)
            elif current.spec.replicas != deployment.spec.replicas:
                scaled = mutable(current)
                scaled.spec.replicas = deployment.spec.replicas
                self.cluster.update(scaled)
            for old in owned:
                if old is not current and old.spec.replicas != 0 and not old.deleting:
                    retired = mutable(old)
                    retired.spec.replicas = 0
                    self.cluster.update(retired)


def _replica_set(deployment: Deployment, template_hash: str) -> ReplicaSet:
    """A new ReplicaSet ``<deployment>-<hash>`` for the Deployment's current template."""
    template = deployment.spec.template.model_copy(deep=True)
    template.metadata.labels[POD_TEMPLATE_HASH_LABEL] = template_hash
    selector = deployment.spec.selector.model_copy(deep=True)
    selector.match_labels[POD_TEMPLATE_HASH_LABEL] = template_hash
    return ReplicaSet(
        metadata=ObjectMeta(
            name=f"{deployment.name}-{template_hash}",
            namespace=deployment.namespace,
            labels=dict(template.metadata.labels),
            owner_references=[controller_ref(deployment)],
        ),
        spec=deployment.spec.model_copy(
            update={"selector": selector, "template": template}, deep=True
        ),
    )
