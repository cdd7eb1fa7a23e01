"""Events: core/v1 Events (what the recorder writes and reads) translated to and from
events.k8s.io/v1, and read and written through whichever of the two the server serves."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from nodewright.api.core import Event
from nodewright.cluster import ClusterError
from nodewright.cluster.kube.patch import MERGE_PATCH
from nodewright.cluster.kube.routing import object_path
from nodewright.cluster.kube.transport import Transport, model_of, raise_for
from nodewright.cluster.memory import DEFAULT_NAMESPACE

log = logging.getLogger("nodewright.cluster.kube")

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
    "ConsolidationCandidate": "Consolidate",
    "ConsolidationApproved": "Consolidate",
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


class EventsApi:
    """The adapter's Events: through events.k8s.io/v1 when the server serves it (asked once,
    through discovery), translated to and from the core/v1 Events the recorder uses; else
    core/v1, whose repeats are merge patches too (the chart grants ``patch``, not ``update``).
    """

    def __init__(self, transport: Transport, reporting_instance: str) -> None:
        self._api = transport
        #: Who writes the Events (``reportingInstance``): the pod's name.
        self.reporting_instance = reporting_instance
        self._served: str | None = None

    def served(self) -> str:
        """``events.k8s.io/v1`` when the server serves it, else ``v1``."""
        if self._served is None:
            answer = self._api.call("GET", f"/apis/{EVENTS_V1}")
            if answer.status == 404:
                self._served = "v1"
            elif 200 <= answer.status < 300:
                served = {r.get("name") for r in answer.body.get("resources") or []}
                self._served = EVENTS_V1 if "events" in served else "v1"
            else:
                raise ClusterError(
                    f"discovery of {EVENTS_V1}: HTTP {answer.status} {answer.message}"
                )
            log.info("writing Events through %s", self._served)
        return self._served

    def read(self, name: str, namespace: str) -> Event | None:
        answer = self._api.call("GET", events_v1_path(namespace or DEFAULT_NAMESPACE, name))
        if answer.status == 404:
            return None
        raise_for(answer, Event, name, namespace)
        return model_of(Event, event_from_v1(answer.body))

    def list(self, namespace: str | None, labels: Mapping[str, str] | None) -> list[Event]:
        query = {"labelSelector": ",".join(f"{k}={v}" for k, v in labels.items())} if labels else {}
        answer = self._api.call("GET", events_v1_path(namespace), query)
        raise_for(answer, Event, "(list)", namespace or "")
        found = [model_of(Event, event_from_v1(item)) for item in answer.body.get("items") or []]
        return sorted(found, key=lambda e: (e.namespace, e.name))

    def create(self, event: Event) -> Event:
        namespace = event.metadata.namespace or DEFAULT_NAMESPACE
        body = event_to_v1(event, self.reporting_instance)
        body["metadata"]["namespace"] = namespace
        for server_owned in ("uid", "resourceVersion"):
            body["metadata"].pop(server_owned, None)
        answer = self._api.call("POST", events_v1_path(namespace), body=body)
        raise_for(answer, Event, event.name, namespace)
        return model_of(Event, event_from_v1(answer.body))

    def update(self, event: Event) -> Event:
        """A repeat: a merge patch of the series (count and last time), as client-go does."""
        namespace = event.metadata.namespace or DEFAULT_NAMESPACE
        body = event_to_v1(event, self.reporting_instance)
        patch: dict[str, Any] = {"series": body.get("series"), "note": body["note"]}
        answer = self._api.call(
            "PATCH", events_v1_path(namespace, event.name), body=patch, content_type=MERGE_PATCH
        )
        raise_for(answer, Event, event.name, namespace)
        return model_of(Event, event_from_v1(answer.body))

    def update_core(self, event: Event) -> Event:
        """A repeat on core/v1: a merge patch of the count and last time."""
        namespace = event.metadata.namespace or DEFAULT_NAMESPACE
        data = event.to_dict()
        patch = {k: data.get(k) for k in ("count", "lastTimestamp", "message")}
        answer = self._api.call(
            "PATCH", object_path(Event, event.name, namespace), body=patch, content_type=MERGE_PATCH
        )
        raise_for(answer, Event, event.name, namespace)
        return model_of(Event, answer.body)
