"""Disruption: remove or replace nodes that are empty, underutilized, drifted or expired,
within the NodePools' disruption budgets (Karpenter's ``pkg/controllers/disruption`` and
``pkg/controllers/nodeclaim/disruption``). See ``docs/disruption.md``."""

from __future__ import annotations

from nodewright.controllers.disruption.conditions import NodeClaimDisruptionConditions
from nodewright.controllers.disruption.controller import DisruptionController

__all__ = ["DisruptionController", "NodeClaimDisruptionConditions"]
