"""The ``aksnodeclasses.karpenter.azure.com`` CustomResourceDefinition.

Shaped as Karpenter Azure's: cluster-scoped, short names ``aksnc``/``aksncs``, categories
``karpenter`` and ``nap``, printer columns Ready, Age and (wide) ImageFamily, and two versions
with one schema: ``v1beta1`` (storage) and ``v1alpha2`` (served, deprecated). The schema and
its CEL rules are generated from the AKSNodeClass model (:mod:`nodewright_azure.nodeclass`),
where each rule is declared beside the field it checks.
"""

from __future__ import annotations

from typing import Any

from nodewright.plugin import AGE_COLUMN, ServedVersion, column, node_class_crd
from nodewright_azure.nodeclass import API_VERSION_V1ALPHA2, AKSNodeClass

PLURAL = "aksnodeclasses"
SHORT_NAMES = ("aksnc", "aksncs")
CATEGORIES = ("karpenter", "nap")
DEPRECATION_WARNING = "use v1beta1.AKSNodeClass instead"

#: Karpenter Azure's Ready column quotes the condition type with single quotes.
_READY_COLUMN = column("Ready", ".status.conditions[?(@.type=='Ready')].status")


def aks_node_class_crd() -> dict[str, Any]:
    """The CRD: ``v1beta1`` (storage) first, then the deprecated ``v1alpha2``."""
    return node_class_crd(
        AKSNodeClass,
        plural=PLURAL,
        short_names=SHORT_NAMES,
        categories=CATEGORIES,
        columns=[
            _READY_COLUMN,
            AGE_COLUMN,
            column("ImageFamily", ".spec.imageFamily", priority=1),
        ],
        served_versions=[ServedVersion(API_VERSION_V1ALPHA2.split("/", 1)[1], DEPRECATION_WARNING)],
    )
