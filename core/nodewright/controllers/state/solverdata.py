"""Translations between API objects and the solver's plain data."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from nodewright.api.karpenter import (
    NodeClaim,
    NodeClaimResources,
    NodeClaimSpec,
    NodePool,
    NodeSelectorRequirementWithMinValues,
)
from nodewright.api.labels import (
    DRA_DRIVERS_ANNOTATION,
    HOSTNAME_LABEL,
    INITIALIZED_LABEL,
    MIN_VALUES_RELAXED_ANNOTATION,
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    NODEPOOL_LABEL,
    REGISTERED_LABEL,
    RESTRICTED_LABELS,
    node_class_label,
)
from nodewright.api.meta import ObjectMeta, OwnerReference
from nodewright.api.nodeoverlay import (
    CAPACITY_OVERLAY_APPLIED_ANNOTATION,
    PRICE_OVERLAY_APPLIED_ANNOTATION,
)
from nodewright.scheduling.instancetype import InstanceType
from nodewright.scheduling.model import NewNodeClaim
from nodewright.scheduling.requirements import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    Requirement,
    Requirements,
)
from nodewright.scheduling.resources import format_resources


def requirements_from_api(items: Iterable[NodeSelectorRequirementWithMinValues]) -> Requirements:
    return Requirements(
        Requirement.of(item.key, item.operator, item.values, item.min_values) for item in items
    )


def requirements_to_api(requirements: Requirements) -> list[NodeSelectorRequirementWithMinValues]:
    """Render requirements as NodeClaim spec entries, one or two per key, sorted by key."""
    result: list[NodeSelectorRequirementWithMinValues] = []
    for key in sorted(requirements):
        req = requirements[key]
        if req.greater_than is not None or req.less_than is not None:
            if req.greater_than is not None:
                result.append(_entry(key, "Gt", [str(req.greater_than)], req.min_values))
            if req.less_than is not None:
                result.append(_entry(key, "Lt", [str(req.less_than)], req.min_values))
            continue
        operator = req.operator
        values = sorted(req.values) if operator in (IN, NOT_IN) else []
        if operator in (EXISTS, DOES_NOT_EXIST) or values:
            result.append(_entry(key, operator, values, req.min_values))
    return result


def _entry(
    key: str, operator: str, values: list[str], min_values: int | None
) -> NodeSelectorRequirementWithMinValues:
    return NodeSelectorRequirementWithMinValues(
        key=key, operator=operator, values=values, min_values=min_values
    )


def node_pool_requirements(pool: NodePool) -> Requirements:
    """The NodePool's requirements, template labels and its own name, as one set."""
    template = pool.spec.template
    labels = {k: v for k, v in template.metadata.labels.items() if k != HOSTNAME_LABEL}
    return requirements_from_api(template.spec.requirements).add(
        Requirements.from_labels({**labels, NODEPOOL_LABEL: pool.name})
    )


def node_class_label_for(pool: NodePool | NodeClaim) -> tuple[str, str]:
    ref = (
        pool.spec.template.spec.node_class_ref
        if isinstance(pool, NodePool)
        else pool.spec.node_class_ref
    )
    return node_class_label(ref.group, ref.kind), ref.name


def nodepool_hash(pool: NodePool) -> str:
    """A hash of the template fields whose change makes existing nodes drifted.

    Requirements are deliberately left out, as in Karpenter: a requirement change is judged
    by compatibility, not by hash. Order of labels, annotations and taints does not matter.
    """
    template = pool.spec.template
    hashed = {
        "labels": sorted(template.metadata.labels.items()),
        "annotations": sorted(template.metadata.annotations.items()),
        "taints": sorted(json.dumps(t.to_dict(), sort_keys=True) for t in template.spec.taints),
        "startupTaints": sorted(
            json.dumps(t.to_dict(), sort_keys=True) for t in template.spec.startup_taints
        ),
        "nodeClassRef": template.spec.node_class_ref.to_dict(),
        "expireAfter": template.spec.expire_after,
        "terminationGracePeriod": template.spec.termination_grace_period,
    }
    digest = hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()
    return str(int(digest[:15], 16))


