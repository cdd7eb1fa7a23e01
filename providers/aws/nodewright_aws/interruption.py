"""EventBridge interruption events read from SQS (Karpenter's interruption controller).

Dispatch is on the envelope's (source, detail-type); unknown events are ignored. The
provider acts on the result: a spot warning marks the offering unavailable for 3 minutes,
and every action but rebalance deletes the instance's NodeClaim (core then drains it).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

SPOT_INTERRUPTION = "SpotInterrupted"
REBALANCE = "RebalanceRecommendation"
SCHEDULED_CHANGE = "ScheduledChange"
STATE_CHANGE = "InstanceStateChange"
#: Kinds that replace the NodeClaim ahead of time (rebalance only informs).
ACTIONABLE = frozenset({SPOT_INTERRUPTION, SCHEDULED_CHANGE, STATE_CHANGE})
_STOPPING_STATES = frozenset({"stopping", "stopped", "shutting-down", "terminated"})


@dataclass(frozen=True)
class Interruption:
    kind: str
    instance_id: str
    detail: str = ""


def parse_message(body: str) -> list[Interruption]:
    """The interruptions one SQS message body carries; [] for anything else."""
    try:
        event: dict[str, Any] = json.loads(body)
        source = event.get("source")
        detail_type = event.get("detail-type")
        detail: dict[str, Any] = event.get("detail") or {}
    except (ValueError, AttributeError):
        log.warning("ignoring an interruption message that is not an EventBridge event")
        return []
    if source == "aws.ec2" and detail_type == "EC2 Spot Instance Interruption Warning":
        return [
            Interruption(
                SPOT_INTERRUPTION, detail.get("instance-id", ""), detail.get("instance-action", "")
            )
        ]
    if source == "aws.ec2" and detail_type == "EC2 Instance Rebalance Recommendation":
        return [Interruption(REBALANCE, detail.get("instance-id", ""))]
    if source == "aws.ec2" and detail_type == "EC2 Instance State-change Notification":
        state = detail.get("state", "")
        if state in _STOPPING_STATES:
            return [Interruption(STATE_CHANGE, detail.get("instance-id", ""), state)]
        return []
    if (
        source == "aws.health"
        and detail_type == "AWS Health Event"
        and detail.get("service") == "EC2"
        and detail.get("eventTypeCategory") == "scheduledChange"
    ):
        return [
            Interruption(
                SCHEDULED_CHANGE, entity.get("entityValue", ""), detail.get("eventTypeCode", "")
            )
            for entity in detail.get("affectedEntities", [])
            if entity.get("entityValue", "").startswith("i-")
        ]
    return []
