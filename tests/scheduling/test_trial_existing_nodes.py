"""Trial solves place pods on existing nodes where a solve from scratch places them.

A trial (:func:`~nodewright.scheduling.solver.trial.solve_trial`) skips work a full solve
does: nodes the pod fitted before the trial are not asked again about taints or labels, a
node it has placed pods on is asked only about the room, ports and volume slots left, and a
zonal constraint answers once per zone rather than once per node. Each case here is one
where skipping wrongly would send a pod elsewhere: a node left with exactly enough room, or
a zone that turns a pod away for one pod and takes the next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.api.labels import HOSTNAME_LABEL, ZONE_LABEL
from nodewright.scheduling.model import ExistingNode, PodRequest, SchedulingResult, SolverOptions
from nodewright.scheduling.resources import parse_resources
from nodewright.scheduling.solver.scheduler import solve
from nodewright.scheduling.solver.trial import SolveBase, solve_trial
from nodewright.scheduling.topology import PlacedPod
from nodewright.testing.catalog import ZONES
from tests.scheduling.scheduling_fakes import node_pool
from tests.scheduling.scheduling_fakes import pod as plain_pod
from tests.scheduling.test_topology import make_pod, spread

Z1, Z2, Z3 = ZONES
WIDGET = "example.com/widget"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_ARCH = "beta.kubernetes.io/arch"


def _node(
    name: str,
    zone: str | None = Z1,
    *,
    allocatable: Mapping[str, str] | None = None,
    requested: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> ExistingNode:
    shown = {HOSTNAME_LABEL: name, **(labels or {})}
    if zone is not None:
        shown[ZONE_LABEL] = zone
    return ExistingNode(
        name=name,
        labels=shown,
        taints=(),
        allocatable=parse_resources(
            dict(allocatable or {"cpu": "4", "memory": "4Gi", "pods": "110"})
        ),
        requested=parse_resources(dict(requested or {})),
    )


def _both(
    pods: Sequence[PodRequest],
    existing: Sequence[ExistingNode],
    placed: Sequence[PlacedPod] = (),
    leaving: Sequence[str] = (),
) -> SchedulingResult:
    """The trial's result, after checking a solve from scratch of the same cluster (without
    the nodes ``leaving`` and their pods) places every pod alike."""
    pool = node_pool()
    base = SolveBase(existing, [pool], SolverOptions(), placed)
    trial = solve_trial(base, pods, leaving, leaving)
    staying = [n for n in existing if n.name not in leaving]
    kept = [p for p in placed if p.node_name not in leaving]
    full = solve(pods, staying, [pool], placed=kept)
    assert _where(trial) == _where(full)
    assert trial.errors == full.errors
    return trial


def _where(result: SchedulingResult) -> dict[str, list[str]]:
    return {node: [p.name for p in pods] for node, pods in result.existing_nodes.items()}


def _placed(node: ExistingNode, labels: Mapping[str, str]) -> PlacedPod:
    return PlacedPod("default", dict(labels), node.name, node.labels)


# -- room left on a node the trial has placed pods on ------------------------------------------


def test_a_node_left_with_exactly_enough_cpu_takes_the_next_pod() -> None:
    node = _node("node-a", allocatable={"cpu": "2", "memory": "4Gi", "pods": "110"})
    pods = [plain_pod("1", "100Mi", name=f"p{i}") for i in range(3)]
    result = _both(pods, [node])
    assert _where(result) == {"node-a": ["p0", "p1"]}
    assert len(result.new_node_claims) == 1


def test_a_node_left_with_exactly_enough_of_an_extended_resource_takes_the_next_pod() -> None:
    node = _node("node-a", allocatable={"cpu": "8", "memory": "8Gi", "pods": "110", WIDGET: "2"})
    pods = [plain_pod("100m", extra={WIDGET: "1"}, name=f"p{i}") for i in range(3)]
    result = _both(pods, [node])
    assert _where(result) == {"node-a": ["p0", "p1"]}
    # No instance type has widgets: the third pod waits.
    assert list(result.errors) == ["default/p2"]


def test_a_node_with_exactly_one_pod_slot_left_takes_one_more_pod() -> None:
    node = _node(
        "node-a",
        allocatable={"cpu": "8", "memory": "8Gi", "pods": "3"},
        requested={"pods": "1"},
    )
    pods = [plain_pod("100m", name=f"p{i}") for i in range(3)]
    result = _both(pods, [node])
    assert _where(result) == {"node-a": ["p0", "p1"]}


def test_pods_fill_the_nodes_that_stay_when_a_candidate_leaves() -> None:
    nodes = [
        _node("node-a", allocatable={"cpu": "1", "memory": "4Gi", "pods": "110"}),
        _node("node-b", allocatable={"cpu": "2", "memory": "4Gi", "pods": "110"}),
        _node("node-c", allocatable={"cpu": "1", "memory": "4Gi", "pods": "110"}),
    ]
    pods = [plain_pod("500m", name=f"p{i}") for i in range(6)]
    result = _both(pods, nodes, leaving=["node-a"])
    assert _where(result) == {"node-b": ["p0", "p1", "p2", "p3"], "node-c": ["p4", "p5"]}


# -- zonal constraints answered once per zone -------------------------------------------------


def _web(count: int) -> list[PodRequest]:
    return [
        make_pod(labels={"app": "web"}, cpu="100m", spread=[spread(ZONE_LABEL)])
        for _ in range(count)
    ]


def test_a_zone_that_turned_one_pod_away_takes_the_next_once_the_others_catch_up() -> None:
    # Zone 2 holds two web pods: the first pod goes to zone 1, the second finds zones 1 and
    # 2 too full and goes to zone 3, the third may use zone 1 again.
    nodes = [_node("node-1a", Z1), _node("node-1b", Z1), _node("node-2", Z2), _node("node-3", Z3)]
    running = [_placed(nodes[2], {"app": "web"}), _placed(nodes[2], {"app": "web"})]
    pods = _web(3)
    result = _both(pods, nodes, running)
    assert _where(result) == {
        "node-1a": [pods[0].name, pods[2].name],
        "node-3": [pods[1].name],
    }


def test_a_later_node_of_an_allowed_zone_takes_the_pod() -> None:
    # Zone 1 is full of web pods: its nodes come first and turn the pod away; the second
    # node of zone 2, after a zone-2 node without room, takes it.
    nodes = [
        _node("node-1a", Z1),
        _node("node-1b", Z1),
        _node(
            "node-2a",
            Z2,
            allocatable={"cpu": "4", "memory": "4Gi", "pods": "110"},
            requested={"cpu": "4"},
        ),
        _node("node-2b", Z2),
        _node("node-3", Z3),
    ]
    running = [_placed(nodes[0], {"app": "web"}), _placed(nodes[4], {"app": "web"})]
    (web,) = _web(1)
    assert _where(_both([web], nodes, running)) == {"node-2b": [web.name]}


def test_a_node_without_the_zone_label_never_takes_a_zonal_spread_pod() -> None:
    nodes = [_node("node-0", None), _node("node-1", Z1), _node("node-2", Z2)]
    pods = _web(2)
    result = _both(pods, nodes)
    assert _where(result) == {"node-1": [pods[0].name], "node-2": [pods[1].name]}


def test_a_node_labelled_with_the_deprecated_zone_key_is_judged_by_its_requirements() -> None:
    # The beta zone label stands for the zone key in the node's requirements, not in its
    # labels: such a node is answered for alone, and alike in both solves.
    nodes = [
        _node("node-0", None, labels={"failure-domain.beta.kubernetes.io/zone": Z1}),
        _node("node-1", Z1),
        _node("node-2", Z2),
    ]
    pods = _web(3)
    result = _both(pods, nodes)
    assert _where(result) == {"node-1": [pods[0].name], "node-2": [pods[1].name]}
    assert [p.name for p in result.new_node_claims[0].pods] == [pods[2].name]


def test_a_node_that_turned_a_pod_away_for_now_takes_a_later_pod_of_the_same_kind() -> None:
    # Zone 1 stays too full throughout, so node-1 leads and never moves out of the way;
    # node-2 turns the first pod away (zone 2 is ahead of zone 3) and takes the second once
    # zone 3 has caught up. Only lasting refusals may be remembered past the leading nodes.
    # Its deprecated zone label (the same zone) leaves its zone answered by label.
    nodes = [
        _node("node-1", Z1),
        _node("node-2", Z2, labels={BETA_ZONE: Z2}),
        _node("node-3", Z3, allocatable={"cpu": "1", "memory": "4Gi", "pods": "110"}),
    ]
    web = {"app": "web"}
    running = [_placed(nodes[0], web), _placed(nodes[0], web), _placed(nodes[1], web)]
    pods = [make_pod(labels=web, cpu="1", spread=[spread(ZONE_LABEL)]) for _ in range(2)]
    result = _both(pods, nodes, running)
    assert _where(result) == {"node-2": [pods[1].name], "node-3": [pods[0].name]}


# -- deprecated label keys: decided per key ---------------------------------------------------


def test_nodes_with_kubelets_deprecated_labels_answer_zonal_spreads_by_zone() -> None:
    # Kubelet labels every node beta.kubernetes.io/arch (and os, instance-type): those stand
    # for other keys than the zone, so a zone spread still answers once per zone. Zone 1 is
    # ahead: its three nodes turn the pods away, zones 2 and 3 take them in turn.
    kubelet = {BETA_ARCH: "amd64", "beta.kubernetes.io/os": "linux"}
    nodes = [
        _node("node-1a", Z1, labels=kubelet),
        _node("node-1b", Z1, labels=kubelet),
        _node("node-1c", Z1, labels=kubelet),
        _node("node-2", Z2, labels=kubelet),
        _node("node-3", Z3, labels=kubelet),
    ]
    web = {"app": "web"}
    running = [_placed(nodes[0], web), _placed(nodes[1], web)]
    pods = [make_pod(labels=web, cpu="100m", spread=[spread(ZONE_LABEL)]) for _ in range(3)]
    result = _both(pods, nodes, running)
    assert _where(result) == {
        "node-2": [pods[0].name, pods[2].name],
        "node-3": [pods[1].name],
    }


def test_a_node_whose_deprecated_zone_label_disagrees_is_not_answered_for_its_zone() -> None:
    # node-1a says zone 1 under the current key and zone 2 under the deprecated one: its
    # requirement on the zone allows neither, so a zone spread turns it away. node-1b, in
    # zone 1 alone, takes the pod: an answer kept for zone 1 from node-1a would refuse it.
    nodes = [
        _node("node-1a", Z1, labels={BETA_ZONE: Z2}),
        _node("node-1b", Z1),
        _node("node-2", Z2),
    ]
    (web,) = _web(1)
    assert _where(_both([web], nodes)) == {"node-1b": [web.name]}
