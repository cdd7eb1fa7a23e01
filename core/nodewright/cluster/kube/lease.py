"""Leases for leader election: live reads and versioned replaces, each bounded by the timeout
the elector gives it, tried once, and never fenced (a renewal is what keeps the fence open)."""

from __future__ import annotations

from nodewright.api.coordination import Lease
from nodewright.cluster.kube.routing import collection_path, object_path
from nodewright.cluster.kube.transport import Transport, model_of, raise_for
from nodewright.cluster.memory import DEFAULT_NAMESPACE


class LeaseClient:
    """What :class:`~nodewright.service.leader.LeaderElector` reads and writes."""

    def __init__(self, transport: Transport) -> None:
        self._api = transport

    def read(self, name: str, namespace: str, *, timeout: float) -> Lease | None:
        answer = self._api.call(
            "GET", object_path(Lease, name, namespace), timeout=timeout, attempts=1
        )
        if answer.status == 404:
            return None
        raise_for(answer, Lease, name, namespace)
        return model_of(Lease, answer.body)

    def create(self, lease: Lease, *, timeout: float) -> Lease:
        namespace = lease.metadata.namespace or DEFAULT_NAMESPACE
        body = lease.to_dict()
        body["metadata"]["namespace"] = namespace
        for server_owned in ("uid", "resourceVersion", "creationTimestamp"):
            body["metadata"].pop(server_owned, None)
        answer = self._api.call(
            "POST",
            collection_path(Lease, namespace),
            body=body,
            timeout=timeout,
            attempts=1,
            fenced=False,
        )
        raise_for(answer, Lease, lease.name, namespace)
        return model_of(Lease, answer.body)

    def update(self, lease: Lease, *, timeout: float) -> Lease:
        """Replace the Lease; a stale resourceVersion is a ConflictError."""
        answer = self._api.call(
            "PUT",
            object_path(Lease, lease.name, lease.namespace),
            body=lease.to_dict(),
            timeout=timeout,
            attempts=1,
            fenced=False,
        )
        raise_for(answer, Lease, lease.name, lease.namespace)
        return model_of(Lease, answer.body)
