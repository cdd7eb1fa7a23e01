"""Kubelets for simulated cloud instances: they register the Node of a launched NodeClaim.

On a real cluster the kubelet on a new machine registers its Node, with the labels and taints
Karpenter put in the machine's user data. A simulated cluster has no machines, so this plays
that part for every provider that does not create Nodes itself (``ProviderInfo.
registers_nodes``; KWOK does, AWS and Azure do not). It asks the provider for the instance,
so the Node carries what the cloud says (name, labels, capacity), not what nodewright hoped.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from nodewright.api.core import Node, NodeCondition, NodeSpec, NodeStatus, Taint
from nodewright.api.karpenter import CONDITION_LAUNCHED, NodeClaim
from nodewright.api.labels import HOSTNAME_LABEL, UNREGISTERED_TAINT_KEY
from nodewright.api.meta import ObjectMeta, find_condition
from nodewright.clock import Clock
from nodewright.cluster import AlreadyExistsError
from nodewright.cluster.memory import MemoryCluster
from nodewright.plugin.errors import (
    InstanceNotFoundError,
    PluginError,
    ProviderError,
    UnknownNodeClassError,
)
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import Instance
from nodewright.scheduling.resources import format_resources

log = logging.getLogger("nodewright.kubelet")

#: How long a launched instance takes to boot and register its Node. Real EC2 and Azure VMs
#: take 30 to 90 seconds; the simulation takes the short end.
DEFAULT_REGISTRATION_DELAY = timedelta(seconds=30)

#: Instance states in which a machine never registers.
_GONE_STATES = frozenset({"terminating", "terminated"})


class SimulatedKubelets:
    """Registers a Node for each launched NodeClaim whose provider leaves that to kubelets."""

    def __init__(
        self,
        cluster: MemoryCluster,
        host: PluginHost,
        clock: Clock,
        registration_delay: timedelta = DEFAULT_REGISTRATION_DELAY,
    ) -> None:
        self.cluster = cluster
        self.host = host
        self.clock = clock
        self.registration_delay = registration_delay
        #: Provider IDs already registered (or given up on), so each is asked about once.
        self._done: set[str] = set()
        #: Launched NodeClaims whose Node is not registered yet: claim name -> provider ID.
        self._waiting: dict[str, str] = {}
        self._claims = cluster.state.feed(NodeClaim)
        for claim in cluster.state.sorted(NodeClaim):
            self._note(claim)

    def _note(self, claim: NodeClaim) -> None:
        provider_id = claim.status.provider_id
        if provider_id and provider_id not in self._done and not claim.deleting:
            self._waiting[claim.name] = provider_id
        else:
            self._waiting.pop(claim.name, None)

    def reconcile(self) -> datetime | None:
        """Register the Nodes that are due; return when the next one will be."""
        now = self.clock.now()
        wake: datetime | None = None
        state = self.cluster.state
        for change in self._claims.drain():
            if isinstance(change.new, NodeClaim):
                self._note(change.new)
            else:
                self._waiting.pop(change.key[1], None)
        for name in sorted(self._waiting):
            provider_id = self._waiting[name]
            claim = state.get(NodeClaim, ("", name))
            if claim is None or provider_id in self._done:
                del self._waiting[name]
                continue
            if state.node_by_provider_id(provider_id) is not None:
                self._done.add(provider_id)
                del self._waiting[name]
                continue
            provider = self._provider_of(claim)
            if provider is None:
                self._done.add(provider_id)
                del self._waiting[name]
                continue
            launched = find_condition(claim.status.conditions, CONDITION_LAUNCHED)
            since = launched.last_transition_time if launched is not None else None
            due = (since or now) + self.registration_delay
            if due > now:
                wake = due if wake is None else min(wake, due)
                continue
            self._register(claim, provider, provider_id)
            if provider_id in self._done:
                del self._waiting[name]
        return wake

    def _provider_of(self, claim: NodeClaim) -> str | None:
        """The claim's provider name when it relies on kubelets to register; else None."""
        ref = claim.spec.node_class_ref
        try:
            loaded = self.host.provider_for(ref.group, ref.kind)
        except (PluginError, UnknownNodeClassError):
            return None
        if loaded.info is None or loaded.info.registers_nodes:
            return None
        return loaded.info.name

    def _register(self, claim: NodeClaim, provider: str, provider_id: str) -> None:
        try:
            instance = self.host.get(provider, provider_id)
        except InstanceNotFoundError:
            log.info("Instance %s of nodeclaim %s is gone; no node", provider_id, claim.name)
            self._done.add(provider_id)
            return
        except (PluginError, ProviderError) as error:
            # Throttled, or a provider bug: the machine boots anyway; ask again next pass.
            log.warning("Cannot register nodeclaim %s yet: %s", claim.name, error)
            return
        if instance.state in _GONE_STATES:
            self._done.add(provider_id)
            return
        node = node_for(claim, instance, self.clock.now())
        try:
            self.cluster.create(node)
        except AlreadyExistsError:
            log.warning(
                "Node %s already exists; instance %s of nodeclaim %s cannot register",
                node.name,
                provider_id,
                claim.name,
            )
        self._done.add(provider_id)


def node_for(claim: NodeClaim, instance: Instance, now: datetime) -> Node:
    """The Node a kubelet started with Karpenter's user data registers.

    Labels and taints are those the launch put on the kubelet's command line (the
    NodeClaim's, and ``karpenter.sh/unregistered`` so nothing schedules before Karpenter has
    synced the rest); capacity is what the machine reports, plus the extended resources the
    NodeClaim expects that a device plugin would register.
    """
    name = instance.node_name or claim.name
    labels = {**claim.metadata.labels, **instance.labels, HOSTNAME_LABEL: name}
    taints = [
        Taint(key=t.key, value=t.value, effect=t.effect)
        for t in [*claim.spec.taints, *claim.spec.startup_taints]
    ]
    taints.append(Taint(key=UNREGISTERED_TAINT_KEY, effect="NoExecute"))
    capacity = format_resources(instance.capacity) if instance.capacity else claim.status.capacity
    allocatable = (
        format_resources(instance.allocatable) if instance.allocatable else claim.status.allocatable
    )
    # Resources the NodeClaim expects but the machine does not report (a NodeOverlay's
    # extended resources) are what a device plugin on the node would register.
    capacity = {**claim.status.capacity, **capacity}
    allocatable = {**claim.status.allocatable, **allocatable}
    return Node(
        metadata=ObjectMeta(name=name, labels=labels),
        spec=NodeSpec(provider_id=claim.status.provider_id, taints=taints),
        status=NodeStatus(
            capacity=dict(capacity),
            allocatable=dict(allocatable),
            phase="Running",
            conditions=[
                NodeCondition(
                    type="Ready",
                    status="True",
                    reason="KubeletReady",
                    message="kubelet is posting ready status (simulated)",
                    last_heartbeat_time=now,
                    last_transition_time=now,
                )
            ],
        ),
    )
