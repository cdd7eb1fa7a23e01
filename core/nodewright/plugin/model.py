"""The data providers exchange with the core. Frozen dataclasses: cheap, hashable, and
impossible for a provider to mutate behind the core's back."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from nodewright.api.labels import CAPACITY_TYPES
from nodewright.cluster.state import Change, ChangeFeed, ClusterState
from nodewright.plugin.crd import node_class_crd
from nodewright.scheduling.dra.devices import (
    AttributeBinding,
    CounterConsumption,
    CounterSet,
    Device,
    DeviceID,
    DynamicResources,
    RequestPolicy,
    ResourceSliceTemplate,
    ValidRange,
)
from nodewright.scheduling.instancetype import (
    InstanceType,
    InstanceTypeOverhead,
    Offering,
    Reservation,
)
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.resources import ResourceList

__all__ = ["Change", "ChangeFeed", "ClusterState"]

if TYPE_CHECKING:
    from nodewright.api.karpenter import NodeClaim, NodeClass
    from nodewright.api.meta import KubeObject


@dataclass(frozen=True)
class NodeClassKind:
    """A NodeClass kind a provider owns, and the model that parses its manifests."""

    group: str
    kind: str
    model: type[NodeClass]
    #: Other apiVersions (e.g. ``karpenter.azure.com/v1alpha2``) the model also accepts.
    extra_versions: tuple[str, ...] = ()
    #: Builds the kind's CustomResourceDefinition (a plain dict, see
    #: :func:`nodewright.plugin.node_class_crd`) for ``nodewright crds`` and the Helm chart,
    #: when it needs more than the defaults (short names, printer columns, served versions).
    #: None: the CRD is generated from ``model`` with the defaults.
    crd: Callable[[], Mapping[str, Any]] | None = None

    def custom_resource_definition(self) -> Mapping[str, Any]:
        """The kind's CRD: ``crd()``, or one generated from ``model``.

        Every NodeClass gets a CRD, so a kind a provider forgot to describe is never silently
        missing from ``nodewright crds``. Raises whatever the builder raises
        (:class:`nodewright.plugin.CrdGenerationError` for a model it cannot describe).
        """
        if self.crd is not None:
            return self.crd()
        return node_class_crd(self.model)


@dataclass(frozen=True)
class ProviderInfo:
    """Who a provider is and what it owns. Returned once, when the host starts."""

    #: Declared name; NodePools are routed to a provider by NodeClass kind, metrics and
    #: errors name the provider by this. Lower-case, unique among loaded providers.
    name: str
    node_classes: tuple[NodeClassKind, ...]
    #: Label domains users may not set (e.g. ``karpenter.kwok.sh``); keys the provider sets
    #: itself must then be listed in ``well_known_labels``.
    restricted_label_domains: frozenset[str] = frozenset()
    #: Labels every instance type of this provider defines
    #: (e.g. ``karpenter.kwok.sh/instance-cpu``).
    well_known_labels: frozenset[str] = frozenset()
    #: How to install the distribution, shown when a NodePool needs it and it is missing.
    install_hint: str = ""
    #: True when the provider creates the Node objects of its instances itself (KWOK). Else
    #: kubelets do: on a real cluster the machine's own, in ``nodewright simulate`` the
    #: simulated kubelet, which registers the Node using :attr:`Instance.node_name`.
    registers_nodes: bool = False


@dataclass(frozen=True)
class LaunchRequest:
    """What the core asks a provider to launch for one NodeClaim.

    ``instance_types`` are the NodeClaim's options, cheapest first, each with only the
    offerings compatible with the NodeClaim's requirements that are available. The provider
    picks one (usually the cheapest) and must honour ``requirements`` and ``labels``.
    """

    node_claim: NodeClaim
    node_class: NodeClass
    instance_types: tuple[InstanceType, ...]
    requirements: Requirements

    @property
    def idempotency_key(self) -> str:
        """The NodeClaim's identity: a launch repeated with this key must not launch twice."""
        return self.node_claim.metadata.uid or self.node_claim.name


@dataclass(frozen=True)
class Instance:
    """A machine the provider runs (or is starting or stopping) for a NodeClaim."""

    provider_id: str
    node_claim: str
    node_pool: str
    node_class: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float
    #: When the instance was launched (timezone-aware); garbage collection leaves an instance
    #: no NodeClaim owns alone for 30 seconds after this.
    created_at: datetime
    #: Labels the node will carry, beyond those the NodeClaim already states.
    labels: Mapping[str, str] = field(default_factory=dict)
    capacity: ResourceList = field(default_factory=dict)
    allocatable: ResourceList = field(default_factory=dict)
    image_id: str = ""
    #: ``pending``, ``running``, ``terminating`` or ``terminated``.
    state: str = "running"
    #: The name the machine's kubelet registers its Node under (EC2: the private DNS name);
    #: empty means the NodeClaim's name.
    node_name: str = ""
    #: Annotations the core writes onto the NodeClaim when the launch returns, such as the
    #: NodeClass hash a provider compares later to tell drift.
    annotations: Mapping[str, str] = field(default_factory=dict)


