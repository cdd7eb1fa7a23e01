"""Seed 000's scheduling scenarios, end to end through ``nodewright simulate``.

The seed launches nodes for pods with zonal pod affinity, zonal anti-affinity preferences and
a StatefulSet whose WaitForFirstConsumer volumes must live in one zone. Each test checks the
outcome the article shows: which zones the nodes are in and where the pods and volumes end up.
"""

from __future__ import annotations

from collections import Counter

from nodewright.api.apps import StatefulSet
from nodewright.api.core import Node, PersistentVolume, PersistentVolumeClaim
from nodewright.api.labels import ZONE_LABEL
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_text
from nodewright.plugin.host import PluginHost
from nodewright.simulation.runner import Simulation
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

ZONE_A = "test-zone-a"


def test_required_zonal_pod_affinity_puts_every_replica_in_one_zone(simulate: Simulate) -> None:
    # Seed 000 (1): inflate with 8 replicas and required pod affinity on the zone.
    affinity = """
    affinity:
      podAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: topology.kubernetes.io/zone
            labelSelector: {matchLabels: {app: inflate}}
    """
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("inflate", 8, cpu="1", extra_spec=affinity)
    )
    assert result.exit_code == 0, result.stderr
    assert result.pending() == []
    zones = {node["zone"] for node in result.nodes()}
    assert len(zones) == 1


def test_zonal_spread_with_the_hostname_limit_spreads_over_nodes_and_zones(
    simulate: Simulate,
) -> None:
    spread = """
    topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {matchLabels: {app: web}}
      - maxSkew: 2
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector: {matchLabels: {app: web}}
    """
    pool = node_pool(
        requirements="[{key: topology.kubernetes.io/zone, operator: In,"
        " values: [test-zone-a, test-zone-b, test-zone-c]}]"
    )
    result = simulate(pool + KWOK_NODE_CLASS + deployment("web", 12, cpu="500m", extra_spec=spread))
    assert result.exit_code == 0, result.stderr
    assert result.pending() == []
    zone_of = {node["name"]: node["zone"] for node in result.nodes()}
    per_zone = Counter(zone_of[p["node"]] for p in result.pods() if p["name"].startswith("web-"))
    assert sorted(per_zone.values()) == [4, 4, 4]
    # kube-scheduler binds to nodes as they become ready, so one node may run ahead of
    # another, but never by more than the hostname maxSkew.
    per_node = Counter(p["node"] for p in result.pods() if p["name"].startswith("web-"))
    assert max(per_node.values()) - min(per_node.values()) <= 2


def test_statefulset_volumes_and_nodes_all_land_in_the_required_zone() -> None:
    # Seed 000 (3): 20 replicas, required node affinity to one zone, a volumeClaimTemplate on
    # a WaitForFirstConsumer StorageClass: every node and every volume ends up in that zone.
    manifests = f"""
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: gp2}}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db, namespace: default}}
spec:
  replicas: 20
  serviceName: db
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {{key: topology.kubernetes.io/zone, operator: In, values: [{ZONE_A}]}}
      containers:
        - name: db
          image: pause
          resources: {{requests: {{cpu: "1", memory: 1Gi}}}}
          volumeMounts: [{{name: data, mountPath: /data}}]
  volumeClaimTemplates:
    - metadata: {{name: data}}
      spec:
        accessModes: [ReadWriteOnce]
        storageClassName: gp2
        resources: {{requests: {{storage: 1Gi}}}}
---
"""
    host = PluginHost.load(only=["kwok"])
    registry = KindRegistry()
    for kind in host.node_class_kinds():
        registry.register(kind.model, kind.extra_versions)
    simulation = Simulation(host)
    objects = load_text(node_pool() + KWOK_NODE_CLASS + manifests, "seed-000.yaml", registry)
    simulation.apply(objects)
    simulation.settle()
    cluster = simulation.cluster
    sts = cluster.get(StatefulSet, "db", "default")
    assert sts is not None
    assert sts.status.ready_replicas == 20
    nodes = cluster.list(Node)
    assert nodes
    assert {n.metadata.labels[ZONE_LABEL] for n in nodes} == {ZONE_A}
    claims = cluster.list(PersistentVolumeClaim)
    assert len(claims) == 20
    assert all(c.spec.volume_name for c in claims)
    for volume in cluster.list(PersistentVolume):
        affinity = volume.spec.node_affinity
        assert affinity is not None
        text = affinity.model_dump_json()
        assert ZONE_A in text


def test_a_pod_whose_claim_is_missing_is_ignored_with_a_reason(simulate: Simulate) -> None:
    volume = """
    volumes:
      - name: data
        persistentVolumeClaim: {claimName: missing}
    """
    result = simulate(node_pool() + KWOK_NODE_CLASS + deployment("db", 1, extra_spec=volume))
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    (pending,) = result.pending()
    messages = [e["message"] for e in result.events("FailedScheduling")]
    expected = 'Failed to schedule pod, persistentvolumeclaim "missing" not found'
    assert any(expected in m for m in messages), messages
    assert pending["name"].startswith("db-")
