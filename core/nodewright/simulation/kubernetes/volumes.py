"""Persistent volumes: generic ephemeral claims, provisioning and binding.

Plays the ephemeral volume controller, the PersistentVolume controller and a CSI provisioner
that always succeeds. Claims of a class with ``volumeBindingMode: Immediate`` are provisioned
as soon as they exist; ``WaitForFirstConsumer`` claims when their pod gets a node (from the
scheduler, or for pods bound without it), in that node's zone.
"""

from __future__ import annotations

from nodewright.api.apps import StorageClass
from nodewright.api.core import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeSpec,
    PersistentVolumeStatus,
    Pod,
    VolumeNodeAffinity,
)
from nodewright.api.labels import ZONE_LABEL
from nodewright.api.meta import ObjectMeta, ObjectReference
from nodewright.cluster.memory import MemoryCluster, copy_object
from nodewright.scheduling.volumes import (
    BIND_COMPLETED_ANNOTATION,
    claim_name,
    csi_driver,
    default_storage_class,
    ephemeral_claim_template,
)
from nodewright.simulation.kubernetes.ownership import controller_ref, create_unless_taken
from nodewright.simulation.kubernetes.pods import is_active

SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
BOUND_BY_CONTROLLER_ANNOTATION = "pv.kubernetes.io/bound-by-controller"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


class VolumeControllers:
    """Claims for ephemeral volumes, and volumes for claims."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    def create_ephemeral_claims(self) -> None:
        """The ephemeral volume controller: a claim ``<pod>-<volume>`` owned by the pod for each
        generic ephemeral volume, so it goes when the pod does."""
        for pod in list(self.cluster.peek(Pod)):
            if not is_active(pod):
                continue
            for volume in pod.spec.volumes:
                template = ephemeral_claim_template(volume)
                if template is None:
                    continue
                name = f"{pod.name}-{volume.name}"
                if self.cluster.get(PersistentVolumeClaim, name, pod.namespace) is not None:
                    continue
                create_unless_taken(
                    self.cluster,
                    PersistentVolumeClaim(
                        metadata=ObjectMeta(
                            name=name,
                            namespace=pod.namespace,
                            labels=dict(template.metadata.labels),
                            annotations=dict(template.metadata.annotations),
                            owner_references=[controller_ref(pod)],
                        ),
                        spec=template.spec,
                    ),
                )

    def bind_immediate_volumes(self) -> None:
        """Provision a volume for every unbound claim whose class binds immediately, and
        complete the binding of claims created with a ``volumeName``."""
        for claim in list(self.cluster.peek(PersistentVolumeClaim)):
            if claim.deleting or (
                claim.status.phase == "Bound"
                and BIND_COMPLETED_ANNOTATION in claim.metadata.annotations
            ):
                continue
            if claim.spec.volume_name:
                if self.cluster.get(PersistentVolume, claim.spec.volume_name) is not None:
                    self._mark_claim_bound(claim)
                continue
            storage_class = self.storage_class(claim)
            if (
                storage_class is None
                or storage_class.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER
            ):
                continue
            zone = _first_allowed_zone(storage_class)
            self._provision(claim, storage_class, zone, node_name=None)

    def bind_waiting_volumes(self) -> None:
        """Provision WaitForFirstConsumer claims of pods bound without the scheduler."""
        nodes = {node.name: node for node in self.cluster.peek(Node)}
        for pod in list(self.cluster.peek(Pod)):
            node = nodes.get(pod.spec.node_name or "")
            if node is not None and is_active(pod):
                self.bind_pod_volumes(pod, node)

    def bind_pod_volumes(self, pod: Pod, node: Node) -> None:
        """Provision the pod's WaitForFirstConsumer claims in the zone of the node it got."""
        for volume in pod.spec.volumes:
            name = claim_name(pod, volume)
            if name is None:
                continue
            claim = self.cluster.get(PersistentVolumeClaim, name, pod.namespace)
            if claim is None or claim.spec.volume_name or claim.deleting:
                continue
            storage_class = self.storage_class(claim)
            if (
                storage_class is None
                or storage_class.volume_binding_mode != WAIT_FOR_FIRST_CONSUMER
            ):
                continue
            self._provision(
                claim, storage_class, node.metadata.labels.get(ZONE_LABEL), node_name=node.name
            )

    def storage_class(self, claim: PersistentVolumeClaim) -> StorageClass | None:
        """The claim's class; one without ``storageClassName`` gets the default class."""
        name = claim.spec.storage_class_name
        if name is None:
            return default_storage_class(self.cluster.peek(StorageClass))
        if not name:
            return None
        return self.cluster.get(StorageClass, name)

    def _provision(
        self,
        claim: PersistentVolumeClaim,
        storage_class: StorageClass,
        zone: str | None,
        node_name: str | None,
    ) -> None:
        """Create a volume in ``zone`` (anywhere when None) and bind ``claim`` to it."""
        name = f"pvc-{claim.metadata.uid}"
        affinity = None
        if zone:
            affinity = VolumeNodeAffinity(
                required=NodeSelector(
                    node_selector_terms=[
                        NodeSelectorTerm(
                            match_expressions=[
                                NodeSelectorRequirement(
                                    key=ZONE_LABEL, operator="In", values=[zone]
                                )
                            ]
                        )
                    ]
                )
            )
        if self.cluster.get(PersistentVolume, name) is None:
            self.cluster.create(
                PersistentVolume(
                    metadata=ObjectMeta(name=name),
                    spec=PersistentVolumeSpec(
                        storage_class_name=storage_class.name,
                        capacity=dict(claim.spec.resources.requests),
                        claim_ref=ObjectReference(
                            api_version=claim.api_version,
                            kind=claim.kind,
                            name=claim.name,
                            namespace=claim.namespace,
                            uid=claim.metadata.uid,
                        ),
                        node_affinity=affinity,
                        csi={"driver": csi_driver(storage_class.provisioner), "volumeHandle": name},
                    ),
                    status=PersistentVolumeStatus(phase="Bound"),
                )
            )
        bound = copy_object(claim)
        bound.spec.volume_name = name
        if node_name:
            bound.metadata.annotations[SELECTED_NODE_ANNOTATION] = node_name
        bound.metadata.annotations[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
        bound.spec.storage_class_name = storage_class.name
        bound = self.cluster.update(bound)
        self._mark_claim_bound(bound)

    def _mark_claim_bound(self, claim: PersistentVolumeClaim) -> None:
        """The PersistentVolume controller's last step: the binding is complete."""
        if BIND_COMPLETED_ANNOTATION not in claim.metadata.annotations:
            claim = copy_object(claim)
            claim.metadata.annotations[BIND_COMPLETED_ANNOTATION] = "yes"
            claim = self.cluster.update(claim)
        if claim.status.phase == "Bound":
            return
        bound = copy_object(claim)
        bound.status.phase = "Bound"
        self.cluster.update_status(bound)


def allowed_topology_selector(storage_class: StorageClass) -> NodeSelector:
    """The class's ``allowedTopologies`` as a node selector."""
    return NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_expressions=[
                    NodeSelectorRequirement(key=e.key, operator="In", values=list(e.values))
                    for e in term.match_label_expressions
                ]
            )
            for term in storage_class.allowed_topologies
        ]
    )


def _first_allowed_zone(storage_class: StorageClass) -> str | None:
    for term in storage_class.allowed_topologies:
        for expression in term.match_label_expressions:
            if expression.key == ZONE_LABEL and expression.values:
                return expression.values[0]
    return None