#: How long an offering a provider reports without capacity stays unavailable by default.
UNAVAILABLE_OFFERING_TTL = timedelta(minutes=3)


@dataclass(frozen=True)
class LaunchResult:
    """A launch that bought an instance, and the offerings found without capacity on the way.

    A fleet request that tries several offerings (EC2 CreateFleet) can launch one and report
    insufficient capacity for others. ``nodewright_launch`` returns this instead of a bare
    :class:`Instance` to say so: the core then stops offering those ``(instance_type, zone,
    capacity_type)`` triples for ``unavailable_ttl``, as it does for the offerings of an
    :class:`~nodewright.plugin.errors.InsufficientCapacityError`, so no later NodeClaim (a
    consolidation replacement included) is sized for them meanwhile.
    """

    instance: Instance
    unavailable_offerings: tuple[tuple[str, str, str], ...] = ()
    unavailable_ttl: timedelta = UNAVAILABLE_OFFERING_TTL


@dataclass(frozen=True)
class RepairPolicy:
    """A node condition that marks a node unhealthy, and how long it is tolerated.

    With the ``NodeRepair`` feature gate on, a Node whose condition ``condition_type`` has
    had ``condition_status`` for longer than ``toleration`` (counted from the condition's
    ``lastTransitionTime``) is replaced: its NodeClaim is deleted and drained at once.
    """

    #: The Node condition's ``type`` (``Ready``, or one an agent posts, such as
    #: ``AcceleratedHardwareReady``).
    condition_type: str
    #: The status that means unhealthy: ``True``, ``False`` or ``Unknown``.
    condition_status: str
    #: How long the condition may hold before the node is replaced (zero: at once).
    toleration: timedelta


@dataclass(frozen=True)
class NodeClassReadiness:
    """Whether a NodeClass can be used to launch nodes, and why not."""

    ready: bool
    reason: str = ""
    message: str = ""
    #: Extra status fields the provider resolved (e.g. subnets, AMIs), written to ``status``.
    status: Mapping[str, Any] = field(default_factory=dict)


class ProviderCluster(Protocol):
    """The slice of the cluster a provider may use (the KWOK provider creates Nodes).

    It goes through the core's cluster adapter, so providers never talk to the API server
    themselves. Objects it returns are the core's shared copies: read them, and ``clone()``
    one before changing it to write it back. ``update`` raises
    :class:`~nodewright.plugin.ConflictError` when the object changed since it was read (read
    it again, or leave it to the next pass); any other failure is a
    :class:`~nodewright.plugin.ClusterError`.
    """

    #: Every object the core's adapter holds, indexed, with change feeds (see
    #: :class:`~nodewright.cluster.state.ClusterState`): a provider that follows the cluster
    #: takes ``state.feed(Node, Pod)`` once and drains it on each pass instead of listing.
    state: ClusterState

    def get(self, kind: type[Any], name: str, namespace: str = "") -> Any: ...

    def list(self, kind: type[Any], namespace: str | None = None) -> list[Any]: ...

    def create(self, obj: KubeObject) -> Any: ...

    def update(self, obj: KubeObject) -> Any: ...

    def update_status(self, obj: KubeObject) -> Any: ...

    def delete(self, kind: type[Any], name: str, namespace: str = "") -> None: ...


class ClockLike(Protocol):
    def now(self) -> datetime: ...


@dataclass(frozen=True)
class ProviderContext:
    """Handed to every provider once, before any other hook but ``provider_info``."""

    #: The cluster, or None when the provider is configured without one (a provider's own
    #: tests): a provider that reads or writes it checks for None first and skips that work.
    #: ``nodewright run`` and ``nodewright simulate`` always hand one over.
    cluster: ProviderCluster | None
    clock: ClockLike
    #: The provider's own settings (``--provider-option kwok.registration-delay=5s`` style).
    options: Mapping[str, str]
    #: The cluster's name, for tags and labels.
    cluster_name: str = "nodewright"
    #: True under ``nodewright run``: ``cluster`` is a real API server, whose own controllers
    #: act on what a provider writes (the node lifecycle controller marks a Node NotReady when
    #: its kubelet's Lease and heartbeat go stale). False in simulations and tests, where no
    #: such controller runs and that upkeep would only cost time.
    live_cluster: bool = False
    #: The run's seed (``nodewright simulate --seed``): whatever a provider draws at random
    #: (injected faults) comes from it, so the same seed repeats the same run.
    seed: int = 0


#: How often provider background work runs when a provider does not say.
DEFAULT_RECONCILE_PERIOD = timedelta(seconds=10)

__all__ = [
    "CAPACITY_TYPES",
    "AttributeBinding",
    "CounterConsumption",
    "CounterSet",
    "Device",
    "DeviceID",
    "DynamicResources",
    "Instance",
    "InstanceType",
    "InstanceTypeOverhead",
    "LaunchRequest",
    "NodeClassKind",
    "NodeClassReadiness",
    "Offering",
    "ProviderCluster",
    "ProviderContext",
    "ProviderInfo",
    "RepairPolicy",
    "RequestPolicy",
    "Reservation",
    "ResourceSliceTemplate",
    "ValidRange",
]
