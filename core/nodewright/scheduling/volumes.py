"""What a pod's persistent volumes demand of a node: where it may run, and how many attachments.

Karpenter reads two facts from a pod's volumes before it picks a node
(``kubernetes-sigs/karpenter:pkg/controllers/provisioning/scheduling/volumetopology.go`` and
``pkg/scheduling/volumeusage.go``):

* **topology**: a bound claim's volume lives where its PersistentVolume's node affinity says;
  an unbound ``WaitForFirstConsumer`` claim may only be provisioned where its StorageClass's
  ``allowedTopologies`` allow. Each ORed term is an alternative; several volumes combine as a
  cross product, dropping combinations no node could satisfy.
* **usage**: each CSI driver attaches a limited number of volumes per node
  (``CSINode.spec.drivers[].allocatable.count``), counted as unique claims per driver.

Everything here is pure: callers pass the claims, volumes and classes they read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from nodewright.api.apps import CSINode, StorageClass
from nodewright.api.core import (
    NodeSelectorRequirement,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Volume,
)
from nodewright.api.labels import HOSTNAME_LABEL
from nodewright.scheduling.requirements import Requirement, RequirementError, Requirements

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
DEFAULT_STORAGE_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
#: Set by the PersistentVolume controller once claim and volume point at each other; until
#: then kube-scheduler treats a claim with a ``volumeName`` as not yet bound.
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"

#: In-tree volume plugins and the CSI drivers that replaced them (``csi-translation-lib``), so
#: a StorageClass that still names the old provisioner counts against the CSI driver's limit.
IN_TREE_DRIVERS: Mapping[str, str] = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}

#: ``driver -> claims`` ("namespace/name"), the shape of both a pod's and a node's usage.
VolumeUsage = Mapping[str, frozenset[str]]


class VolumeProblem(ValueError):
    """Why Karpenter ignores the pod (its message is used in a FailedScheduling event)."""


@dataclass(frozen=True)
class PodVolumes:
    """The node constraints and attachments a pod's volumes bring."""

    #: ORed alternatives of node requirements the pod's volumes impose (PV nodeAffinity terms
    #: for bound claims, hostname terms dropped for local/hostPath PVs; StorageClass
    #: allowedTopologies for unbound WaitForFirstConsumer claims; several volumes -> cross
    #: product, incompatible combinations pruned). Empty tuple: no constraint.
    requirements: tuple[Requirements, ...] = ()
    #: CSI driver -> identities of the volumes the pod mounts (one per PVC, "namespace/claim").
    usage: VolumeUsage = field(default_factory=dict)


# -- claims ----------------------------------------------------------------------------------


def claim_name(pod: Pod, volume: Volume) -> str | None:
    """The PersistentVolumeClaim behind a pod volume, None for volumes without one.

    A generic ephemeral volume's claim is named ``<pod>-<volume>`` by the ephemeral volume
    controller.
    """
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name
    if volume.ephemeral is not None:
        return f"{pod.name}-{volume.name}"
    return None


def ephemeral_claim_template(volume: Volume) -> PersistentVolumeClaim | None:
    """The claim a generic ephemeral volume asks for, as its template describes it."""
    if volume.ephemeral is None or volume.ephemeral.volume_claim_template is None:
        return None
    return PersistentVolumeClaim.model_validate(volume.ephemeral.volume_claim_template)


def default_storage_class(storage_classes: Iterable[StorageClass]) -> StorageClass | None:
    """The class a claim without ``storageClassName`` gets (the API server's default class).

    With several marked as default, the newest wins, then the name, as admission picks.
    """
    defaults = [
        sc
        for sc in storage_classes
        if sc.metadata.annotations.get(DEFAULT_STORAGE_CLASS_ANNOTATION) == "true"
    ]
    if not defaults:
        return None
    return max(
        defaults,
        key=lambda sc: (
            sc.metadata.creation_timestamp.timestamp() if sc.metadata.creation_timestamp else 0.0,
            sc.name,
        ),
    )


def storage_class_name(
    claim: PersistentVolumeClaim, storage_classes: Mapping[str, StorageClass]
) -> str:
    """The claim's class: its own, else the default class for an unset one; "" for none."""
    if claim.spec.storage_class_name is not None:
        return claim.spec.storage_class_name
    default = default_storage_class(storage_classes.values())
    return default.name if default is not None else ""


def csi_driver(provisioner: str) -> str:
    """The CSI driver name for a provisioner, translating in-tree plugin names."""
    return IN_TREE_DRIVERS.get(provisioner, provisioner)


