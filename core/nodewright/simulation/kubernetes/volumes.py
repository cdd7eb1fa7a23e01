"""Persistent volumes: generic ephemeral claims, provisioning and binding.

Plays the ephemeral volume controller, the PersistentVolume controller and a CSI provisioner
that always succeeds. Claims of a class with ``volumeBindingMode: Immediate`` are provisioned
as soon as they exist; ``WaitForFirstConsumer`` claims when their pod gets a node (from the
scheduler, or for pods bound without it), in that node's zone.
"""

from __future__ import annotations

from typing import cast

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
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.cluster.state import ClusterState, Key
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


class ClaimUsers:
    """Which pods use each claim (by ``persistentVolumeClaim`` or generic ephemeral volume),
    kept current from pod changes."""

    def __init__(self, state: ClusterState) -> None:
        self._feed = state.feed(Pod)
        #: claim key -> keys of the pods whose volumes name it
        self._users: dict[Key, set[Key]] = {}
        #: pod key -> the claim keys its volumes name (pods with any)
        self._claims: dict[Key, tuple[Key, ...]] = {}
        for key, pod in state.objects(Pod).items():
            self._track(key, pod)

    def of(self, claim: Key) -> set[Key]:
        self.sync()
        return set(self._users.get(claim, ()))

    def pods(self) -> set[Key]:
        """Every pod that uses a claim."""
        self.sync()
        return set(self._claims)

    def sync(self) -> None:
        """Take in the pod changes since the last call."""
        for change in self._feed.drain():
            self._track(change.key, cast("Pod | None", change.new))

    def _track(self, key: Key, pod: Pod | None) -> None:
        for claim in self._claims.pop(key, ()):
            users = self._users[claim]
            users.discard(key)
            if not users:
                del self._users[claim]
        if pod is None:
            return
        claims = tuple(
            (pod.namespace, name)
            for volume in pod.spec.volumes
            if (name := claim_name(pod, volume)) is not None
        )
        if claims:
            self._claims[key] = claims
            for claim in claims:
                self._users.setdefault(claim, set()).add(key)


