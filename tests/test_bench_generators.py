"""The inputs the consolidation benchmarks generate: the diverse mix has the pods the issue
defines, and the generated EKS dump loads as a cluster a user would dump."""

from __future__ import annotations

from collections import Counter
from typing import Any

from nodewright.api.apps import DaemonSet, Deployment, PodDisruptionBudget
from nodewright.api.core import Node, Pod
from nodewright.commands.host import load_host
from nodewright.simulation.inputs import karpenter_rules, kind_registry
from nodewright.simulation.limits import DEFAULT
from nodewright.simulation.snapshot import read_items
from tests.bench_modules import load_bench

diverse_mix = load_bench("diverse_mix")
whatif_dump = load_bench("whatif_dump")


def _replicas(objects: list[dict[str, Any]]) -> int:
    return sum(o["spec"]["replicas"] for o in objects if o["kind"] == "Deployment")


def test_the_diverse_mix_has_1680_5040_and_20160_pods() -> None:
    assert [_replicas(diverse_mix.diverse(scale)) for scale in (1, 3, 12)] == [1680, 5040, 20160]
    assert diverse_mix.diverse_pods(3) == 5040


def test_the_diverse_mix_cycles_through_the_five_constraints() -> None:
    deployments = [o for o in diverse_mix.diverse(1) if o["kind"] == "Deployment"]
    kinds = []
    for each in deployments[:5]:
        spec = each["spec"]["template"]["spec"]
        spread = spec.get("topologySpreadConstraints")
        affinity = spec.get("affinity", {})
        if spread:
            kinds.append(f"spread {spread[0]['topologyKey']}")
        elif affinity:
            (kind,) = affinity
            term = affinity[kind]["requiredDuringSchedulingIgnoredDuringExecution"][0]
            kinds.append(f"{kind} {term['topologyKey']}")
        else:
            kinds.append("none")
    assert kinds == [
        "none",
        "spread topology.kubernetes.io/zone",
        "spread kubernetes.io/hostname",
        "podAffinity topology.kubernetes.io/zone",
        "podAntiAffinity kubernetes.io/hostname",
    ]


def test_the_generated_dump_loads_with_every_pod_on_a_node() -> None:
    host = load_host()
    dump = whatif_dump.dump(nodes=6, pods=40, seed=3)
    assert dump == whatif_dump.dump(nodes=6, pods=40, seed=3)
    snapshot = read_items(
        dump["items"], "dump", kind_registry(host), karpenter_rules(host), limits=DEFAULT
    )
    kinds = Counter(type(obj) for obj in snapshot.objects)
    assert kinds[Node] == 6
    assert kinds[Pod] == 40
    assert kinds[Deployment] == 4
    assert kinds[DaemonSet] == 2
    assert kinds[PodDisruptionBudget] == 1
    assert len(snapshot.managed_nodes) == 6
    assert not snapshot.unmanaged_nodes
    pods = [obj for obj in snapshot.objects if isinstance(obj, Pod)]
    assert all(p.spec.node_name for p in pods)
