"""Events: core/v1 Events (what the recorder writes and reads) translated to and from
events.k8s.io/v1."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from nodewright.api.core import Event

EVENTS_V1 = "events.k8s.io/v1"
#: What the Events API calls each of Karpenter's reasons' ``action`` (what was being done).
EVENT_ACTIONS: dict[str, str] = {
    "Nominated": "Nominate",
    "FailedScheduling": "Schedule",
    "NoCompatibleInstanceTypes": "Provision",
    "InsufficientCapacityError": "Launch",
    "NodeClassNotReady": "Launch",
    "NodeClassNotFound": "Validate",
    "LaunchFailed": "Launch",
    "FailedValidation": "Validate",
    "FailedConsistencyCheck": "CheckConsistency",
    "NotReady": "Register",
    "UnregisteredTaintMissing": "Register",
    "Disrupted": "Disrupt",
    "DisruptionBlocked": "Disrupt",
    "DisruptionLaunching": "Disrupt",
    "DisruptionTerminating": "Disrupt",
    "DisruptionWaitingReadiness": "Disrupt",
    "InvalidDoNotDisruptAnnotation": "Disrupt",
    "Unconsolidatable": "Consolidate",
    "ConsolidationRejected": "Consolidate",
    "Evicted": "Evict",
    "FailedDraining": "Drain",
    "AwaitingVolumeDetachment": "Drain",
    "TerminationGracePeriodExpiring": "Terminate",
}
#: The Events API's limits on ``note`` (bytes) and ``action``/``reason`` (characters).
EVENT_NOTE_LIMIT = 1024
EVENT_FIELD_LIMIT = 128


def _micro_time(value: datetime | None) -> str | None:
    """A MicroTime as the Events API writes it."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _truncated(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", "ignore") + "..."


def event_to_v1(event: Event, reporting_instance: str) -> dict[str, Any]:
    """A core/v1 Event (what the recorder writes) as an events.k8s.io/v1 Event."""
    first = event.first_timestamp or event.last_timestamp or datetime.now(UTC)
    last = event.last_timestamp or first
    reason = _truncated(event.reason or "Unknown", EVENT_FIELD_LIMIT)
    body: dict[str, Any] = {
        "apiVersion": EVENTS_V1,
        "kind": "Event",
        "metadata": {
            k: v
            for k, v in event.metadata.to_dict().items()
            if k
            in (
                "name",
                "generateName",
                "namespace",
                "labels",
                "annotations",
                "uid",
                "resourceVersion",
            )
        },
        "eventTime": _micro_time(first),
        "reportingController": event.source.component or "karpenter",
        "reportingInstance": _truncated(reporting_instance, EVENT_FIELD_LIMIT),
        "action": _truncated(EVENT_ACTIONS.get(event.reason, reason), EVENT_FIELD_LIMIT),
        "reason": reason,
        "note": _truncated(event.message, EVENT_NOTE_LIMIT),
        "type": event.type,
        "regarding": event.involved_object.to_dict(),
    }
    if event.count > 1:
        body["series"] = {"count": event.count, "lastObservedTime": _micro_time(last)}
    return body


def event_from_v1(data: Mapping[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event as a core/v1 Event dict (what the recorder reads)."""
    series = data.get("series") or {}
    first = data.get("eventTime") or data.get("deprecatedFirstTimestamp")
    last = series.get("lastObservedTime") or data.get("deprecatedLastTimestamp") or first
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": data.get("metadata") or {},
        "involvedObject": data.get("regarding") or {},
        "reason": data.get("reason") or "",
        "message": data.get("note") or "",
        "type": data.get("type") or "Normal",
        "count": int(series.get("count") or data.get("deprecatedCount") or 1),
        "firstTimestamp": first,
        "lastTimestamp": last,
        "source": {
            "component": data.get("reportingController"),
            "host": data.get("reportingInstance"),
        },
    }


def events_v1_path(namespace: str | None, name: str | None = None) -> str:
    path = f"/apis/{EVENTS_V1}"
    if namespace:
        path += f"/namespaces/{quote(namespace, safe='')}"
    path += "/events"
    if name is not None:
        path += f"/{quote(name, safe='')}"
    return path
