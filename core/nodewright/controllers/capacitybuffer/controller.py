"""CapacityBuffers (feature gate ``CapacityBuffer``): Karpenter's ``capacitybuffer``
controller, which fills the store of virtual pods (``virtualpods``).

Each pass resolves every buffer's pod shape (its PodTemplate, or the pod template of the
Deployment, ReplicaSet or StatefulSet it names), works out how many chunks it wants and
writes ``status.replicas`` and the ``ReadyForProvisioning`` condition. A ready buffer becomes
that many virtual pods, which provisioning places with the pending pods: where they do not fit
existing capacity, NodeClaims are created for them, and the nodes that hold them are not empty
(emptiness leaves them alone) nor freely consolidated (consolidation simulations place the
virtual pods too). After each provisioning pass the ``Provisioning`` condition says whether
the buffer fits existing capacity (written by the store, which provisioning reports to).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from nodewright.api.apps import Deployment, ReplicaSet, StatefulSet
from nodewright.api.capacitybuffer import (
    BUFFER_NAME_ANNOTATION,
    BUFFER_NAMESPACE_ANNOTATION,
    CONDITION_READY_FOR_PROVISIONING,
    REASON_POD_TEMPLATE_NOT_FOUND,
    REASON_RESOLUTION_FAILED,
    REASON_RESOLVED,
    REASON_SCALABLE_REF_NOT_FOUND,
    VIRTUAL_POD_ANNOTATION,
    CapacityBuffer,
    LocalObjectRef,
    PodTemplate,
)
from nodewright.api.core import (
    Pod,
    PodCondition,
    PodSpec,
    PodStatus,
    PodTemplateSpec,
)
from nodewright.api.meta import ObjectMeta, copy_model, set_condition
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ClusterError
from nodewright.controllers.capacitybuffer.virtualpods import VirtualPods
from nodewright.scheduling.pods import pod_requests
from nodewright.scheduling.resources import parse_resources

#: A buffer is looked at again this often (Karpenter's requeue), so workload scale and
#: template changes reach its virtual pods.
RESYNC = timedelta(seconds=30)
#: Karpenter stamps virtual pods with the lowest priority.
VIRTUAL_POD_PRIORITY = -(2**31)
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Resolution:
    """A buffer's pod shape, or why it has none."""

    template: PodTemplateSpec | None
    reason: str
    message: str
    #: The PodTemplate used (podTemplateRef) and its generation.
    pod_template: str | None = None
    generation: int | None = None
    #: The replicas of the workload a scalableRef names.
    scalable_replicas: int = 0


class CapacityBuffers:
    """Resolves buffers and hands each ready one's virtual pods to the store."""

    name = "capacitybuffer"

    def __init__(self, cluster: Cluster, clock: Clock, virtual_pods: VirtualPods) -> None:
        self._cluster = cluster
        self._clock = clock
        self._virtual_pods = virtual_pods

    @property
    def enabled(self) -> bool:
        return self._virtual_pods.enabled

    def reconcile(self) -> timedelta | None:
        if not self.enabled:
            return None
        virtual: dict[str, list[Pod]] = {}
        buffers = list(self._cluster.state.sorted(CapacityBuffer))
        for stored in buffers:
            buffer = stored
            resolution = self.resolve(buffer)
            replicas = None
            if resolution.template is not None:
                replicas = desired_replicas(buffer, resolution)
            updated = copy_model(buffer)
            status = updated.status
            status.provisioning_strategy = buffer.spec.provisioning_strategy
            if resolution.template is not None:
                status.replicas = replicas
                if resolution.pod_template is not None:
                    status.pod_template_ref = LocalObjectRef(name=resolution.pod_template)
                    status.pod_template_generation = resolution.generation
                else:
                    status.pod_template_ref = None
                    status.pod_template_generation = None
            set_condition(
                status.conditions,
                CONDITION_READY_FOR_PROVISIONING,
                "True" if resolution.template is not None else "False",
                self._clock.now(),
                reason=resolution.reason,
                message=resolution.message,
                observed_generation=buffer.metadata.generation,
            )
            if status != buffer.status:
                try:
                    buffer = self._cluster.update_status(updated)
                except ClusterError:
                    continue  # changed or gone meanwhile: the next pass looks again
            if resolution.template is not None and replicas:
                key = f"{buffer.namespace}/{buffer.name}"
                virtual[key] = virtual_pods(buffer, resolution.template, replicas)
        self._virtual_pods.replace(virtual)
        return RESYNC if buffers else None

    def resync(self) -> None:
        """Nothing to do: every pass looks at every buffer."""

    def resolve(self, buffer: CapacityBuffer) -> Resolution:
        state = self._cluster.state
        namespace = buffer.namespace
        spec = buffer.spec
        if spec.pod_template_ref is not None:
            name = spec.pod_template_ref.name
            template = state.get(PodTemplate, (namespace, name))
            if template is None:
                return Resolution(
                    None, REASON_POD_TEMPLATE_NOT_FOUND, f'podtemplates "{name}" not found'
                )
            return Resolution(
                template.template,
                REASON_RESOLVED,
                "Pod template resolved successfully",
                pod_template=template.name,
                generation=template.metadata.generation or 0,
            )
        ref = spec.scalable_ref
        if ref is None:
            return Resolution(
                None, REASON_RESOLUTION_FAILED, "Neither podTemplateRef nor scalableRef is set"
            )
        if (ref.api_group or "apps") != "apps":
            return Resolution(
                None,
                REASON_RESOLUTION_FAILED,
                f'unsupported scalableRef API group "{ref.api_group}"',
            )
        kinds: dict[str, type[Deployment | ReplicaSet | StatefulSet]] = {
            "Deployment": Deployment,
            "ReplicaSet": ReplicaSet,
            "StatefulSet": StatefulSet,
        }
        kind = kinds.get(ref.kind)
        if kind is None:
            return Resolution(None, REASON_RESOLUTION_FAILED, f'unsupported kind "{ref.kind}"')
        workload = state.get(kind, (namespace, ref.name))
        if workload is None:
            return Resolution(
                None,
                REASON_SCALABLE_REF_NOT_FOUND,
                f'{ref.kind.lower()}s.apps "{ref.name}" not found',
            )
        return Resolution(
            workload.spec.template,
            REASON_RESOLVED,
            "Pod template resolved successfully",
            scalable_replicas=workload.spec.replicas,
        )


