"""The subset of Kubernetes ``v1`` kinds nodewright reads and writes: Pod, Node, Event,
PersistentVolumeClaim, PersistentVolume, Namespace, and (for the selectors of default topology
spreads) Service and ReplicationController."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from nodewright.api.meta import KubeObject, Model, ObjectMeta, ObjectReference


def _quantities(value: object) -> object:
    """YAML gives ``cpu: 1`` as an int; the API keeps quantities as strings."""
    if isinstance(value, dict):
        return {
            k: (str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v)
            for k, v in value.items()
        }
    return value


class ResourceRequirements(Model):
    requests: dict[str, str] = Field(default_factory=dict)
    limits: dict[str, str] = Field(default_factory=dict)
    #: Names of the pod's ``resourceClaims`` this container uses (Dynamic Resource Allocation).
    claims: list[dict[str, Any]] | None = None

    _normalise = field_validator("requests", "limits", mode="before")(_quantities)


class ContainerPort(Model):
    container_port: int
    host_port: int | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    protocol: str = "TCP"
    name: str | None = None


class Container(Model):
    name: str = ""
    image: str | None = None
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = Field(default_factory=list)
    restart_policy: str | None = None  # "Always" on an init container makes it a sidecar


#: The operators of a label selector's ``matchExpressions``.
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
#: The operators of a node selector requirement: a label selector's and the integer
#: comparisons.
NODE_SELECTOR_OPERATORS = (*LABEL_SELECTOR_OPERATORS, "Gt", "Lt")
#: The effects a taint may have.
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class Taint(Model):
    key: str
    value: str | None = None
    effect: str
    time_added: datetime | None = None


class Toleration(Model):
    key: str | None = None
    operator: str | None = None  # Equal (default) or Exists
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class NodeSelectorRequirement(Model):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class NodeSelectorTerm(Model):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(Model):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class PreferredSchedulingTerm(Model):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(Model):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class LabelSelectorRequirement(Model):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class LabelSelector(Model):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


class PodAffinityTerm(Model):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    namespace_selector: LabelSelector | None = None
    topology_key: str
    match_label_keys: list[str] = Field(default_factory=list)
    mismatch_label_keys: list[str] = Field(default_factory=list)


class WeightedPodAffinityTerm(Model):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(Model):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(
        default_factory=list
    )
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class Affinity(Model):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class TopologySpreadConstraint(Model):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = Field(default_factory=list)


class PersistentVolumeClaimVolumeSource(Model):
    claim_name: str
    read_only: bool | None = None


class EphemeralVolumeSource(Model):
    volume_claim_template: dict[str, object] | None = None


class Volume(Model):
    name: str
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    ephemeral: EphemeralVolumeSource | None = None


class PodResourceClaim(Model):
    """One of a pod's ``resourceClaims``: a claim by name, or one made from a template."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodResourceClaimStatus(Model):
    """The claim kube-controller-manager made for a template entry (None: none needed)."""

    name: str = ""
    resource_claim_name: str | None = None


class PodSpec(Model):
    node_name: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    overhead: dict[str, str] = Field(default_factory=dict)
    priority: int | None = None
    priority_class_name: str | None = None
    scheduler_name: str | None = None
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    volumes: list[Volume] = Field(default_factory=list)
    termination_grace_period_seconds: int | None = None
    restart_policy: str | None = None
    host_network: bool | None = None
    #: Dynamic Resource Allocation claims (``resourceClaims``).
    resource_claims: list[PodResourceClaim] | None = None

    _normalise = field_validator("overhead", mode="before")(_quantities)

    @model_serializer(mode="wrap")
    def _without_empty_overhead(self, handler: SerializerFunctionWrapHandler) -> Any:
        """An API server refuses a pod with an ``overhead`` (even an empty one) that no
        RuntimeClass sets, so an empty one is left out."""
        data = handler(self)
        if isinstance(data, dict) and not data.get("overhead"):
            data.pop("overhead", None)
        return data


class PodCondition(Model):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: datetime | None = None


class PodStatus(Model):
    phase: str | None = None  # Pending, Running, Succeeded, Failed
    conditions: list[PodCondition] = Field(default_factory=list)
    nominated_node_name: str | None = None
    start_time: datetime | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] | None = None


class Pod(KubeObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Pod"

    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    def condition(self, kind: str) -> PodCondition | None:
        for condition in self.status.conditions:
            if condition.type == kind:
                return condition
        return None


class PodTemplateSpec(Model):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


class NodeSpec(Model):
    provider_id: str | None = Field(default=None, alias="providerID")
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool | None = None


class NodeCondition(Model):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_heartbeat_time: datetime | None = None
    last_transition_time: datetime | None = None


class NodeStatus(Model):
    capacity: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, str] = Field(default_factory=dict)
    conditions: list[NodeCondition] = Field(default_factory=list)
    phase: str | None = None

    _normalise = field_validator("capacity", "allocatable", mode="before")(_quantities)


class Node(KubeObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Node"
    NAMESPACED: ClassVar[bool] = False

    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    @property
    def ready(self) -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)


class EventSource(Model):
    component: str | None = None
    host: str | None = None


class Event(KubeObject):
    """A core/v1 Event. ``count`` and the timestamps let repeated events collapse into one."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Event"

    involved_object: ObjectReference = Field(default_factory=ObjectReference)
    reason: str = ""
    message: str = ""
    type: str = "Normal"
    count: int = 1
    first_timestamp: datetime | None = None
    last_timestamp: datetime | None = None
    source: EventSource = Field(default_factory=EventSource)


class Namespace(KubeObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Namespace"
    NAMESPACED: ClassVar[bool] = False


class PersistentVolumeClaimSpec(Model):
    storage_class_name: str | None = None
    volume_name: str | None = None
    access_modes: list[str] = Field(default_factory=list)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)


class PersistentVolumeClaimStatus(Model):
    phase: str | None = None


class PersistentVolumeClaim(KubeObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "PersistentVolumeClaim"

    spec: PersistentVolumeClaimSpec = Field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = Field(default_factory=PersistentVolumeClaimStatus)


class VolumeNodeAffinity(Model):
    required: NodeSelector | None = None


class PersistentVolumeSpec(Model):
    storage_class_name: str | None = None
    capacity: dict[str, str] = Field(default_factory=dict)
    claim_ref: ObjectReference | None = None
    node_affinity: VolumeNodeAffinity | None = None
    csi: dict[str, object] | None = None

    _normalise = field_validator("capacity", mode="before")(_quantities)


class PersistentVolumeStatus(Model):
    phase: str | None = None


class PersistentVolume(KubeObject):
    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "PersistentVolume"
    NAMESPACED: ClassVar[bool] = False

    spec: PersistentVolumeSpec = Field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = Field(default_factory=PersistentVolumeStatus)


class ServiceSpec(Model):
    #: The pods the Service selects; None selects none (an empty one selects every pod).
    selector: dict[str, str] | None = None


class Service(KubeObject):
    """Read only for its selector: kube-scheduler deduces default spread selectors from it."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "Service"

    spec: ServiceSpec = Field(default_factory=ServiceSpec)


class ReplicationControllerSpec(Model):
    replicas: int | None = None
    selector: dict[str, str] | None = None


class ReplicationController(KubeObject):
    """Read only for its selector, as for :class:`Service`."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = "ReplicationController"

    spec: ReplicationControllerSpec = Field(default_factory=ReplicationControllerSpec)
