"""An in-memory provider for tests: records every call, fails on request, launches nothing.

Modelled on Karpenter's fake cloud provider (``pkg/cloudprovider/fake``): the same default
catalog (:mod:`nodewright.testing.catalog`), so scenarios from Karpenter's test suites read
the same here, plus error injection and a ``reset()`` for reuse between tests.

    provider = FakeProvider()
    host = PluginHost.load(entry_points=False, plugins={"fake": provider})
    provider.insufficient_capacity.add(("small-instance-type", "test-zone-1", "spot"))
    provider.next_error("launch", TemporaryProviderError("throttled"))
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from pydantic import Field

from nodewright.api.karpenter import NodeClaim, NodeClass
from nodewright.api.labels import CAPACITY_TYPE_LABEL, ZONE_LABEL
from nodewright.api.meta import ObjectMeta, StrictModel
from nodewright.clock import SimulatedClock
from nodewright.plugin import (
    Instance,
    InstanceNotFoundError,
    InstanceType,
    InsufficientCapacityError,
    LaunchError,
    LaunchRequest,
    NodeClassKind,
    NodeClassNotReadyError,
    NodeClassReadiness,
    Offering,
    ProviderContext,
    ProviderInfo,
    hookimpl,
)
from nodewright.plugin.model import ClockLike
from nodewright.testing.catalog import (
    CPU_LABEL,
    GROUP,
    SIZE_LABEL,
    SPECIAL_LABEL,
    default_instance_types,
)

API_VERSION = f"{GROUP}/v1"
DEFAULT_IMAGE = "fake-image-1"


class FakeNodeClassSpec(StrictModel):
    #: The image new instances get; changing it makes running instances drift.
    image_id: str = DEFAULT_IMAGE
    tags: dict[str, str] = Field(default_factory=dict)


class FakeNodeClass(NodeClass):
    """The FakeProvider's NodeClass: ``apiVersion: testing.nodewright.dev/v1``."""

    API_VERSION: ClassVar[str] = API_VERSION
    KIND: ClassVar[str] = "FakeNodeClass"

    spec: FakeNodeClassSpec = Field(default_factory=FakeNodeClassSpec)


