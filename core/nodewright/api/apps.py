"""Workload kinds that own pods: Deployment, ReplicaSet, StatefulSet, DaemonSet, Job;
plus PodDisruptionBudget, StorageClass, CSINode and VolumeAttachment, which scheduling and
draining read."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from nodewright.api.core import (
    LabelSelector,
    NodeSelectorRequirement,
    PersistentVolumeClaim,
    PodTemplateSpec,
)
from nodewright.api.meta import KubeObject, Model


class RollingUpdate(Model):
    max_surge: int | str | None = None
    max_unavailable: int | str | None = None


class DeploymentStrategy(Model):
    """Read only to refuse what the API server refuses: the simulator replaces pods itself."""

    type: str | None = None
    rolling_update: RollingUpdate | None = None


class DeploymentSpec(Model):
    replicas: int = 1
    selector: LabelSelector = Field(default_factory=LabelSelector)
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    strategy: DeploymentStrategy | None = None


class WorkloadStatus(Model):
    replicas: int = 0
    ready_replicas: int = 0


class Deployment(KubeObject):
    API_VERSION: ClassVar[str] = "apps/v1"
    KIND: ClassVar[str] = "Deployment"

    spec: DeploymentSpec = Field(default_factory=DeploymentSpec)
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)


class ReplicaSet(KubeObject):
    API_VERSION: ClassVar[str] = "apps/v1"
    KIND: ClassVar[str] = "ReplicaSet"

    spec: DeploymentSpec = Field(default_factory=DeploymentSpec)
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)


class StatefulSetSpec(Model):
    replicas: int = 1
    selector: LabelSelector = Field(default_factory=LabelSelector)
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    service_name: str | None = None
    volume_claim_templates: list[PersistentVolumeClaim] = Field(default_factory=list)
    pod_management_policy: str | None = None


class StatefulSet(KubeObject):
    API_VERSION: ClassVar[str] = "apps/v1"
    KIND: ClassVar[str] = "StatefulSet"

    spec: StatefulSetSpec = Field(default_factory=StatefulSetSpec)
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)


class DaemonSetSpec(Model):
    selector: LabelSelector = Field(default_factory=LabelSelector)
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class DaemonSet(KubeObject):
    API_VERSION: ClassVar[str] = "apps/v1"
    KIND: ClassVar[str] = "DaemonSet"

    spec: DaemonSetSpec = Field(default_factory=DaemonSetSpec)
    status: WorkloadStatus = Field(default_factory=WorkloadStatus)


class JobSpec(Model):
    parallelism: int = 1
    completions: int | None = None
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


class Job(KubeObject):
    API_VERSION: ClassVar[str] = "batch/v1"
    KIND: ClassVar[str] = "Job"

    spec: JobSpec = Field(default_factory=JobSpec)


class PodDisruptionBudgetSpec(Model):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(Model):
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0


class PodDisruptionBudget(KubeObject):
    API_VERSION: ClassVar[str] = "policy/v1"
    KIND: ClassVar[str] = "PodDisruptionBudget"

    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = Field(default_factory=PodDisruptionBudgetStatus)


class TopologySelectorLabelRequirement(Model):
    key: str
    values: list[str] = Field(default_factory=list)


class TopologySelectorTerm(Model):
    match_label_expressions: list[TopologySelectorLabelRequirement] = Field(default_factory=list)


class StorageClass(KubeObject):
    API_VERSION: ClassVar[str] = "storage.k8s.io/v1"
    KIND: ClassVar[str] = "StorageClass"
    NAMESPACED: ClassVar[bool] = False

    provisioner: str = ""
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] = Field(default_factory=list)
    parameters: dict[str, str] = Field(default_factory=dict)


class CSINodeDriverAllocatable(Model):
    count: int | None = None


class CSINodeDriver(Model):
    name: str
    node_id: str = Field(default="", alias="nodeID")
    allocatable: CSINodeDriverAllocatable | None = None
    topology_keys: list[str] = Field(default_factory=list)


class CSINodeSpec(Model):
    drivers: list[CSINodeDriver] = Field(default_factory=list)


class CSINode(KubeObject):
    API_VERSION: ClassVar[str] = "storage.k8s.io/v1"
    KIND: ClassVar[str] = "CSINode"
    NAMESPACED: ClassVar[bool] = False

    spec: CSINodeSpec = Field(default_factory=CSINodeSpec)


class VolumeAttachmentSource(Model):
    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(Model):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = Field(default_factory=VolumeAttachmentSource)


class VolumeAttachmentStatus(Model):
    attached: bool = False


class VolumeAttachment(KubeObject):
    """A volume attached to a node; termination waits for these to go before the instance."""

    API_VERSION: ClassVar[str] = "storage.k8s.io/v1"
    KIND: ClassVar[str] = "VolumeAttachment"
    NAMESPACED: ClassVar[bool] = False

    spec: VolumeAttachmentSpec = Field(default_factory=VolumeAttachmentSpec)
    status: VolumeAttachmentStatus = Field(default_factory=VolumeAttachmentStatus)


__all__ = [
    "CSINode",
    "DaemonSet",
    "Deployment",
    "Job",
    "NodeSelectorRequirement",
    "PodDisruptionBudget",
    "ReplicaSet",
    "StatefulSet",
    "StorageClass",
    "VolumeAttachment",
]
