"""Kubernetes Events with Karpenter's reasons, written through the cluster port.

Repeats of the same event (same object, reason and message) within the dedupe window only
bump ``count`` on the existing Event, like client-go's event correlator.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timedelta

from nodewright.api.core import Event, EventSource
from nodewright.api.meta import KubeObject, ObjectMeta
from nodewright.clock import Clock
from nodewright.cluster import Cluster, ClusterError
from nodewright.cluster.objects import mutable

NORMAL = "Normal"
WARNING = "Warning"
COMPONENT = "karpenter"

log = logging.getLogger("nodewright.events")


class EventRecorder:
    def __init__(self, cluster: Cluster, clock: Clock, dedupe: timedelta = timedelta(minutes=5)):
        self._cluster = cluster
        self._clock = clock
        self._dedupe = dedupe

    def publish(
        self,
        obj: KubeObject,
        reason: str,
        message: str,
        kind: str = NORMAL,
        dedupe: timedelta | None = None,
    ) -> datetime | None:
        """Record an event about ``obj``; never raises (events are best effort).

        Returns when publishing the same event again would next be recorded (None when
        recording failed), so a caller that repeats an event every pass may skip the calls
        that would change nothing.
        """
        now = self._clock.now()
        window = self._dedupe if dedupe is None else dedupe
        digest = hashlib.sha256(
            f"{obj.kind}/{obj.namespace}/{obj.name}/{reason}/{message}".encode()
        ).hexdigest()[:16]
        name = f"{obj.name}.{digest}"
        namespace = obj.metadata.namespace or "default"
        try:
            stored = self._cluster.get(Event, name, namespace)
            if stored is not None:
                last = stored.last_timestamp or stored.first_timestamp
                if last is not None and now - last < window:
                    return last + window
                existing = mutable(stored)
                existing.count += 1
                existing.last_timestamp = now
                self._cluster.update(existing)
                return now + window
            self._cluster.create(
                Event(
                    metadata=ObjectMeta(name=name, namespace=namespace),
                    involved_object=obj.reference(),
                    reason=reason,
                    message=message,
                    type=kind,
                    first_timestamp=now,
                    last_timestamp=now,
                    source=EventSource(component=COMPONENT),
                )
            )
        except ClusterError as error:  # an event must never break a reconcile
            log.warning("could not record event %s on %s: %s", reason, obj.key, error)
            return None
        return now + window
