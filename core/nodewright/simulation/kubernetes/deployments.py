"""The Deployment controller: one ReplicaSet per pod template, the current one scaled."""

from __future__ import annotations

import hashlib
import json

from nodewright.api.apps import Deployment, ReplicaSet
from nodewright.api.core import PodTemplateSpec
from nodewright.api.meta import ObjectMeta
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import object_key
from nodewright.simulation.kubernetes.ownerchanges import OwnerChanges
from nodewright.simulation.kubernetes.ownership import controller_ref, create_unless_taken

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"


class DeploymentController:
    """Keeps each Deployment's ReplicaSets: the current template's gets the replicas, older
    ones 0 (no rolling update: the switch is immediate).

    A pass looks only at Deployments that changed, or whose ReplicaSets did, since the last.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self._changes = OwnerChanges(self.state, Deployment, ReplicaSet)

    def reconcile(self) -> None:
        """One ReplicaSet per pod template; the current one gets the replicas, older ones 0."""
        for key in sorted(self._changes.affected()):
            deployment = self.state.get(Deployment, key)
            if deployment is None or deployment.deleting:
                continue
            template_hash = _template_hash(deployment.spec.template)
            name = replica_set_name(deployment)
            owned = sorted(
                self.state.controlled_by(ReplicaSet, deployment.metadata.uid or "").values(),
                key=object_key,
            )
            current = next((rs for rs in owned if rs.name == name), None)
            if current is None:
                # Looked at again next pass: to see it, or to try again while another object
                # holds the name.
                create_unless_taken(self.cluster, _replica_set(deployment, name, template_hash))
                self._changes.requeue(key)
            elif current.spec.replicas != deployment.spec.replicas:
                scaled = mutable(current)
                scaled.spec.replicas = deployment.spec.replicas
                self.cluster.update(scaled)
            for old in owned:
                if old.name != name and old.spec.replicas != 0 and not old.deleting:
                    retired = mutable(old)
                    retired.spec.replicas = 0
                    self.cluster.update(retired)


def replica_set_name(deployment: Deployment) -> str:
    """The name of the ReplicaSet of the Deployment's current template."""
    return f"{deployment.name}-{_template_hash(deployment.spec.template)}"


def _template_hash(template: PodTemplateSpec) -> str:
    """A stable name suffix for a pod template: a change to the template changes it."""
    text = json.dumps(template.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _replica_set(deployment: Deployment, name: str, template_hash: str) -> ReplicaSet:
    template = deployment.spec.template.model_copy(deep=True)
    template.metadata.labels[POD_TEMPLATE_HASH_LABEL] = template_hash
    selector = deployment.spec.selector.model_copy(deep=True)
    selector.match_labels[POD_TEMPLATE_HASH_LABEL] = template_hash
    return ReplicaSet(
        metadata=ObjectMeta(
            name=name,
            namespace=deployment.namespace,
            labels=dict(template.metadata.labels),
            owner_references=[controller_ref(deployment)],
        ),
        spec=deployment.spec.model_copy(
            update={"selector": selector, "template": template}, deep=True
        ),
    )