class FakeProvider:
    """A provider plugin with an in-memory instance table.

    Everything a test may want to steer is a plain attribute: ``instance_types``,
    ``insufficient_capacity`` (``(type, zone, capacity type)`` triples with no capacity),
    ``allowed_launches`` (launches beyond it fail), ``node_class_ready``, ``drifted``
    (NodeClaim names reported as drifted), ``reconcile_period``, ``extra_node_labels``,
    ``launch_annotations`` (written onto each launched NodeClaim) and ``node_name_prefix``
    (when set, instances register Nodes named ``<prefix><serial>``, not after the NodeClaim).
    """

    def __init__(
        self,
        name: str = "fake",
        instance_types: Sequence[InstanceType] | None = None,
        *,
        clock: ClockLike | None = None,
    ) -> None:
        self.name = name
        self._initial_types = list(instance_types) if instance_types is not None else None
        self._clock: ClockLike = clock or SimulatedClock()
        self.context: ProviderContext | None = None
        self.reset()

    def reset(self) -> None:
        """Forget instances, calls and injected behaviour; restore the initial catalog."""
        self.instance_types: list[InstanceType] = (
            list(self._initial_types)
            if self._initial_types is not None
            else default_instance_types()
        )
        self.instances: dict[str, Instance] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.insufficient_capacity: set[tuple[str, str, str]] = set()
        self.allowed_launches: int | None = None
        self.node_class_ready = True
        self.drifted: dict[str, str] = {}
        self.reconcile_period: timedelta | None = None
        self.extra_node_labels: dict[str, str] = {}
        self.launch_annotations: dict[str, str] = {}
        self.node_name_prefix = ""
        self._errors: dict[str, list[BaseException]] = {}
        self._launched = 0
        self._launch_keys: dict[str, str] = {}
        self._serial = 0

    # -- steering --------------------------------------------------------------------------

    def next_error(self, hook: str, error: BaseException) -> None:
        """Make the next call of ``hook`` (``"launch"`` or ``"nodewright_launch"``) raise
        ``error``; several queued errors are raised one per call, in order."""
        self._errors.setdefault(hook.removeprefix("nodewright_"), []).append(error)

    def calls_to(self, hook: str) -> list[dict[str, Any]]:
        """The arguments of every call of ``hook``, oldest first."""
        short = hook.removeprefix("nodewright_")
        return [arguments for name, arguments in self.calls if name == short]

    @property
    def launch_calls(self) -> list[LaunchRequest]:
        return [call["request"] for call in self.calls_to("launch")]

    @property
    def delete_calls(self) -> list[str]:
        return [call["provider_id"] for call in self.calls_to("delete")]

    @property
    def get_calls(self) -> list[str]:
        return [call["provider_id"] for call in self.calls_to("get")]

    def _enter(self, hook: str, **arguments: Any) -> None:
        self.calls.append((hook, arguments))
        queued = self._errors.get(hook)
        if queued:
            raise queued.pop(0)

    def _now(self) -> datetime:
        return self._clock.now()

    # -- hooks -----------------------------------------------------------------------------

    @hookimpl
    def nodewright_provider_info(self) -> ProviderInfo:
        return ProviderInfo(
            name=self.name,
            node_classes=(NodeClassKind(GROUP, FakeNodeClass.KIND, FakeNodeClass),),
            restricted_label_domains=frozenset({GROUP}),
            well_known_labels=frozenset({SIZE_LABEL, SPECIAL_LABEL, CPU_LABEL}),
            install_hint="it ships with nodewright: nodewright.testing.FakeProvider",
        )

    @hookimpl
    def nodewright_configure(self, context: ProviderContext) -> None:
        self._enter("configure", context=context)
        self.context = context
        self._clock = context.clock

    @hookimpl
    def nodewright_node_class_status(self, node_class: NodeClass) -> NodeClassReadiness:
        self._enter("node_class_status", node_class=node_class)
        if not self.node_class_ready:
            return NodeClassReadiness(False, "NotReady", "the fake NodeClass is set not ready")
        image = node_class.spec.image_id if isinstance(node_class, FakeNodeClass) else ""
        return NodeClassReadiness(True, status={"imageID": image} if image else {})

    @hookimpl
    def nodewright_instance_types(self, node_class: NodeClass) -> list[InstanceType]:
        self._enter("instance_types", node_class=node_class)
        # Offerings come from nodewright_offerings, as a real provider's prices would.
        return [
            InstanceType(
                t.name,
                t.requirements,
                t.capacity,
                t.overhead,
                dynamic_resources=t.dynamic_resources,
            )
            for t in self.instance_types
        ]

    @hookimpl
    def nodewright_offerings(
        self, node_class: NodeClass, instance_types: Sequence[InstanceType]
    ) -> dict[str, tuple[Offering, ...]]:
        self._enter("offerings", node_class=node_class, instance_types=instance_types)
        catalog = {t.name: t.offerings for t in self.instance_types}
        return {t.name: catalog[t.name] for t in instance_types if t.name in catalog}

    @hookimpl
    def nodewright_launch(self, request: LaunchRequest) -> Instance:
        self._enter("launch", request=request)
        existing = self.instances.get(self._launch_keys.get(request.idempotency_key, ""))
        if existing is not None:
            return existing
        if self.allowed_launches is not None and self._launched >= self.allowed_launches:
            raise LaunchError(
                "AllowedLaunchesExceeded",
                f"the fake provider allows {self.allowed_launches} launches",
            )
        if not self.node_class_ready:
            raise NodeClassNotReadyError("the fake NodeClass is set not ready")
        choice, exhausted = self._choose(request)
        if choice is None:
            raise InsufficientCapacityError(
                f"no offering satisfies the requirements of NodeClaim {request.node_claim.name!r}",
                offerings=exhausted,
            )
        instance_type, offering = choice
        self._launched += 1
        self._serial += 1
        provider_id = f"{self.name}:///{offering.zone}/{self.name}-{self._serial:05d}"
        image = (
            request.node_class.spec.image_id
            if isinstance(request.node_class, FakeNodeClass)
            else DEFAULT_IMAGE
        )
        instance = Instance(
            provider_id=provider_id,
            node_claim=request.node_claim.name,
            node_pool=request.node_claim.metadata.labels.get("karpenter.sh/nodepool", ""),
            node_class=request.node_class.name,
            instance_type=instance_type.name,
            zone=offering.zone,
            capacity_type=offering.capacity_type,
            price=offering.price,
            created_at=self._now(),
            labels={
                **instance_type.requirements.labels(),
                **offering.labels,
                ZONE_LABEL: offering.zone,
                CAPACITY_TYPE_LABEL: offering.capacity_type,
            },
            capacity=dict(instance_type.capacity),
            allocatable=instance_type.allocatable(),
            image_id=image,
            node_name=f"{self.node_name_prefix}{self._serial}" if self.node_name_prefix else "",
            annotations=dict(self.launch_annotations),
        )
        self.instances[provider_id] = instance
        self._launch_keys[request.idempotency_key] = provider_id
        return instance

    def _choose(
        self, request: LaunchRequest
    ) -> tuple[tuple[InstanceType, Offering] | None, list[tuple[str, str, str]]]:
        """The cheapest offering that satisfies the request and has capacity, and the
        compatible offerings that had none."""
        exhausted: list[tuple[str, str, str]] = []
        best: tuple[InstanceType, Offering] | None = None
        for instance_type in request.instance_types:
            if request.requirements.intersects(instance_type.requirements):
                continue
            for offering in instance_type.offerings:
                if not offering.available or request.requirements.intersects(
                    offering.requirements()
                ):
                    continue
                triple = (instance_type.name, offering.zone, offering.capacity_type)
                if triple in self.insufficient_capacity:
                    exhausted.append(triple)
                    continue
                if best is None or offering.price < best[1].price:
                    best = (instance_type, offering)
        return best, exhausted

    @hookimpl
    def nodewright_get(self, provider_id: str) -> Instance:
        self._enter("get", provider_id=provider_id)
        instance = self.instances.get(provider_id)
        if instance is None:
            raise InstanceNotFoundError(f"no fake instance {provider_id!r}")
        return instance

    @hookimpl
    def nodewright_list(self) -> list[Instance]:
        self._enter("list")
        return list(self.instances.values())

    @hookimpl
    def nodewright_delete(self, provider_id: str) -> None:
        self._enter("delete", provider_id=provider_id)
        if self.instances.pop(provider_id, None) is None:
            raise InstanceNotFoundError(f"no fake instance {provider_id!r}")

    @hookimpl
    def nodewright_node_labels(
        self, node_claim: NodeClaim, instance: Instance
    ) -> dict[str, str] | None:
        self._enter("node_labels", node_claim=node_claim, instance=instance)
        if instance.provider_id not in self.instances or not self.extra_node_labels:
            return None
        return dict(self.extra_node_labels)

    @hookimpl
    def nodewright_is_drifted(self, node_claim: NodeClaim, node_class: NodeClass) -> str | None:
        self._enter("is_drifted", node_claim=node_claim, node_class=node_class)
        if node_claim.name in self.drifted:
            return self.drifted[node_claim.name]
        image = node_claim.status.image_id
        if isinstance(node_class, FakeNodeClass) and image and image != node_class.spec.image_id:
            return "ImageDrift"
        return None

    @hookimpl
    def nodewright_reconcile(self, now: datetime) -> timedelta | None:
        self._enter("reconcile", now=now)
        return self.reconcile_period


def fake_node_class(name: str = "default", image_id: str = DEFAULT_IMAGE) -> FakeNodeClass:
    """A FakeNodeClass named ``name``."""
    return FakeNodeClass(metadata=ObjectMeta(name=name), spec=FakeNodeClassSpec(image_id=image_id))
