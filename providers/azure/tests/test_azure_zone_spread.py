"""Zone topology spread on Azure, where regional (non-zonal) VMs are labelled zone ``0`` and
``karpenter.azure.com/placement-scope`` tells zonal and regional offerings apart.

As in current Karpenter Azure, ``0`` is a real spread domain wherever a NodePool may launch
regional VMs, and a launch prefers a zonal offering to a regional one of the same price. A
NodePool restricted to ``placement-scope In [zonal]`` cannot reach ``0``, so it is not one of
that pool's domains; and among equally loaded zones a spread fills ``0`` last, so a first
replica never lands on a regional VM while a zone is free. Simulated with the real
controllers against the loopback fake of ARM (see ``test_azure_seed_002_simulate``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodewright.api.core import Node, Pod
from nodewright.api.labels import ZONE_LABEL
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_paths, load_text
from nodewright.clock import SimulatedClock
from nodewright.commands.host import load_host
from nodewright.simulation.runner import Simulation
from nodewright_azure import labels as L
from nodewright_azure import plugin as azure_plugin
from providers.azure.tests.azure_helpers import fake_options
from providers.azure.tests.fake_azure import FakeAzure

NODE_CLASS = Path(__file__).resolve().parents[3] / "examples" / "azure" / "seed-002" / "manifests"
REGIONAL = L.REGIONAL_ZONE


@pytest.fixture
def fake(tmp_path: Path, clock: SimulatedClock) -> Iterator[FakeAzure]:
    azure = FakeAzure(tmp_path, now=clock.now).start()
    yield azure
    azure_plugin.provider.close()
    azure.stop()


@pytest.fixture
def simulation(fake: FakeAzure, clock: SimulatedClock, tmp_path: Path) -> Simulation:
    fake.clients["client"] = "secret"
    secret = tmp_path / "client-secret"
    secret.write_text("secret")
    options = fake_options(
        fake,
        auth_mode="client-secret",
        tenant_id="tenant-1",
        client_id="client",
        client_secret_file=str(secret),
        authority_host=fake.url,
    )
    return Simulation(load_host(), provider_options={"azure": options}, clock=clock)


def _pool(placement: str) -> str:
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.azure.com, kind: AKSNodeClass, name: default}}
      requirements:
        - {{key: karpenter.azure.com/sku-family, operator: In, values: [D]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
{placement}
---
"""


ZONAL = "        - {key: karpenter.azure.com/placement-scope, operator: In, values: [zonal]}"


def _spread(replicas: int) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {{matchLabels: {{app: web}}}}
      containers:
        - name: web
          image: nginx
          resources: {{requests: {{cpu: "1"}}}}
---
"""


def _run(sim: Simulation, manifests: str) -> tuple[list[Pod], list[str]]:
    registry = KindRegistry()
    for kind in sim.host.node_class_kinds():
        registry.register(kind.model, kind.extra_versions)
    sim.apply(load_paths([NODE_CLASS / "aksnodeclass.yaml"], registry))
    sim.apply(load_text(manifests, "manifests.yaml", registry))
    sim.settle()
    pods = sim.cluster.list(Pod)
    zones = {n.name: n.metadata.labels[ZONE_LABEL] for n in sim.cluster.list(Node)}
    return pods, sorted(zones[p.spec.node_name] for p in pods if p.spec.node_name)


def test_a_zonal_pool_spreads_over_its_zones_only(simulation: Simulation) -> None:
    pods, zones = _run(simulation, _pool(ZONAL) + _spread(4))
    assert all(p.spec.node_name for p in pods), "every replica is scheduled"
    assert REGIONAL not in zones
    # four replicas over the three zones the pool can reach, skew at most one
    assert len(set(zones)) == 3
    assert sorted(zones.count(z) for z in set(zones)) == [1, 1, 2]


def test_an_unrestricted_spread_starts_on_zonal_vms(simulation: Simulation) -> None:
    _, zones = _run(simulation, _pool("") + _spread(1))
    assert len(zones) == 1
    assert zones[0] != REGIONAL
    assert zones[0].startswith("japaneast-")


def test_regional_vms_are_a_spread_domain_of_an_unrestricted_pool(simulation: Simulation) -> None:
    # As in Karpenter Azure: a pool that may launch regional VMs spreads over zone "0" too,
    # filling it last; restrict the pool (placement-scope or zone) to keep it out.
    pods, zones = _run(simulation, _pool("") + _spread(4))
    assert all(p.spec.node_name for p in pods)
    assert zones.count(REGIONAL) == 1
    assert len(set(zones)) == 4