def desired_replicas(buffer: CapacityBuffer, resolution: Resolution) -> int:
    """How many chunks: the larger of ``replicas`` and ``percentage`` of the workload's
    replicas, at most as many as fit in ``limits``; ``limits`` alone decide when neither is
    set (Cluster Autoscaler's rules, as Karpenter follows them)."""
    spec = buffer.spec
    candidates: list[int] = []
    if spec.replicas is not None:
        candidates.append(spec.replicas)
    if (
        spec.scalable_ref is not None
        and spec.percentage is not None
        and resolution.scalable_replicas > 0
    ):
        share = math.ceil(resolution.scalable_replicas * spec.percentage / 100)
        candidates.append(max(share, 1) if spec.percentage > 0 else share)
    desired = max(candidates, default=0)
    template = resolution.template
    if spec.limits is not None and template is not None:
        fitting = _fitting_in_limits(spec.limits, template.spec)
        if fitting is not None:
            return min(desired, fitting) if candidates else fitting
    return desired


def _fitting_in_limits(limits: Mapping[str, str], spec: PodSpec) -> int | None:
    """How many pods of this spec fit in ``limits`` (None when no limit names a resource the
    pod requests)."""
    requests = pod_requests(Pod(spec=spec))
    fitting: int | None = None
    for name, limit in parse_resources(dict(limits)).items():
        request = requests.get(name, 0)
        if request <= 0 or name == "pods":
            continue
        count = min(limit // request, INT32_MAX)
        fitting = count if fitting is None else min(fitting, count)
    return fitting


def virtual_pods(buffer: CapacityBuffer, template: PodTemplateSpec, replicas: int) -> list[Pod]:
    """The buffer's placeholder pods, as Karpenter builds them: the template's spec without a
    node name or claim-backed volumes, the lowest priority, and annotations naming the buffer."""
    spec = copy_model(template.spec)
    spec.node_name = None
    spec.priority = VIRTUAL_POD_PRIORITY
    spec.volumes = [
        v for v in spec.volumes if v.persistent_volume_claim is None and v.ephemeral is None
    ]
    return [
        Pod(
            metadata=ObjectMeta(
                name=f"capacity-buffer-{buffer.name}-{index}",
                namespace=buffer.namespace,
                uid=f"{buffer.metadata.uid}-{index}",
                labels=dict(template.metadata.labels),
                annotations={
                    VIRTUAL_POD_ANNOTATION: "true",
                    BUFFER_NAME_ANNOTATION: buffer.name,
                    BUFFER_NAMESPACE_ANNOTATION: buffer.namespace,
                },
                creation_timestamp=buffer.metadata.creation_timestamp,
            ),
            spec=spec if index == 1 else copy_model(spec),
            status=PodStatus(
                phase="Pending",
                conditions=[
                    PodCondition(type="PodScheduled", status="False", reason="Unschedulable")
                ],
            ),
        )
        for index in range(1, replicas + 1)
    ]
