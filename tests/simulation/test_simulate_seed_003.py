"""Seed 003 end to end: hostname and zone spreads on a fixed cluster of seven nodes."""

from __future__ import annotations

from collections import Counter

from nodewright.testing.manifests import deployment
from tests.conftest import Simulate

SPREADS = """
topologySpreadConstraints:
  - maxSkew: 2
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: host-spread}}
  - maxSkew: 5
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: host-spread}}
"""


def static_node(name: str, zone: str, cpu: str) -> str:
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}, topology.kubernetes.io/zone: {zone}}}
status:
  allocatable: {{cpu: "{cpu}", memory: 8Gi, pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
---
"""


def seed_cluster(cpu: str = "2", cpu_in_c: str = "2") -> str:
    """Three nodes in zone a, three in b, one in c; no NodePool, so nothing is added."""
    names = [("a", 1), ("a", 2), ("a", 3), ("b", 1), ("b", 2), ("b", 3)]
    nodes = [static_node(f"{zone}-{index}", f"zone-{zone}", cpu) for zone, index in names]
    return "".join([*nodes, static_node("c-1", "zone-c", cpu_in_c)])


def test_seed_003_fourteen_of_twenty_replicas_run(simulate: Simulate) -> None:
    result = simulate(seed_cluster() + deployment("host-spread", 20, extra_spec=SPREADS))
    assert result.exit_code == 0, result.stderr
    nodes = {n["name"]: n for n in result.nodes()}
    assert len(nodes) == 7
    bound = Counter(p["node"] for p in result.pods() if p["node"])
    assert sum(bound.values()) == 14
    assert set(bound.values()) == {2}  # every node full
    zones = Counter(nodes[name]["zone"] for name in bound.elements())
    assert zones == {"zone-a": 6, "zone-b": 6, "zone-c": 2}
    pending = result.pending()
    assert len(pending) == 6
    warned = {e["object"] for e in result.events("FailedScheduling")}
    assert {f"pod/{p['name']}" for p in pending} <= warned


def test_seed_003_spreads_hold_back_replicas_that_would_fit(simulate: Simulate) -> None:
    # Zone c's node holds two pods; zones a and b may then run at most 2 + 5 each, though
    # their nodes have room for more.
    manifests = seed_cluster(cpu="8", cpu_in_c="2")
    result = simulate(manifests + deployment("host-spread", 20, extra_spec=SPREADS))
    assert result.exit_code == 0, result.stderr
    nodes = {n["name"]: n for n in result.nodes()}
    bound = Counter(p["node"] for p in result.pods() if p["node"])
    zones = Counter(nodes[name]["zone"] for name in bound.elements())
    assert zones == {"zone-a": 7, "zone-b": 7, "zone-c": 2}
    assert len(result.pending()) == 4
