"""Node leases, kept as a kubelet keeps them, for the Nodes the provider emulates.

The node lifecycle controller (kube-controller-manager) marks a Node's Ready condition
Unknown, and taints it unreachable, when neither its Lease in ``kube-node-lease`` nor its
Ready heartbeat moved for the grace period (40 to 50 s). A kubelet renews the Lease every
10 s, a quarter of its 40 s duration, and posts its status every 5 minutes while the Lease
holds (every 10 s when it cannot renew it); the emulation does the same.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from nodewright.plugin import (
    ClusterError,
    Lease,
    LeaseSpec,
    Node,
    ObjectMeta,
    OwnerReference,
    ProviderCluster,
)

log = logging.getLogger(__name__)

#: Where kubelets keep their Leases, each named after its Node.
NODE_LEASE_NAMESPACE = "kube-node-lease"
#: A kubelet's ``nodeLeaseDurationSeconds``.
LEASE_DURATION = timedelta(seconds=40)
#: A kubelet renews its Lease after a quarter of its duration.
RENEW_INTERVAL = LEASE_DURATION / 4
#: A kubelet's ``nodeStatusReportFrequency``: how old the Ready heartbeat may grow while the
#: Lease is renewed.
STATUS_REPORT_INTERVAL = timedelta(minutes=5)


class NodeLeases:
    """Each emulated Node's Lease as last written, so a renewal is one write, as a
    kubelet's is; a failed write forgets it and the next renewal reads it again."""

    def __init__(self) -> None:
        self._leases: dict[str, Lease] = {}
        #: Nodes whose last renewal failed (warned about once, until one succeeds).
        self._failing: set[str] = set()

    def renew(self, cluster: ProviderCluster, node: Node, now: datetime) -> bool:
        """Renew ``node``'s Lease when it is due; True when the Lease is current."""
        lease = self._leases.get(node.name)
        renewed = lease.spec.renew_time if lease is not None else None
        if (
            lease is not None
            and renewed is not None
            and now - renewed < RENEW_INTERVAL
            and _owned_by(lease, node)  # not the Lease of an earlier Node of the same name
        ):
            return True
        try:
            if lease is None:
                lease = cluster.get(Lease, node.name, NODE_LEASE_NAMESPACE)
            if lease is None:
                written = cluster.create(_lease_for(node, now))
            else:
                fresh = _lease_for(node, now)
                fresh.metadata = lease.metadata.model_copy(
                    update={"owner_references": fresh.metadata.owner_references}
                )
                written = cluster.update(fresh)
        except ClusterError as error:  # conflict, gone, forbidden: tried again next pass
            self._leases.pop(node.name, None)
            level = logging.DEBUG if node.name in self._failing else logging.WARNING
            self._failing.add(node.name)
            log.log(level, "kwok: cannot renew the Lease of Node %s: %s", node.name, error)
            return False
        self._leases[node.name] = written
        self._failing.discard(node.name)
        return True

    def forget_all_but(self, node_names: set[str]) -> None:
        """Drop the Leases of Nodes no longer emulated (the cluster's garbage collector
        deletes the Leases themselves, through their owner reference)."""
        for name in [name for name in self._leases if name not in node_names]:
            del self._leases[name]
        self._failing &= node_names


def _owned_by(lease: Lease, node: Node) -> bool:
    return any(
        ref.kind == "Node" and ref.uid == node.metadata.uid
        for ref in lease.metadata.owner_references
    )


def _lease_for(node: Node, now: datetime) -> Lease:
    return Lease(
        metadata=ObjectMeta(
            name=node.name,
            namespace=NODE_LEASE_NAMESPACE,
            owner_references=[
                OwnerReference(
                    api_version="v1", kind="Node", name=node.name, uid=node.metadata.uid or ""
                )
            ],
        ),
        spec=LeaseSpec(
            holder_identity=node.name,
            lease_duration_seconds=int(LEASE_DURATION.total_seconds()),
            renew_time=now,
        ),
    )
