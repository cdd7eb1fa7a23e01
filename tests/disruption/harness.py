"""A cluster for disruption tests: the real operator, the KWOK provider with Karpenter's fake
instance types, and nodes and pods placed by hand (Karpenter's ``ExpectApplied`` +
``ExpectManualBinding``), so each scenario starts from exactly the shape it describes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from nodewright.api.apps import PodDisruptionBudget, ReplicaSet
from nodewright.api.core import Event, Node, Pod
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.labels import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_HASH_ANNOTATION,
    NODEPOOL_HASH_VERSION,
    NODEPOOL_HASH_VERSION_ANNOTATION,
    NODEPOOL_LABEL,
    ZONE_LABEL,
)
from nodewright.api.meta import OwnerReference
from nodewright.clock import SimulatedClock
from nodewright.cluster.objects import mutable
from nodewright.controllers import Controller
from nodewright.controllers.options import Options
from nodewright.controllers.state.solverdata import nodepool_hash
from nodewright.plugin.host import PluginHost
from nodewright.scheduling.instancetype import InstanceType, Offering
from nodewright.scheduling.resources import format_resources
from nodewright.testing.catalog import ZONES, default_instance_types, fake_instance_type
from nodewright_kwok.nodeclass import KWOKNodeClass
from tests.builders import pool_manifest
from tests.harness import OperatorHarness


def kwok_type(instance_type: InstanceType) -> dict[str, Any]:
    """A type of the test kit's fake catalog as a KWOK instance-types file lists it: its
    architecture, resources and offerings, on Linux only."""
    return {
        "name": instance_type.name,
        "architecture": next(iter(instance_type.requirements[ARCH_LABEL].values)),
        "operatingSystems": ["linux"],
        "resources": format_resources(instance_type.capacity),
        "offerings": [
            {"zone": o.zone, "capacityType": o.capacity_type, "price": o.price}
            for o in instance_type.offerings
        ],
    }


def fake_type(
    name: str,
    cpu: int,
    memory_gib: int,
    *,
    pods: int = 5,
    arch: str = "amd64",
    spot_zones: Iterable[str] = ZONES[:2],
    on_demand_zones: Iterable[str] = ZONES,
    price: float | None = None,
) -> dict[str, Any]:
    """:func:`~nodewright.testing.fake_instance_type` as a KWOK type, at its price (unless
    ``price``) in these zones, spot in zones 1-2 and on-demand in zones 1-3 by default."""
    fake = fake_instance_type(name, cpu=str(cpu), memory=f"{memory_gib}Gi", pods=pods, arch=arch)
    cost = price if price is not None else fake.offerings[0].price
    offerings = [Offering(z, CAPACITY_TYPE_SPOT, cost) for z in spot_zones]
    offerings += [Offering(z, CAPACITY_TYPE_ON_DEMAND, cost) for z in on_demand_zones]
    return kwok_type(fake.with_offerings(offerings))


#: Karpenter's default fake catalog (``pkg/cloudprovider/fake``).
FAKE_TYPES = [kwok_type(fake) for fake in default_instance_types()]


def _in(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": [value]}


class Harness(OperatorHarness):
    """The operator harness with Karpenter's fake catalog behind the KWOK provider, nodes and
    pods placed by hand, and the disruption loop held back until the scenario is built."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        types: list[dict[str, Any]] | None = None,
        options: Options | None = None,
        pools: Iterable[dict[str, Any]] = (),
        kwok_options: Mapping[str, str] | None = None,
        clock: SimulatedClock | None = None,
    ) -> None:
        catalog = tmp_path / "instance-types.json"
        catalog.write_text(json.dumps(types or FAKE_TYPES))
        super().__init__(
            PluginHost.load(only=["kwok"]),
            options,
            {"kwok": {"instance-types-file": str(catalog), **(kwok_options or {})}},
            clock=clock,
        )
        self.cluster.create(KWOKNodeClass.model_validate({"metadata": {"name": "default"}}))
        for pool in list(pools) or [pool_manifest()]:
            self.cluster.create(NodePool.model_validate(pool))
        self._rs: dict[str, ReplicaSet] = {}
        # While the scenario is built the disruption loop is held back, as Karpenter's tests
        # apply every object before they reconcile the disruption singleton.
        self._controllers = list(self.sim.operator.controllers)
        self.sim.operator.controllers = [
            c for c in self._controllers if c is not self.sim.operator.disruption
        ]
        self.sim.advance(timedelta(seconds=1))

    def start(self) -> None:
        """Let the disruption loop run (``run`` does this too)."""
        self.sim.operator.controllers = list(self._controllers)

    def run_before_disruption(self, controller: Controller) -> None:
        """Add ``controller`` to every pass, just before the disruption controller."""
        at = self._controllers.index(self.sim.operator.disruption)
        self._controllers.insert(at, controller)

    # -- building the cluster -------------------------------------------------------------------

    def node(
        self,
        instance_type: str = "default-instance-type",
        *,
        zone: str = "test-zone-1",
        capacity_type: str = "on-demand",
        pool: str = "default",
        annotations: Mapping[str, str] | None = None,
    ) -> str:
        """Launch one node of exactly this offering; return its name once it is initialized."""
        (name,) = self.launch_nodes(
            1,
            instance_type,
            zone=zone,
            capacity_type=capacity_type,
            pool=pool,
            annotations=annotations,
        )
        return name

    def launch_nodes(
        self,
        count: int,
        instance_type: str = "default-instance-type",
        *,
        zone: str = "test-zone-1",
        capacity_type: str = "on-demand",
        pool: str = "default",
        annotations: Mapping[str, str] | None = None,
        expire_after: str = "720h",
    ) -> list[str]:
        """Launch ``count`` nodes at once; return their names once all are initialized.

        The NodeClaims carry their NodePool's hash, as provisioning stamps them.
        """
        owner = self.cluster.get(NodePool, pool)
        stamped = dict(annotations or {})
        if owner is not None:
            stamped[NODEPOOL_HASH_ANNOTATION] = nodepool_hash(owner)
            stamped[NODEPOOL_HASH_VERSION_ANNOTATION] = NODEPOOL_HASH_VERSION
        names = [
            self.cluster.create(
                NodeClaim.model_validate(
                    {
                        "metadata": {
                            "generateName": f"{pool}-",
                            "labels": {NODEPOOL_LABEL: pool},
                            "annotations": stamped,
                        },
                        "spec": {
                            "requirements": [
                                _in(INSTANCE_TYPE_LABEL, instance_type),
                                _in(ZONE_LABEL, zone),
                                _in(CAPACITY_TYPE_LABEL, capacity_type),
                            ],
                            "nodeClassRef": {
                                "group": "karpenter.kwok.sh",
                                "kind": "KWOKNodeClass",
                                "name": "default",
                            },
                            "expireAfter": expire_after,
                        },
                    }
                )
            ).name
            for _ in range(count)
        ]
        self.sim.advance(timedelta(0))
        for name in names:
            node = self.cluster.get(Node, name)
            if node is None or node.metadata.labels.get("karpenter.sh/initialized") != "true":
                raise AssertionError(f"node {name} did not initialize")
        return names

    def bind_pods(
        self,
        node: str | None,
        count: int = 1,
        *,
        owner: str = "app",
        cpu: str = "100m",
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        spec: Mapping[str, Any] | None = None,
        template_spec: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Bind ``count`` running pods of ReplicaSet ``owner`` to ``node`` (pending pods for
        provisioning to place when ``node`` is None). ``template_spec`` is added to the spec
        of the pods the ReplicaSet makes in their place, when this call creates it."""
        rs = self._replica_set(owner, count, template_spec)
        names = []
        for _ in range(count):
            pod = Pod.model_validate(
                {
                    "metadata": {
                        "generateName": f"{owner}-",
                        "namespace": "default",
                        "labels": {"app": owner, **(labels or {})},
                        "annotations": dict(annotations or {}),
                    },
                    "spec": {
                        **({"nodeName": node} if node is not None else {}),
                        "containers": [
                            {
                                "name": "app",
                                "image": "pause",
                                "resources": {"requests": {"cpu": cpu}},
                            }
                        ],
                        **(spec or {}),
                    },
                    "status": {
                        "phase": "Running",
                        "conditions": [
                            {"type": "PodScheduled", "status": "True"},
                            {"type": "Ready", "status": "True"},
                        ],
                    }
                    if node is not None
                    else {"phase": "Pending"},
                }
            )
            pod.metadata.owner_references = [
                OwnerReference(
                    api_version="apps/v1",
                    kind="ReplicaSet",
                    name=rs.name,
                    uid=rs.metadata.uid or "",
                    controller=True,
                )
            ]
            names.append(self.cluster.create(pod).name)
        return names

    def _replica_set(
        self, owner: str, more: int, template_spec: Mapping[str, Any] | None = None
    ) -> ReplicaSet:
        current = self._rs.get(owner)
        if current is None:
            rs = ReplicaSet.model_validate(
                {
                    "metadata": {"name": owner, "namespace": "default"},
                    "spec": {
                        "replicas": more,
                        "selector": {"matchLabels": {"app": owner}},
                        "template": {
                            "metadata": {"labels": {"app": owner}},
                            "spec": {
                                "containers": [{"name": "app", "image": "pause"}],
                                **(template_spec or {}),
                            },
                        },
                    },
                }
            )
            current = self.cluster.create(rs)
        else:
            current = mutable(self.cluster.get(ReplicaSet, owner, "default") or current)
            current.spec.replicas += more
            current = self.cluster.update(current)
        self._rs[owner] = current
        return current

    def pdb(self, name: str, labels: Mapping[str, str], *, max_unavailable: int | str = 0) -> None:
        self.cluster.create(
            PodDisruptionBudget.model_validate(
                {
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {
                        "maxUnavailable": max_unavailable,
                        "selector": {"matchLabels": dict(labels)},
                    },
                }
            )
        )

    # -- watching -------------------------------------------------------------------------------

    def run(self, seconds: float) -> None:
        self.start()
        self.sim.advance(timedelta(seconds=seconds))

    def claim_names(self) -> set[str]:
        return {c.name for c in self.claims()}

    def live_claim_names(self) -> set[str]:
        return {c.name for c in self.claims() if not c.deleting}

    def node_names(self) -> set[str]:
        return {n.name for n in self.cluster.list(Node)}

    def event_log(self, reason: str) -> list[tuple[str, str]]:
        """(``kind/name``, message) of every event with ``reason``."""
        return [
            (f"{(e.involved_object.kind or '').lower()}/{e.involved_object.name}", e.message)
            for e in self.cluster.list(Event)
            if e.reason == reason
        ]

    def instance_type(self, claim: NodeClaim) -> str | None:
        return claim.metadata.labels.get(INSTANCE_TYPE_LABEL)
