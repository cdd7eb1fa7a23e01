"""Karpenter's ``karpenter.sh/v1`` kinds, NodePool and NodeClaim, with Karpenter's defaults,
and the base class every provider's NodeClass derives from."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, field_validator

from nodewright.api.core import NODE_SELECTOR_OPERATORS, Taint, _quantities
from nodewright.api.meta import Condition, KubeObject, ObjectMeta, StrictKubeObject, StrictModel

API_VERSION = "karpenter.sh/v1"

#: The operators of a Karpenter requirement: a node selector's and the inclusive comparisons.
REQUIREMENT_OPERATORS = (*NODE_SELECTOR_OPERATORS, "Gte", "Lte")
#: The requirement operators that compare integers.
NUMERIC_OPERATORS = frozenset({"Gt", "Lt", "Gte", "Lte"})
#: The values of a NodePool's ``spec.disruption.consolidationPolicy``.
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
#: The disruption reasons a budget may name (``spec.disruption.budgets[].reasons``).
DISRUPTION_REASONS = ("Underutilized", "Empty", "Drifted")


class NodeSelectorRequirementWithMinValues(StrictModel):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)
    min_values: int | None = None

    @field_validator("values", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [
                str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
                for v in value
            ]
        return value


class NodeClassReference(StrictModel):
    group: str = ""
    kind: str = ""
    name: str = ""


class NodeClaimTemplateMetadata(StrictModel):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class NodeClaimTemplateSpec(StrictModel):
    requirements: list[NodeSelectorRequirementWithMinValues] = Field(default_factory=list)
    taints: list[Taint] = Field(default_factory=list)
    startup_taints: list[Taint] = Field(default_factory=list)
    node_class_ref: NodeClassReference = Field(default_factory=NodeClassReference)
    expire_after: str = "720h"
    termination_grace_period: str | None = None


class NodeClaimTemplate(StrictModel):
    metadata: NodeClaimTemplateMetadata = Field(default_factory=NodeClaimTemplateMetadata)
    spec: NodeClaimTemplateSpec = Field(default_factory=NodeClaimTemplateSpec)


class Budget(StrictModel):
    nodes: str = "10%"
    schedule: str | None = None
    duration: str | None = None
    reasons: list[str] | None = None

    @field_validator("nodes", mode="before")
    @classmethod
    def _int_to_str(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class Disruption(StrictModel):
    consolidation_policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after: str = "0s"
    budgets: list[Budget] = Field(default_factory=lambda: [Budget(nodes="10%")])


class NodePoolSpec(StrictModel):
    template: NodeClaimTemplate = Field(default_factory=NodeClaimTemplate)
    disruption: Disruption = Field(default_factory=Disruption)
    limits: dict[str, str] = Field(default_factory=dict)
    weight: int | None = None
    replicas: int | None = None

    _normalise = field_validator("limits", mode="before")(_quantities)


class NodePoolStatus(StrictModel):
    resources: dict[str, str] = Field(default_factory=dict)
    nodes: int = 0
    node_class_observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)


class NodePool(StrictKubeObject):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "NodePool"
    NAMESPACED: ClassVar[bool] = False

    spec: NodePoolSpec = Field(default_factory=NodePoolSpec)
    status: NodePoolStatus = Field(default_factory=NodePoolStatus)


class NodeClaimResources(StrictModel):
    requests: dict[str, str] = Field(default_factory=dict)

    _normalise = field_validator("requests", mode="before")(_quantities)


class NodeClaimSpec(StrictModel):
    requirements: list[NodeSelectorRequirementWithMinValues] = Field(default_factory=list)
    taints: list[Taint] = Field(default_factory=list)
    startup_taints: list[Taint] = Field(default_factory=list)
    resources: NodeClaimResources = Field(default_factory=NodeClaimResources)
    node_class_ref: NodeClassReference = Field(default_factory=NodeClassReference)
    expire_after: str = "720h"
    termination_grace_period: str | None = None


class NodeClaimStatus(StrictModel):
    node_name: str | None = None
    provider_id: str | None = Field(default=None, alias="providerID")
    image_id: str | None = Field(default=None, alias="imageID")
    capacity: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, str] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)
    last_pod_event_time: datetime | None = None

    _normalise = field_validator("capacity", "allocatable", mode="before")(_quantities)


class NodeClaim(StrictKubeObject):
    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "NodeClaim"
    NAMESPACED: ClassVar[bool] = False

    spec: NodeClaimSpec = Field(default_factory=NodeClaimSpec)
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)


class NodeClassStatus(StrictModel):
    model_config = ConfigDict(extra="allow")

    conditions: list[Condition] = Field(default_factory=list)


class NodeClass(StrictKubeObject):
    """Base for provider NodeClasses (KWOKNodeClass, EC2NodeClass, AKSNodeClass).

    A provider subclasses it with its own ``spec`` model and declares ``API_VERSION``,
    ``KIND`` and ``NAMESPACED = False``. The core reads only ``metadata`` and the ``Ready``
    condition in ``status``.
    """

    NAMESPACED: ClassVar[bool] = False

    status: NodeClassStatus = Field(default_factory=NodeClassStatus)

    @classmethod
    def group(cls) -> str:
        return cls.API_VERSION.split("/", 1)[0]


# Condition types
CONDITION_READY = "Ready"
CONDITION_LAUNCHED = "Launched"
CONDITION_REGISTERED = "Registered"
CONDITION_INITIALIZED = "Initialized"
CONDITION_VALIDATION_SUCCEEDED = "ValidationSucceeded"
CONDITION_NODECLASS_READY = "NodeClassReady"
#: Not part of a NodePool's readiness: False when its recent NodeClaims fail to launch or register.
CONDITION_NODE_REGISTRATION_HEALTHY = "NodeRegistrationHealthy"
CONDITION_CONSOLIDATABLE = "Consolidatable"
CONDITION_DRIFTED = "Drifted"
CONDITION_DRAINED = "Drained"
CONDITION_INSTANCE_TERMINATING = "InstanceTerminating"
#: Set on a NodeClaim while a disruption command holds it.
CONDITION_DISRUPTION_REASON = "DisruptionReason"
#: Whether the NodeClaim and its Node agree (the consistency checks).
CONDITION_CONSISTENT_STATE_FOUND = "ConsistentStateFound"


__all__ = [
    "KubeObject",
    "NodeClaim",
    "NodeClass",
    "NodePool",
    "ObjectMeta",
]
