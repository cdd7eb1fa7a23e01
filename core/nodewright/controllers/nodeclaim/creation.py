"""Creating the NodeClaim a solve asks for, as provisioning and disruption's replacements do:
the object (:func:`~nodewright.controllers.state.solverdata.node_claim_for`), the
``nodeclaims_created`` count under the reason it was made for, and the ``created nodeclaim``
line on the caller's logger."""

from __future__ import annotations

import logging

from nodewright import metrics
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.cluster import Cluster
from nodewright.controllers.state.solverdata import node_claim_for
from nodewright.logfields import fields, ref, shortened
from nodewright.scheduling.model import NewNodeClaim
from nodewright.scheduling.resources import format_resources


def create_node_claim(
    cluster: Cluster,
    pool: NodePool,
    new: NewNodeClaim,
    well_known: frozenset[str],
    *,
    reason: str,
    log: logging.Logger,
) -> NodeClaim:
    """Create ``new`` in ``pool``, count it (``reason``: ``provisioned``, or the disruption
    reason a replacement is for) and log it; a :class:`~nodewright.cluster.ClusterError` from
    the create is the caller's, with nothing counted or logged."""
    created = cluster.create(node_claim_for(pool, new, well_known))
    metrics.nodeclaims_created.labels(
        reason, pool.name, "true" if new.min_values_relaxed else "false"
    ).inc()
    log.info(
        "created nodeclaim",
        extra=fields(
            NodePool=ref(pool.name),
            NodeClaim=ref(created.name),
            requests=format_resources(new.requests),
            **{"instance-types": shortened(it.name for it in new.instance_types)},
        ),
    )
    return created