def overlay_annotations(instance_types: Iterable[InstanceType]) -> dict[str, str]:
    """``karpenter.sh/price-overlay-applied`` / ``capacity-overlay-applied`` = "true" when a
    NodeOverlay changed the price or capacity of any type the NodeClaim may launch."""
    annotations = {}
    for instance_type in instance_types:
        if instance_type.capacity_overlaid:
            annotations[CAPACITY_OVERLAY_APPLIED_ANNOTATION] = "true"
        if any(o.price_overlaid for o in instance_type.offerings):
            annotations[PRICE_OVERLAY_APPLIED_ANNOTATION] = "true"
    return annotations


#: Labels the lifecycle sets on the Node; a requirement on them is never a NodeClaim's label.
_LIFECYCLE_LABELS = frozenset({REGISTERED_LABEL, INITIALIZED_LABEL})


def claim_labels(requirements: Requirements, well_known: frozenset[str]) -> dict[str, str]:
    """The labels a new NodeClaim takes from its requirements: every single-valued ``In``, and
    one allowed value for each other label that is neither well known (``well_known``: the
    instance it launches decides those) nor restricted, as Karpenter resolves them. Without
    them a requirement such as ``example.com/team In [a, b]`` or ``Exists`` would leave the
    node unlabelled, and so drifted from its own NodePool the moment it launched."""
    labels = {}
    for key, requirement in requirements.items():
        if key in RESTRICTED_LABELS:
            continue
        if not requirement.complement and len(requirement.values) == 1:
            labels[key] = next(iter(requirement.values))
        elif key not in well_known and key not in _LIFECYCLE_LABELS:
            value = requirement.any_value()
            if value is not None:
                labels[key] = value
    return labels


def node_claim_for(pool: NodePool, new: NewNodeClaim, well_known: frozenset[str]) -> NodeClaim:
    """The NodeClaim to create for a solver's ``new`` claim: owned by ``pool``, named after it,
    stamped with its hash, labelled from its requirements (:func:`claim_labels`, with every
    provider's ``well_known`` labels left to the instance); provisioning, static pools and
    disruption replacements build them alike."""
    template = pool.spec.template
    class_label, class_name = node_class_label_for(pool)
    requirements = new.requirements
    labels = {
        **claim_labels(requirements, well_known),
        **template.metadata.labels,
        NODEPOOL_LABEL: pool.name,
        class_label: class_name,
    }
    return NodeClaim(
        metadata=ObjectMeta(
            generate_name=f"{pool.name}-",
            labels=labels,
            annotations={
                **template.metadata.annotations,
                NODEPOOL_HASH_ANNOTATION: nodepool_hash(pool),
                NODEPOOL_HASH_VERSION_ANNOTATION: NODEPOOL_HASH_VERSION,
                MIN_VALUES_RELAXED_ANNOTATION: "true" if new.min_values_relaxed else "false",
                **overlay_annotations(new.instance_types),
                **({DRA_DRIVERS_ANNOTATION: ",".join(new.dra_drivers)} if new.dra_drivers else {}),
            },
            owner_references=[
                OwnerReference(
                    api_version=pool.api_version,
                    kind=pool.kind,
                    name=pool.name,
                    uid=pool.metadata.uid or "",
                    block_owner_deletion=True,
                )
            ],
        ),
        spec=NodeClaimSpec(
            requirements=requirements_to_api(
                Requirements(r for k, r in requirements.items() if k != HOSTNAME_LABEL)
            ),
            taints=list(template.spec.taints),
            startup_taints=list(template.spec.startup_taints),
            resources=NodeClaimResources(requests=format_resources(new.requests)),
            node_class_ref=template.spec.node_class_ref.model_copy(),
            expire_after=template.spec.expire_after,
            termination_grace_period=template.spec.termination_grace_period,
        ),
    )
