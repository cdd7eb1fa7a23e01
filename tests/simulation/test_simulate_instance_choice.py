"""Instance choice end to end: the operator with the KWOK provider on an embedded cluster."""

from __future__ import annotations

from nodewright.api.core import Container, Node, Pod, PodSpec, ResourceRequirements
from nodewright.api.labels import ARCH_LABEL, INSTANCE_TYPE_LABEL, MIN_VALUES_RELAXED_ANNOTATION
from nodewright.api.meta import ObjectMeta
from nodewright.controllers.options import Options
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.controllers.kwok_world import KWOKWorld, four_cpu_pool

FAMILY = "karpenter.kwok.sh/instance-family"


def test_a_pod_may_select_a_provider_label_its_node_pool_does_not_name() -> None:
    world = KWOKWorld()
    world.apply(
        KWOK_NODE_CLASS,
        four_cpu_pool(),
        deployment("memory-heavy", 1, extra_spec=f"nodeSelector: {{{FAMILY}: m}}"),
    )
    world.settle()
    (node,) = world.cluster.list(Node)
    assert node.metadata.labels[FAMILY] == "m"
    assert all(p.spec.node_name == node.name for p in world.pods("memory-heavy"))


def daemonset(name: str, cpu: str, node_selector: str = "{}") -> str:
    return f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: kube-system}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      nodeSelector: {node_selector}
      containers:
        - name: agent
          image: pause
          resources: {{requests: {{cpu: "{cpu}", memory: 10Mi}}}}
"""


def test_an_arm64_daemonset_keeps_arm64_types_off_a_claim_it_would_overfill() -> None:
    world = KWOKWorld()
    world.apply(
        KWOK_NODE_CLASS,
        four_cpu_pool(),
        daemonset("arm-agent", "3", f"{{{ARCH_LABEL}: arm64}}"),
        deployment("web", 1, cpu="1500m"),
    )
    world.settle()
    (claim,) = world.claims()
    types = next(r for r in claim.spec.requirements if r.key == INSTANCE_TYPE_LABEL).values
    assert types
    assert all("amd64" in name for name in types)
    # No daemon lands on amd64, so the claim asks for the pod alone.
    assert claim.spec.resources.requests["cpu"] == "1500m"
    (node,) = world.nodes()
    assert node.metadata.labels[ARCH_LABEL] == "amd64"
    assert all(p.spec.node_name == node.name for p in world.pods("web"))


def test_an_everywhere_daemonset_is_added_to_the_claim_requests() -> None:
    world = KWOKWorld()
    world.apply(KWOK_NODE_CLASS, four_cpu_pool(), daemonset("agent", "500m"), deployment("web", 1))
    world.settle()
    (claim,) = world.claims()
    assert claim.spec.resources.requests["cpu"] == "1500m"


STATIC_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: static-1
  labels: {kubernetes.io/hostname: static-1, kubernetes.io/os: linux}
status:
  allocatable: {cpu: "2", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
"""


def _pending(name: str, cpu: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=name),
        spec=PodSpec(
            containers=[
                Container(name="app", resources=ResourceRequirements(requests={"cpu": cpu}))
            ]
        ),
    )


def test_an_existing_node_keeps_room_for_daemons_not_running_there_yet() -> None:
    """The provisioner's own pass, before the DaemonSet controller has run its pod."""
    world = KWOKWorld()
    world.apply(KWOK_NODE_CLASS, four_cpu_pool(), STATIC_NODE)
    world.settle()  # the NodePool is ready
    world.apply(daemonset("agent", "1"))
    pod = _pending("big", "1500m")
    world.create(pod)
    created = world.sim.operator.provisioner.provision([pod])
    assert len(created) == 1  # 1.5 CPU + the agent's 1 CPU do not fit the 2 CPU node
    assert not any("static-1" in m for m in world.messages("Nominated"))


def test_daemons_already_running_on_a_node_are_not_counted_twice() -> None:
    world = KWOKWorld()
    world.apply(KWOK_NODE_CLASS, four_cpu_pool(), STATIC_NODE, daemonset("agent", "1"))
    world.settle()  # the agent now runs on static-1
    agents = [p for p in world.cluster.list(Pod) if p.spec.node_name == "static-1"]
    assert len(agents) == 1
    pod = _pending("fits", "900m")
    world.create(pod)
    created = world.sim.operator.provisioner.provision([pod])
    assert created == []
    assert any("static-1" in m for m in world.messages("Nominated"))


def memory_app(name: str, memory: str) -> str:
    return deployment(name, 1, cpu="100m", memory=memory)


#: The 4 CPU KWOK types (families c, s and m) asking for three families.
THREE_FAMILIES_OF_FOUR_CPUS = (
    "[{key: kubernetes.io/os, operator: In, values: [linux]},"
    " {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]},"
    " {key: karpenter.kwok.sh/instance-family, operator: Exists, minValues: 3},"
    ' {key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["4"]}]'
)


def _pool_with_min_families() -> str:
    return node_pool(weight=None, requirements=THREE_FAMILIES_OF_FOUR_CPUS)


def test_strict_min_values_keep_a_pod_pending() -> None:
    world = KWOKWorld()
    # 12Gi does not fit the 8Gi "c" family: two families remain.
    world.apply(KWOK_NODE_CLASS, _pool_with_min_families(), memory_app("big", "12Gi"))
    world.settle()
    assert world.claims() == []
    assert any("minValues requirement is not met" in m for m in world.messages("FailedScheduling"))


def test_best_effort_min_values_annotate_the_node_claim() -> None:
    world = KWOKWorld()
    world.sim.options = Options(min_values_policy="BestEffort")
    world.restart()
    world.apply(KWOK_NODE_CLASS, _pool_with_min_families(), memory_app("big", "12Gi"))
    world.settle()
    (claim,) = world.claims()
    assert claim.metadata.annotations[MIN_VALUES_RELAXED_ANNOTATION] == "true"
    family = next(r for r in claim.spec.requirements if r.key == FAMILY)
    assert family.min_values == 2
    assert all(p.spec.node_name for p in world.pods("big"))


def test_min_values_met_are_annotated_as_not_relaxed() -> None:
    world = KWOKWorld()
    world.sim.options = Options(min_values_policy="BestEffort")
    world.restart()
    world.apply(KWOK_NODE_CLASS, _pool_with_min_families(), memory_app("small", "1Gi"))
    world.settle()
    (claim,) = world.claims()
    assert claim.metadata.annotations[MIN_VALUES_RELAXED_ANNOTATION] == "false"