def volume_driver(volume: PersistentVolume) -> str | None:
    """The CSI driver a PersistentVolume is attached by, None for non-CSI volumes."""
    if volume.spec.csi is not None:
        driver = volume.spec.csi.get("driver")
        return str(driver) if driver else None
    if _extra_field(volume.spec, "awsElasticBlockStore", "aws_elastic_block_store") is not None:
        return IN_TREE_DRIVERS["kubernetes.io/aws-ebs"]
    return None


def claim_driver(
    claim: PersistentVolumeClaim,
    volumes: Mapping[str, PersistentVolume],
    storage_classes: Mapping[str, StorageClass],
) -> str | None:
    """The driver a claim's volume counts against (``ResolveDriver``), None when unknown.

    A bound claim counts against its volume's driver; an unbound one against its class's
    provisioner.
    """
    if claim.spec.volume_name:
        volume = volumes.get(claim.spec.volume_name)
        return volume_driver(volume) if volume is not None else None
    storage_class = storage_classes.get(storage_class_name(claim, storage_classes))
    if storage_class is None or not storage_class.provisioner:
        return None
    return csi_driver(storage_class.provisioner)


# -- topology --------------------------------------------------------------------------------


def _extra_field(model: object, *names: str) -> object | None:
    """A Kubernetes field nodewright does not model, kept as an extra by the API models."""
    extra: dict[str, object] = getattr(model, "model_extra", None) or {}
    for name in names:
        if extra.get(name) is not None:
            return extra[name]
    return None


def _requirements(expressions: Iterable[NodeSelectorRequirement], source: str) -> Requirements:
    try:
        return Requirements(Requirement.of(e.key, e.operator, e.values) for e in expressions)
    except RequirementError as error:
        raise VolumeProblem(f"invalid node affinity on {source}, {error}") from error


def _volume_alternatives(volume: PersistentVolume) -> list[Requirements]:
    """Each ORed node-affinity term of a volume as an alternative.

    Local and hostPath volumes name the node they were made on; a pod that moves to a new
    node gets a new volume, so their hostname requirements are dropped (a hostname-only term
    then allows any node).
    """
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return []
    node_local = _extra_field(volume.spec, "local", "hostPath", "host_path") is not None
    alternatives: list[Requirements] = []
    for term in affinity.required.node_selector_terms:
        expressions = list(term.match_expressions)
        if node_local:
            kept = [e for e in expressions if e.key != HOSTNAME_LABEL]
            if expressions and not kept:
                alternatives.append(Requirements())
                continue
            expressions = kept
        if expressions:
            alternatives.append(_requirements(expressions, f'persistentvolume "{volume.name}"'))
    return alternatives


def _class_alternatives(storage_class: StorageClass) -> list[Requirements]:
    """Each ORed ``allowedTopologies`` term of a class as an alternative."""
    alternatives: list[Requirements] = []
    for term in storage_class.allowed_topologies:
        if term.match_label_expressions:
            alternatives.append(
                Requirements(
                    Requirement.of(e.key, "In", e.values) for e in term.match_label_expressions
                )
            )
    return alternatives


def _cross(
    alternatives: list[Requirements] | None, adding: list[Requirements]
) -> list[Requirements]:
    """Combine one more volume's alternatives with those so far.

    Combinations no node could satisfy are dropped; if every combination is impossible,
    Karpenter keeps them all (the solver then finds no node for any of them).
    """
    if alternatives is None:
        return adding
    compatible = [
        existing.add(extra)
        for existing in alternatives
        for extra in adding
        if not existing.intersects(extra)
    ]
    if compatible:
        return compatible
    return [existing.add(extra) for existing in alternatives for extra in adding]


# -- the pod's view --------------------------------------------------------------------------


def _claim_for(
    pod: Pod, volume: Volume, claims: Mapping[str, PersistentVolumeClaim]
) -> PersistentVolumeClaim | None:
    """The claim a volume uses; a not-yet-created ephemeral claim is read from its template."""
    name = claim_name(pod, volume)
    if name is None:
        return None
    claim = claims.get(f"{pod.namespace}/{name}")
    if claim is not None:
        return claim
    template = ephemeral_claim_template(volume)
    if volume.ephemeral is not None:
        if template is None:
            raise VolumeProblem(f'ephemeral volume "{volume.name}" has no volumeClaimTemplate')
        template.metadata.name = name
        template.metadata.namespace = pod.namespace
        return template
    raise VolumeProblem(f'persistentvolumeclaim "{name}" not found')


