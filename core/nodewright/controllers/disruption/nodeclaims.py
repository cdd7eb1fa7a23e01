"""Replacement NodeClaims, built from a NodePool exactly as provisioning builds them."""

from __future__ import annotations

from nodewright.api.karpenter import NodeClaim, NodeClaimResources, NodeClaimSpec, NodePool
from nodewright.api.labels import (
    HOSTNAME_LABEL,
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    NODEPOOL_LABEL,
)
from nodewright.api.meta import ObjectMeta, OwnerReference
from nodewright.controllers.templates import (
    node_class_label_for,
    nodepool_hash,
    requirements_to_api,
)
from nodewright.scheduling.model import NewNodeClaim
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import format_resources


def replacement_node_claim(pool: NodePool, new: NewNodeClaim) -> NodeClaim:
    """The NodeClaim to create for ``new``, owned by ``pool``, stamped with its hash."""
    template = pool.spec.template
    class_label, class_name = node_class_label_for(pool)
    requirements = new.requirements
    labels = {
        **{k: v for k, v in requirements.labels().items() if k != HOSTNAME_LABEL},
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
