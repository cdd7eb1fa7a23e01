"""DRA allocation end to end in a simulation with the KWOK provider
(``IGNORE_DRA_REQUESTS=false``): pods whose claims ask for GPUs get nodes of instance types
that offer them, the provider publishes those nodes' ResourceSlices, kube-scheduler allocates
each claim a device of its pod's node, and a claim's devices are free again when its pod
goes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from nodewright.api.apps import Deployment
from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim, NodePool, NodeSelectorRequirementWithMinValues
from nodewright.api.labels import DRA_DRIVERS_ANNOTATION, INSTANCE_TYPE_LABEL
from nodewright.api.manifests.loading import load_paths, load_text
from nodewright.api.resource import ResourceClaim, ResourceSlice
from nodewright.cluster.objects import mutable
from nodewright.controllers.options import Options
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import kind_registry
from nodewright.simulation.runner import Simulation
from tests.conftest import Simulate
from tests.dra.builders import NO_INSTANCE_TYPE_FOR_ALLOCATION, example_manifests

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra"
CATALOG = {"kwok": {"instance-types-file": str(EXAMPLE / "gpu-catalog.yaml")}}
#: The driver the example's catalog publishes devices for.
DRIVER = "gpu.example.com"


def _simulation(dra: bool, *texts: str) -> Simulation:
    host = PluginHost.load(only=["kwok"])
    registry = kind_registry(host)
    simulation = Simulation(host, Options(dra=dra), provider_options=CATALOG)
    simulation.apply(load_paths([EXAMPLE / "manifests"], registry))
    for text in texts:
        simulation.apply(load_text(text, "manifests.yaml", registry))
    simulation.settle()
    return simulation


def _pods(simulation: Simulation) -> list[Pod]:
    return [p for p in simulation.cluster.list(Pod) if p.name.startswith("trainer-")]


def test_pods_with_gpu_claims_get_a_gpu_node_and_a_device_each() -> None:
    simulation = _simulation(True)
    pods = _pods(simulation)
    assert len(pods) == 3
    assert all(p.spec.node_name for p in pods)
    (node,) = simulation.cluster.list(Node)
    assert node.metadata.labels[INSTANCE_TYPE_LABEL].startswith("g4-")
    # The provider published the node's GPUs, as its DRA driver would.
    slices = [s for s in simulation.cluster.list(ResourceSlice) if s.spec.node_name == node.name]
    assert [len(s.spec.devices or []) for s in slices] == [4]
    claims = simulation.cluster.list(ResourceClaim)
    assert len(claims) == 3
    devices = set()
    for claim in claims:
        allocation = claim.status.allocation
        assert allocation is not None, claim.name
        (result,) = allocation.devices.results
        assert (result.request, result.driver, result.pool) == (
            "gpu",
            DRIVER,
            slices[0].spec.pool.name,
        )
        devices.add(result.device)
        (reserved,) = claim.status.reserved_for
        assert reserved.uid in {p.metadata.uid for p in pods}
    assert len(devices) == 3, "each claim has a GPU of its own"
    (node_claim,) = simulation.cluster.list(NodeClaim)
    assert node_claim.metadata.annotations[DRA_DRIVERS_ANNOTATION] == DRIVER


def test_a_pods_claim_follows_it_and_its_device_is_freed_when_it_goes() -> None:
    simulation = _simulation(True)
    pod = _pods(simulation)[0]
    statuses = pod.status.resource_claim_statuses or []
    (status,) = statuses
    assert status.name == "gpu"
    claim = simulation.cluster.get(ResourceClaim, status.resource_claim_name or "", "default")
    assert claim is not None
    assert claim.metadata.owner_references[0].uid == pod.metadata.uid
    simulation.cluster.delete(Pod, pod.name, "default")
    simulation.settle()
    assert simulation.cluster.get(ResourceClaim, claim.name, "default") is None
    # The ReplicaSet's new pod takes the freed GPU on the same node: no second node.
    assert len(simulation.cluster.list(Node)) == 1
    assert all(p.spec.node_name for p in _pods(simulation))


def test_with_claims_ignored_the_pods_launch_nothing() -> None:
    simulation = _simulation(False)
    assert simulation.cluster.list(Node) == []
    assert all(not p.spec.node_name for p in _pods(simulation))


TOO_MANY = """
apiVersion: v1
kind: Pod
metadata: {name: eight-gpus, namespace: default}
spec:
  resourceClaims: [{name: gpus, resourceClaimName: eight-gpus}]
  containers:
    - name: app
      image: pause
      resources: {requests: {cpu: "1"}, claims: [{name: gpus}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: eight-gpus, namespace: default}
spec:
  devices:
    requests:
      - name: gpus
        exactly: {deviceClassName: gpu.example.com, count: 8}
"""


def test_a_claim_no_instance_type_can_meet_is_the_pods_failed_scheduling(
    simulate: Simulate,
) -> None:
    manifests = example_manifests(EXAMPLE)
    result = simulate(
        manifests.replace("replicas: 3", "replicas: 0") + "\n---\n" + TOO_MANY,
        None,
        "--no-ignore-dra-requests",
        "--provider-option",
        f"kwok.instance-types-file={EXAMPLE / 'gpu-catalog.yaml'}",
    )
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    messages = {e["message"] for e in result.events("FailedScheduling")}
    assert NO_INSTANCE_TYPE_FOR_ALLOCATION in messages, messages


def _scale(simulation: Simulation, replicas: int) -> None:
    deployment = simulation.cluster.get(Deployment, "trainer", "default")
    assert deployment is not None
    changed = mutable(deployment)
    changed.spec.replicas = replicas
    simulation.cluster.update(changed)


def test_a_gpu_node_left_with_one_claim_is_replaced_by_a_one_gpu_type() -> None:
    # Karpenter's consolidation_dra_test: the candidate's pod is allocated a device of the
    # replacement's instance type, and the candidate's own devices are not counted.
    simulation = _simulation(True)
    (before,) = simulation.cluster.list(Node)
    _scale(simulation, 1)
    simulation.advance(timedelta(minutes=10))
    (after,) = simulation.cluster.list(Node)
    assert after.name != before.name
    assert after.metadata.labels[INSTANCE_TYPE_LABEL].startswith("g1-")
    (pod,) = _pods(simulation)
    assert pod.spec.node_name == after.name
    (claim,) = simulation.cluster.list(ResourceClaim)
    assert claim.status.allocation is not None
    (result,) = claim.status.allocation.devices.results
    assert result.pool.startswith(after.name)


def test_without_a_gpu_type_to_move_to_the_node_stays() -> None:
    # Every GPU is taken on the one node there is; a CPU-only NodePool offers no device, so
    # the pods would schedule nowhere else and the node is not consolidated.
    simulation = _simulation(True)
    (before,) = simulation.cluster.list(Node)
    pool = simulation.cluster.get(NodePool, "default")
    assert pool is not None
    changed = mutable(pool)
    changed.spec.template.spec.requirements.append(
        NodeSelectorRequirementWithMinValues(
            key=INSTANCE_TYPE_LABEL, operator="In", values=["c-4x-amd64-linux"]
        )
    )
    simulation.cluster.update(changed)
    _scale(simulation, 1)
    simulation.advance(timedelta(minutes=10))
    assert [n.name for n in simulation.cluster.list(Node)] == [before.name]


GPU_AGENT = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: gpu-agent, namespace: default}
spec:
  selector: {matchLabels: {app: gpu-agent}}
  template:
    metadata: {labels: {app: gpu-agent}}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
      containers:
        - name: agent
          image: pause
          resources: {requests: {cpu: 100m}, claims: [{name: gpu}]}
---
apiVersion: v1
kind: Pod
metadata: {name: cpu-job, namespace: default}
spec:
  nodeSelector: {node.kubernetes.io/instance-type: c-4x-amd64-linux}
  containers:
    - name: app
      image: pause
      resources: {requests: {cpu: "1"}}
"""


def test_a_daemon_pod_with_a_claim_gets_a_device_of_its_node_or_waits() -> None:
    # As in a cluster: each daemon pod gets a claim of its own from the template, and
    # kube-scheduler allocates it from its node's devices; on a node without a free device
    # it stays pending.
    simulation = _simulation(True, GPU_AGENT)
    nodes = {n.metadata.labels[INSTANCE_TYPE_LABEL]: n.name for n in simulation.cluster.list(Node)}
    assert sorted(nodes) == ["c-4x-amd64-linux", "g4-32x-amd64-linux"]
    agents = {p.name: p for p in simulation.cluster.list(Pod) if p.name.startswith("gpu-agent-")}
    assert len(agents) == 2
    by_node = {}
    for agent in agents.values():
        (status,) = agent.status.resource_claim_statuses or []
        claim = simulation.cluster.get(ResourceClaim, status.resource_claim_name or "", "default")
        assert claim is not None
        assert claim.metadata.owner_references[0].uid == agent.metadata.uid
        affinity = agent.spec.affinity
        assert affinity is not None
        assert affinity.node_affinity is not None
        required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
        assert required is not None
        (term,) = required.node_selector_terms
        (field,) = term.match_fields
        by_node[field.values[0]] = (agent, claim)
    gpu_agent, gpu_claim = by_node[nodes["g4-32x-amd64-linux"]]
    assert gpu_agent.spec.node_name == nodes["g4-32x-amd64-linux"]
    assert gpu_claim.status.allocation is not None
    assert [r.uid for r in gpu_claim.status.reserved_for] == [gpu_agent.metadata.uid]
    devices = {
        (r.pool, r.device)
        for c in simulation.cluster.list(ResourceClaim)
        if c.status.allocation is not None
        for r in c.status.allocation.devices.results
    }
    assert len(devices) == 4, "the three trainers and the agent each have a GPU of their own"
    cpu_agent, cpu_claim = by_node[nodes["c-4x-amd64-linux"]]
    assert not cpu_agent.spec.node_name
    assert cpu_claim.status.allocation is None
    scheduled = cpu_agent.condition("PodScheduled")
    assert scheduled is not None
    assert scheduled.status == "False"
    assert "cannot allocate all claims" in (scheduled.message or ""), scheduled.message