def _bound_volume(
    claim: PersistentVolumeClaim, volumes: Mapping[str, PersistentVolume]
) -> PersistentVolume:
    name = claim.spec.volume_name or ""
    volume = volumes.get(name)
    if volume is None:
        raise VolumeProblem(
            f'persistentvolumeclaim "{claim.name}" is bound to persistentvolume "{name}", '
            "which does not exist"
        )
    if volume.deleting:
        raise VolumeProblem(f'persistentvolume "{name}" is being deleted')
    if BIND_COMPLETED_ANNOTATION not in claim.metadata.annotations:
        raise VolumeProblem(
            f'persistentvolumeclaim "{claim.name}" is considered unbound because it does not '
            f"contain annotation {BIND_COMPLETED_ANNOTATION}"
        )
    return volume


def _unbound_class(
    claim: PersistentVolumeClaim, storage_classes: Mapping[str, StorageClass]
) -> StorageClass:
    name = storage_class_name(claim, storage_classes)
    if not name:
        raise VolumeProblem(
            f'unbound persistentvolumeclaim "{claim.name}" must define a storage class'
        )
    storage_class = storage_classes.get(name)
    if storage_class is None:
        raise VolumeProblem(
            f'persistentvolumeclaim "{claim.name}" uses storageclass "{name}", which does not exist'
        )
    if storage_class.volume_binding_mode != WAIT_FOR_FIRST_CONSUMER:
        raise VolumeProblem(
            f'persistentvolumeclaim "{claim.name}" with immediate volume binding mode must be bound'
        )
    return storage_class


def pod_volumes(
    pod: Pod,
    claims: Mapping[str, PersistentVolumeClaim],
    volumes: Mapping[str, PersistentVolume],
    storage_classes: Mapping[str, StorageClass],
) -> PodVolumes:
    """Where the pod's volumes let it run and which attachments it needs.

    ``claims`` are keyed ``namespace/name``, ``volumes`` and ``storage_classes`` by name.
    Raises :class:`VolumeProblem` for what makes Karpenter ignore the pod: a missing,
    deleting or ``Lost`` claim; a bound claim whose volume is missing or deleting, or whose
    binding is not complete; an unbound claim without a class, with a missing class, or
    whose class binds ``Immediate`` (such claims must be bound before the pod schedules).
    """
    alternatives: list[Requirements] | None = None
    usage: dict[str, set[str]] = {}
    for volume in pod.spec.volumes:
        claim = _claim_for(pod, volume, claims)
        if claim is None:
            continue
        if claim.deleting:
            raise VolumeProblem(f'persistentvolumeclaim "{claim.name}" is being deleted')
        if claim.status.phase == "Lost":
            raise VolumeProblem(
                f'persistentvolumeclaim "{claim.name}" is bound to non-existent '
                f'persistentvolume "{claim.spec.volume_name or ""}"'
            )
        if claim.spec.volume_name:
            found = _volume_alternatives(_bound_volume(claim, volumes))
        else:
            found = _class_alternatives(_unbound_class(claim, storage_classes))
        if found:
            alternatives = _cross(alternatives, found)
        driver = claim_driver(claim, volumes, storage_classes)
        if driver:
            usage.setdefault(driver, set()).add(f"{pod.namespace}/{claim.name}")
    return PodVolumes(
        requirements=tuple(alternatives or ()),
        usage={driver: frozenset(ids) for driver, ids in sorted(usage.items())},
    )


def pod_volume_usage(
    pod: Pod,
    claims: Mapping[str, PersistentVolumeClaim],
    volumes: Mapping[str, PersistentVolume],
    storage_classes: Mapping[str, StorageClass],
) -> dict[str, frozenset[str]]:
    """The attachments a pod already on a node holds (``GetVolumes``); never raises.

    Claims that vanished or whose driver is unknown are skipped, so one broken claim does not
    hide a node's other attachments.
    """
    usage: dict[str, set[str]] = {}
    for volume in pod.spec.volumes:
        name = claim_name(pod, volume)
        claim = claims.get(f"{pod.namespace}/{name}") if name is not None else None
        if claim is None:
            continue
        driver = claim_driver(claim, volumes, storage_classes)
        if driver:
            usage.setdefault(driver, set()).add(f"{pod.namespace}/{claim.name}")
    return {driver: frozenset(ids) for driver, ids in sorted(usage.items())}


# -- limits ----------------------------------------------------------------------------------


def node_volume_limits(csi_node: CSINode | None) -> dict[str, int]:
    """driver -> allocatable.count (drivers without a count have no limit)."""
    if csi_node is None:
        return {}
    return {
        driver.name: driver.allocatable.count
        for driver in csi_node.spec.drivers
        if driver.allocatable is not None and driver.allocatable.count is not None
    }


def add_usage(*usages: VolumeUsage) -> dict[str, frozenset[str]]:
    """The union of several usages, per driver."""
    total: dict[str, frozenset[str]] = {}
    for usage in usages:
        for driver, ids in usage.items():
            total[driver] = total.get(driver, frozenset()) | ids
    return total
