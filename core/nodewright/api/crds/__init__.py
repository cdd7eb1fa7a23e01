"""The core's CustomResourceDefinitions (NodePool, NodeClaim, NodeOverlay, CapacityBuffer), as
plain dicts; providers' NodeClass CRDs are generated from their models.

The schemas follow Karpenter's ``karpenter.sh/v1`` CRDs field for field, with the same
printer columns, categories, subresources and CEL rules (``x-kubernetes-validations``), so
manifests and ``kubectl get`` behave as they do with Karpenter. They are built from the
building blocks in :mod:`.schema` and the constants the models use (condition and label names,
enumerations), not copied text: :mod:`.karpenter` holds NodePool and NodeClaim,
:mod:`.nodeoverlay` and :mod:`.capacitybuffer` one CRD each. Providers generate their NodeClass
CRD from their model with :func:`nodewright.plugin.node_class_crd` and hand it to the core
through ``NodeClassKind.crd``.
"""

from __future__ import annotations

from typing import Any

from nodewright.api.crds.capacitybuffer import capacity_buffer_crd
from nodewright.api.crds.karpenter import node_claim_crd, node_pool_crd
from nodewright.api.crds.nodeoverlay import node_overlay_crd


def core_crds() -> list[dict[str, Any]]:
    """The CRDs of the kinds the core serves, in the order ``nodewright crds`` prints them."""
    return [node_pool_crd(), node_claim_crd(), node_overlay_crd(), capacity_buffer_crd()]
