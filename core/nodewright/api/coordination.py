"""``coordination.k8s.io/v1`` Leases: leader election (nodewright's own) and node heartbeats
(one per Node in ``kube-node-lease``, renewed by its kubelet or the KWOK emulation)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from pydantic import Field

from nodewright.api.meta import KubeObject, Model


class LeaseSpec(Model):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    lease_transitions: int | None = None


class Lease(KubeObject):
    API_VERSION: ClassVar[str] = "coordination.k8s.io/v1"
    KIND: ClassVar[str] = "Lease"

    spec: LeaseSpec = Field(default_factory=LeaseSpec)
