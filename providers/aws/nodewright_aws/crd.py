"""The ``ec2nodeclasses.karpenter.k8s.aws`` CustomResourceDefinition.

Shaped as Karpenter's AWS provider ships it (v1.14): cluster-scoped, short names
``ec2nc``/``ec2ncs``, category ``karpenter``, printer columns Ready, Age and (wide) Role, one
served and stored version ``v1``. The schema and its CEL rules are generated from the
EC2NodeClass model (:mod:`nodewright_aws.nodeclass`), where each rule is declared beside the
field it checks.
"""

from __future__ import annotations

from typing import Any

from nodewright.plugin import AGE_COLUMN, READY_COLUMN, column, node_class_crd
from nodewright_aws.nodeclass import EC2NodeClass

PLURAL = "ec2nodeclasses"
SHORT_NAMES = ("ec2nc", "ec2ncs")


def ec2_node_class_crd() -> dict[str, Any]:
    return node_class_crd(
        EC2NodeClass,
        plural=PLURAL,
        short_names=SHORT_NAMES,
        columns=[READY_COLUMN, AGE_COLUMN, column("Role", ".spec.role", priority=1)],
    )