class VolumeControllers:
    """Claims for ephemeral volumes, and volumes for claims.

    Each of the three steps looks only at what changed since its last pass: pods and their
    claims for the ephemeral volume controller, claims and volumes for immediate binding,
    bound pods, their nodes and claims for WaitForFirstConsumer binding. A StorageClass change
    (rare: the default class may move) brings back every claim and every pod with claims.
    """

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster
        self.state = cluster.state
        self.claim_users = ClaimUsers(self.state)
        self._ephemeral_changes = self.state.feed(Pod, PersistentVolumeClaim)
        self._ephemeral_requeued: set[Key] = set()
        self._immediate_changes = self.state.feed(
            PersistentVolumeClaim, PersistentVolume, StorageClass
        )
        self._waiting_changes = self.state.feed(Pod, Node, PersistentVolumeClaim, StorageClass)
        self._started: set[str] = set()
        #: volume name -> keys of the claims that name it in ``spec.volumeName``
        self._claims_naming: dict[str, set[Key]] = {}
        for key, claim in self.state.objects(PersistentVolumeClaim).items():
            self._track_volume_name(key, None, claim)

    def _first(self, step: str) -> bool:
        """True the first time ``step`` runs: it then looks at everything."""
        if step in self._started:
            return False
        self._started.add(step)
        return True

    # -- the ephemeral volume controller ------------------------------------------------------

    def create_ephemeral_claims(self) -> None:
        """The ephemeral volume controller: a claim ``<pod>-<volume>`` owned by the pod for each
        generic ephemeral volume, so it goes when the pod does."""
        # Follow pod changes on every pass, asked or not, so the feed never holds on to old
        # versions of every pod in a cluster that has no claims at all.
        self.claim_users.sync()
        changes = self._ephemeral_changes.drain()
        suspects, self._ephemeral_requeued = self._ephemeral_requeued, set()
        if self._first("ephemeral"):
            suspects = set(self.state.objects(Pod))
        else:
            for change in changes:
                if change.kind is Pod:
                    if change.new is not None:
                        suspects.add(change.key)
                elif change.new is None:  # a claim went: a pod that wants it makes it again
                    suspects |= self.claim_users.of(change.key)
        for key in sorted(suspects):
            pod = self.state.get(Pod, key)
            if pod is None or not is_active(pod):
                continue
            for volume in pod.spec.volumes:
                template = ephemeral_claim_template(volume)
                if template is None:
                    continue
                name = f"{pod.name}-{volume.name}"
                if self.state.get(PersistentVolumeClaim, (pod.namespace, name)) is not None:
                    continue
                self._ephemeral_requeued.add(key)  # a feed may not show it go before next pass
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

    # -- the PersistentVolume controller: Immediate binding -----------------------------------

    def bind_immediate_volumes(self) -> None:
        """Provision a volume for every unbound claim whose class binds immediately, and
        complete the binding of claims created with a ``volumeName``."""
        changes = self._immediate_changes.drain()
        claims = self.state.objects(PersistentVolumeClaim)
        suspects: set[Key] = set()
        everything = self._first("immediate")
        for change in changes:
            if change.kind is PersistentVolumeClaim:
                self._track_volume_name(
                    change.key,
                    cast("PersistentVolumeClaim | None", change.old),
                    cast("PersistentVolumeClaim | None", change.new),
                )
                suspects.add(change.key)
            elif change.kind is PersistentVolume:
                suspects |= self._claims_naming.get(change.key[1], set())
            else:
                everything = True
        if everything:
            suspects = set(claims)
        for key in sorted(suspects):
            claim = claims.get(key)
            if (
                claim is None
                or claim.deleting
                or (
                    claim.status.phase == "Bound"
                    and BIND_COMPLETED_ANNOTATION in claim.metadata.annotations
                )
            ):
                continue
            if claim.spec.volume_name:
                if self.state.get(PersistentVolume, ("", claim.spec.volume_name)) is not None:
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

    def _track_volume_name(
        self, key: Key, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> None:
        if old is not None and old.spec.volume_name:
            naming = self._claims_naming.get(old.spec.volume_name)
            if naming is not None:
                naming.discard(key)
                if not naming:
                    del self._claims_naming[old.spec.volume_name]
        if new is not None and new.spec.volume_name:
            self._claims_naming.setdefault(new.spec.volume_name, set()).add(key)

    # -- WaitForFirstConsumer binding ---------------------------------------------------------

    def bind_waiting_volumes(self) -> None:
        """Provision WaitForFirstConsumer claims of pods bound without the scheduler."""
        changes = self._waiting_changes.drain()
        if self._first("waiting"):
            suspects = set(self.claim_users.pods())
        else:
            suspects = set()
            for change in changes:
                if change.kind is Pod:
                    if change.new is not None:
                        suspects.add(change.key)
                elif change.kind is Node:
                    if change.new is not None:
                        suspects.update(self.state.pods_on(change.key[1]))
                elif change.kind is PersistentVolumeClaim:
                    suspects |= self.claim_users.of(change.key)
                else:
                    suspects |= self.claim_users.pods()
        for key in sorted(suspects):
            pod = self.state.get(Pod, key)
            if pod is None or not pod.spec.volumes or not pod.spec.node_name:
                continue
            node = self.state.get(Node, ("", pod.spec.node_name))
            if node is not None and is_active(pod):
                self.bind_pod_volumes(pod, node)

    def bind_pod_volumes(self, pod: Pod, node: Node) -> None:
        """Provision the pod's WaitForFirstConsumer claims in the zone of the node it got."""
        for volume in pod.spec.volumes:
            name = claim_name(pod, volume)
            if name is None:
                continue
            claim = self.state.get(PersistentVolumeClaim, (pod.namespace, name))
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
        bound = mutable(claim)
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
            claim = mutable(claim)
            claim.metadata.annotations[BIND_COMPLETED_ANNOTATION] = "yes"
            claim = self.cluster.update(claim)
        if claim.status.phase == "Bound":
            return
        bound = mutable(claim)
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
