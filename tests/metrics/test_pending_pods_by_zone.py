"""``karpenter_scheduler_pending_pods_by_effective_zone_count`` as /metrics shows it while pods
wait for their nodes: each pending pod counted under the one zone its zone requirement,
volumes and zonal topology leave it, ``flexible`` when several remain, ``none`` when none
does. The cases are Karpenter's ``Pending Pods by Effective Zone Metric`` table, on the KWOK
provider's four zones."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pytest

from nodewright.api.apps import StorageClass
from nodewright.api.core import PersistentVolumeClaim, Pod
from nodewright.metrics import sample
from nodewright.testing.manifests import KWOK_NODE_CLASS
from tests.builders import pod
from tests.controllers.kwok_world import KWOKWorld, four_cpu_pool

ZONE = "topology.kubernetes.io/zone"
METRIC = "karpenter_scheduler_pending_pods_by_effective_zone_count"
APP = {"app": "placed"}
#: Every value the zone label takes in these tests.
ZONES = ("test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d", "flexible", "none")


def pending(name: str, **spec: Any) -> Pod:
    """A 2-CPU pod: no node of the world (4 CPUs, 3 taken) has room for it."""
    return pod(name, requests={"cpu": "2"}, **spec)


def placed(name: str, zone: str, **spec: Any) -> Pod:
    """A 3-CPU pod labelled app=placed, pinned to ``zone``."""
    return pod(name, labels=APP, requests={"cpu": "3"}, nodeSelector={ZONE: zone}, **spec)


def pending_by_zone(existing: list[Pod], waiting: list[Pod], *objects: Any) -> dict[str, float]:
    """Run ``existing`` pods to their nodes, add ``waiting`` pods, and read the metric while
    their nodes are still launching."""
    world = KWOKWorld({"registration-delay": "2m"})
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, *objects, *existing)
    world.settle()
    assert all(p.status.phase == "Running" for p in world.cluster.list(Pod))
    world.apply(*waiting)
    world.advance(timedelta(seconds=5))
    assert all(not p.spec.node_name for p in world.cluster.list(Pod) if p.name.startswith("w"))
    counts = {zone: sample(METRIC, {"controller": "provisioner", "zone": zone}) for zone in ZONES}
    return {zone: count for zone, count in counts.items() if count}


def spread(**extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": APP},
            "maxSkew": 1,
            **extra,
        }
    ]


def term(kind: str) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": ZONE, "labelSelector": {"matchLabels": APP}}
    ]}}  # fmt: skip


def preferring(zone: str) -> dict[str, Any]:
    wish = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
    preferred = [{"weight": 1, "preference": wish}]
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}


CASES: Mapping[str, tuple[list[Pod], list[Pod], dict[str, float]]] = {
    "pods free to go anywhere": ([], [pending("w1"), pending("w2")], {"flexible": 2}),
    "pods pinned to one zone": (
        [],
        [pending(f"w{i}", nodeSelector={ZONE: "test-zone-b"}) for i in range(3)],
        {"test-zone-b": 3},
    ),
    "pods pinned to different zones": (
        [],
        [
            pending("w1", nodeSelector={ZONE: "test-zone-a"}),
            pending("w2", nodeSelector={ZONE: "test-zone-b"}),
        ],
        {"test-zone-a": 1, "test-zone-b": 1},
    ),
    "a pod that only prefers a zone": (
        [],
        [pending("w1", affinity=preferring("test-zone-a"))],
        {"flexible": 1},
    ),
    "required pod affinity": (
        [placed("p1", "test-zone-a")],
        [pending("w1", affinity=term("podAffinity"))],
        {"test-zone-a": 1},
    ),
    "required pod anti-affinity": (
        [placed(f"p{z}", f"test-zone-{z}") for z in "abc"],
        [pending("w1", affinity=term("podAntiAffinity"))],
        {"test-zone-d": 1},
    ),
    "a spread every zone can take": (
        [],
        [pending("w1", labels=APP, topologySpreadConstraints=spread())],
        {"flexible": 1},
    ),
    "a spread the other zones have filled": (
        [placed(f"p{z}", f"test-zone-{z}", topologySpreadConstraints=spread()) for z in "abc"],
        [pending("w1", labels=APP, topologySpreadConstraints=spread())],
        {"test-zone-d": 1},
    ),
    "a spread no zone can satisfy": (
        [placed(f"p{z}{i}", f"test-zone-{z}") for z in "abcd" for i in (1, 2)],
        [pending("w1", topologySpreadConstraints=spread(minDomains=5))],
        {"none": 1},
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_pending_pods_are_counted_by_effective_zone(case: str) -> None:
    existing, waiting, expected = CASES[case]
    assert pending_by_zone(existing, waiting) == expected


def volume(zones: list[str]) -> tuple[StorageClass, PersistentVolumeClaim]:
    storage_class = StorageClass.model_validate(
        {
            "metadata": {"name": "zonal"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": ZONE, "values": zones}]}],
        }
    )
    claim = PersistentVolumeClaim.model_validate(
        {
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {
                "storageClassName": "zonal",
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )
    return storage_class, claim


MOUNT = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}


@pytest.mark.parametrize(
    ("zones", "selector", "expected"),
    [
        (["test-zone-a", "test-zone-b"], {}, {"flexible": 1}),
        (["test-zone-a"], {}, {"test-zone-a": 1}),
        (["test-zone-b"], {"nodeSelector": {ZONE: "test-zone-a"}}, {"none": 1}),
    ],
    ids=["a volume in two zones", "a volume in one zone", "a volume the pod cannot reach"],
)
def test_a_pending_pods_volume_limits_its_effective_zone(
    zones: list[str], selector: dict[str, Any], expected: dict[str, float]
) -> None:
    storage_class, claim = volume(zones)
    waiting = [pending("w1", **MOUNT, **selector)]
    assert pending_by_zone([], waiting, storage_class, claim) == expected


def test_the_series_go_when_no_pod_is_pending() -> None:
    world = KWOKWorld({"registration-delay": "1m"})
    waiting = pending("w1", nodeSelector={ZONE: "test-zone-c"})
    world.apply(four_cpu_pool(), KWOK_NODE_CLASS, waiting)
    world.advance(timedelta(seconds=5))
    labels = {"controller": "provisioner", "zone": "test-zone-c"}
    assert sample(METRIC, labels) == 1
    world.settle()
    assert sample(METRIC, labels) == 0
