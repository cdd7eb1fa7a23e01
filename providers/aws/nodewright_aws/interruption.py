"""EventBridge interruption events read from SQS (Karpenter's interruption controller).

Dispatch is on the envelope's (source, detail-type); unknown events are ignored.
:class:`InterruptionHandler` acts on the result: a spot warning marks the offering unavailable
for 3 minutes, and every action but rebalance deletes the instance's NodeClaim (core then
drains it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nodewright.plugin import CAPACITY_TYPE_SPOT, INSTANCE_TYPE_LABEL, NodeClaim, ProviderContext
from nodewright_aws import labels as L
from nodewright_aws.clients import AWSClients
from nodewright_aws.unavailable import UnavailableOfferings

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


class InterruptionHandler:
    """Reads the interruption queue and deletes the NodeClaims of interrupted instances."""

    def __init__(
        self,
        clients: AWSClients,
        queue_name: str,
        context: ProviderContext | None,
        unavailable: UnavailableOfferings,
        now: Callable[[], datetime],
    ) -> None:
        self.clients = clients
        self.queue_name = queue_name
        self.context = context
        self.unavailable = unavailable
        self.now = now
        #: Every interruption read so far.
        self.seen: list[Interruption] = []
        self._queue_url: str | None = None

    def poll(self) -> list[Interruption]:
        """Read one batch of the queue (no long poll: reconcile must not block)."""
        sqs = self.clients.sqs
        if self._queue_url is None:
            self._queue_url = sqs.get_queue_url(QueueName=self.queue_name)["QueueUrl"]
        messages = sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=20,
            WaitTimeSeconds=0,
            AttributeNames=["SentTimestamp"],
        ).get("Messages", [])
        found: list[Interruption] = []
        for message in messages:
            found.extend(parse_message(message.get("Body", "")))
            sqs.delete_message(QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"])
        return found

    def handle(self, interruptions: Sequence[Interruption]) -> list[str]:
        """Act on interruptions; return the names of the NodeClaims deleted.

        The hook contract has no way to tell the core "replace this instance", so, as
        Karpenter does, the provider deletes the NodeClaim through the cluster handle and
        the core's termination drains the node.
        """
        self.seen.extend(interruptions)
        affected = {
            i.instance_id: i for i in interruptions if i.kind in ACTIONABLE and i.instance_id
        }
        cluster = self.context.cluster if self.context is not None else None
        if not affected or cluster is None:
            return []
        deleted = []
        for claim in cluster.list(NodeClaim):
            provider_id = claim.status.provider_id or ""
            instance_id = provider_id.rsplit("/", 1)[-1]
            event = affected.get(instance_id)
            if event is None or claim.metadata.deletion_timestamp is not None:
                continue
            if event.kind == SPOT_INTERRUPTION:
                zone = provider_id.removeprefix(L.PROVIDER_ID_PREFIX).split("/", 1)[0]
                instance_type = claim.metadata.labels.get(INSTANCE_TYPE_LABEL, "")
                self.unavailable.mark(instance_type, zone, CAPACITY_TYPE_SPOT, self.now())
            log.info(
                "interruption %s for %s: deleting NodeClaim %s", event.kind, instance_id, claim.name
            )
            cluster.delete(NodeClaim, claim.name)
            deleted.append(claim.name)
        return deleted
