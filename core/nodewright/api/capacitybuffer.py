"""SIG Autoscaling's ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer, as Karpenter reads it
(feature gate ``CapacityBuffer``): headroom kept ready as virtual pods that provisioning
places like pending ones, so nodes for them exist before real pods need them.

A buffer's pods are shaped by a PodTemplate (``podTemplateRef``) or by the pod template of a
Deployment, ReplicaSet or StatefulSet (``scalableRef``); how many come from ``replicas``,
``percentage`` of the workload's replicas (the larger of the two) and ``limits`` (at most as
many as fit in them; alone, exactly as many).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, field_validator

from nodewright.api.core import PodTemplateSpec, _quantities
from nodewright.api.fielderror import FieldError, FieldErrors
from nodewright.api.meta import Condition, KubeObject, StrictKubeObject, StrictModel
from nodewright.api.names import dns_subdomain_problems
from nodewright.api.quantity import QuantityError, parse_quantity

API_VERSION = "autoscaling.x-k8s.io/v1beta1"

#: The only provisioning strategy: placeholder pods that scale the cluster up.
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"

#: Conditions of the status: the buffer's pod shape was resolved (written by the buffer
#: controller), and whether its pods fit existing capacity (written by provisioning).
CONDITION_READY_FOR_PROVISIONING = "ReadyForProvisioning"
CONDITION_PROVISIONING = "Provisioning"

#: ``ReadyForProvisioning`` reasons.
REASON_RESOLVED = "Resolved"
REASON_POD_TEMPLATE_NOT_FOUND = "PodTemplateNotFound"
REASON_SCALABLE_REF_NOT_FOUND = "ScalableRefNotFound"
REASON_RESOLUTION_FAILED = "ResolutionFailed"
#: ``Provisioning`` reasons.
REASON_FITS_EXISTING_CAPACITY = "FitsExistingCapacity"
REASON_REQUIRES_NEW_CAPACITY = "RequiresNewCapacity"
REASON_NOT_READY_FOR_PROVISIONING = "NotReadyForProvisioning"
REASON_BUFFER_EMPTY = "BufferEmpty"

#: Annotations marking a virtual pod and naming its buffer (Karpenter's keys).
VIRTUAL_POD_ANNOTATION = "karpenter.sh/capacity-buffer-fake-pod"
BUFFER_NAME_ANNOTATION = "karpenter.sh/capacity-buffer-name"
BUFFER_NAMESPACE_ANNOTATION = "karpenter.sh/capacity-buffer-namespace"


class LocalObjectRef(StrictModel):
    name: str = ""


class ScalableRef(StrictModel):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class CapacityBufferSpec(StrictModel):
    provisioning_strategy: str | None = ACTIVE_CAPACITY
    pod_template_ref: LocalObjectRef | None = None
    scalable_ref: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: dict[str, str] | None = None

    _normalise = field_validator("limits", mode="before")(_quantities)


class CapacityBufferStatus(StrictModel):
    pod_template_ref: LocalObjectRef | None = None
    replicas: int | None = None
    pod_template_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)
    provisioning_strategy: str | None = None


class CapacityBuffer(StrictKubeObject):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "CapacityBuffer"

    spec: CapacityBufferSpec = Field(default_factory=CapacityBufferSpec)
    status: CapacityBufferStatus = Field(default_factory=CapacityBufferStatus)


class PodTemplate(KubeObject):
    """``v1`` PodTemplate: the shape of one chunk of a buffer (``podTemplateRef``)."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "PodTemplate"

    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)


INT32_MAX = 2**31 - 1


def validate_capacity_buffer(buffer: CapacityBuffer) -> list[FieldError]:
    """Every rule of the CapacityBuffer CRD (its schema and CEL rules) that ``buffer`` breaks."""
    report = FieldErrors(buffer.KIND, buffer.name)
    report.add_all("metadata.name", dns_subdomain_problems(buffer.name))
    spec = buffer.spec
    if spec.pod_template_ref is not None and not spec.pod_template_ref.name:
        report.add("spec.podTemplateRef.name", "must not be empty")
    if spec.scalable_ref is not None:
        if not spec.scalable_ref.kind:
            report.add("spec.scalableRef.kind", "must not be empty")
        if not spec.scalable_ref.name:
            report.add("spec.scalableRef.name", "must not be empty")
    for path, count in (("spec.replicas", spec.replicas), ("spec.percentage", spec.percentage)):
        if count is not None and not 0 <= count <= INT32_MAX:
            report.add(path, f"must be between 0 and {INT32_MAX}, got {count}")
    for name, limit in sorted((spec.limits or {}).items()):
        try:
            parse_quantity(limit)
        except QuantityError as error:
            report.add(f"spec.limits[{name}]", str(error))
    if spec.pod_template_ref is not None and spec.replicas is None and spec.limits is None:
        report.add("spec", "If podTemplateRef is set, replicas or limits must also be set")
    if spec.pod_template_ref is not None and spec.scalable_ref is not None:
        report.add("spec", "You must define either PodTemplateRef or ScalableRef, but not both")
    return report.errors
