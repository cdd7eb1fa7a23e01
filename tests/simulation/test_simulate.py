"""``nodewright simulate`` end to end: manifests in, nodes and bound pods out.

These drive the real controllers, the KWOK provider (loaded through its entry point) and the
embedded cluster, and assert only what a user sees: the report, the log lines, the exit code.
"""

from __future__ import annotations

from pathlib import Path

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_example_binds_every_inflate_pod(simulate: Simulate) -> None:
    example = ROOT / "examples" / "inflate"
    result = simulate(
        (example / "manifests" / "nodepool.yaml").read_text()
        + "\n---\n"
        + (example / "manifests" / "inflate.yaml").read_text(),
        (example / "scenario.yaml").read_text(),
    )
    assert result.exit_code == 0, result.stderr
    inflate = [p for p in result.pods() if p["name"].startswith("inflate-")]
    assert len(inflate) == 10
    assert all(p["node"] for p in inflate)
    assert result.pending() == []
    assert result.nodes(), "nodes were launched"
    assert result.report["totalPricePerHour"] > 0
    assert "found provisionable pod(s)\tPods=" in result.stdout
    assert "computed new nodeclaim(s) to fit pod(s)\tnodeclaims=1 pods=10" in result.stdout
    assert "launched nodeclaim\tNodeClaim=default-" in result.stdout
    assert "Bound 10 pod(s) to node" in result.stdout
    assert "PENDING POD" not in result.stdout


def test_the_cheapest_fitting_instance_type_is_launched(simulate: Simulate) -> None:
    pool = node_pool(
        requirements="[{key: kubernetes.io/arch, operator: In, values: [amd64]},"
        " {key: kubernetes.io/os, operator: In, values: [linux]},"
        " {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]"
    )
    # 1.5 CPU does not fit a 1-CPU type; the 2-CPU "c" family is the cheapest that does.
    result = simulate(pool + KWOK_NODE_CLASS + deployment("web", 1, cpu="1500m", memory="1Gi"))
    assert result.exit_code == 0, result.stderr
    (node,) = result.nodes()
    assert node["instanceType"] == "c-2x-amd64-linux"
    assert node["capacityType"] == "on-demand"
    assert node["nodePool"] == "default"
    assert node["pricePerHour"] is not None
    assert node["pricePerHour"] > 0


def test_spot_is_chosen_when_the_pool_allows_it_because_it_is_cheaper(simulate: Simulate) -> None:
    pool = node_pool(requirements="[{key: kubernetes.io/os, operator: In, values: [linux]}]")
    result = simulate(pool + KWOK_NODE_CLASS + deployment("web", 1, cpu="500m"))
    (node,) = result.nodes()
    assert node["capacityType"] == "spot"


def test_pods_are_packed_first_fit_decreasing_onto_few_nodes(simulate: Simulate) -> None:
    pool = node_pool(
        requirements="[{key: kubernetes.io/os, operator: In, values: [linux]},"
        ' {key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["4"]}]'
    )
    # Each 4-CPU node fits 3.9 CPU: one 3-CPU pod and three 300m pods share a node.
    manifests = (
        pool + KWOK_NODE_CLASS + deployment("big", 2, cpu="3") + deployment("small", 6, cpu="300m")
    )
    result = simulate(manifests)
    assert result.exit_code == 0, result.stderr
    assert result.pending() == []
    assert len(result.nodes()) == 2
    for node in result.nodes():
        names = [p.split("/")[1] for p in node["pods"]]
        assert sum(n.startswith("big-") for n in names) == 1
        assert sum(n.startswith("small-") for n in names) == 3


def test_node_selector_and_required_node_affinity_are_honoured(simulate: Simulate) -> None:
    pool = node_pool(requirements="[{key: kubernetes.io/os, operator: In, values: [linux]}]")
    zoned = deployment(
        "zoned",
        2,
        cpu="500m",
        extra_spec="nodeSelector: {topology.kubernetes.io/zone: test-zone-c}",
    )
    arm = deployment(
        "arm",
        1,
        cpu="500m",
        extra_spec="""
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
                - matchExpressions:
                    - {key: kubernetes.io/arch, operator: In, values: [arm64]}
        """,
    )
    result = simulate(pool + KWOK_NODE_CLASS + zoned + arm)
    assert result.exit_code == 0, result.stderr
    assert result.pending() == []
    by_pod = {p: n for n in result.nodes() for p in n["pods"]}
    for key, node in by_pod.items():
        if "/zoned-" in key:
            assert node["zone"] == "test-zone-c"
        if "/arm-" in key:
            assert node["labels"]["kubernetes.io/arch"] == "arm64"


def test_the_heavier_node_pool_wins(simulate: Simulate) -> None:
    light = node_pool("light", weight=1, labels="{pool: light}")
    heavy = node_pool("heavy", weight=50, labels="{pool: heavy}")
    result = simulate(light + heavy + KWOK_NODE_CLASS + deployment("web", 3, cpu="1"))
    assert result.exit_code == 0, result.stderr
    assert {n["nodePool"] for n in result.nodes()} == {"heavy"}


def test_node_pool_limits_leave_pods_pending_with_a_reason(simulate: Simulate) -> None:
    pool = node_pool(
        requirements='[{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["2"]}]',
        limits="{cpu: 4}",
    )
    # Each pod needs its own 2-CPU node; the limit of 4 CPU allows two such nodes.
    result = simulate(pool + KWOK_NODE_CLASS + deployment("web", 4, cpu="1500m"))
    assert result.exit_code == 0, result.stderr
    assert len(result.nodes()) == 2
    pending = result.pending()
    assert len(pending) == 2
    for pod in pending:
        assert "exceed limits for nodepool" in pod["reason"]
    assert "PENDING POD" in result.stdout


def test_taints_need_tolerations(simulate: Simulate) -> None:
    tainted = node_pool("gpu", taints="[{key: dedicated, value: gpu, effect: NoSchedule}]")
    tolerant = deployment(
        "tolerant",
        1,
        cpu="500m",
        extra_spec="tolerations: [{key: dedicated, value: gpu, effect: NoSchedule}]",
    )
    result = simulate(tainted + KWOK_NODE_CLASS + tolerant + deployment("plain", 1, cpu="500m"))
    assert result.exit_code == 0, result.stderr
    (node,) = result.nodes()
    assert node["nodePool"] == "gpu"
    assert [p.split("/")[1].split("-")[0] for p in node["pods"]] == ["tolerant"]
    (pending,) = result.pending()
    assert pending["name"].startswith("plain-")
    assert 'incompatible with nodepool "gpu"' in pending["reason"]
    assert "did not tolerate" in pending["reason"]
    assert "dedicated=gpu:NoSchedule" in pending["reason"]


def test_a_pod_nothing_fits_is_pending_with_karpenters_wording(simulate: Simulate) -> None:
    pool = node_pool(requirements="[{key: kubernetes.io/arch, operator: In, values: [amd64]}]")
    result = simulate(pool + KWOK_NODE_CLASS + deployment("huge", 1, cpu="1000"))
    assert result.exit_code == 0, result.stderr
    assert result.nodes() == []
    (pod,) = result.pending()
    assert pod["reason"].startswith('Failed to schedule pod, incompatible with nodepool "default"')
    assert "no instance type satisfied resources" in pod["reason"]
    assert '"cpu":"1k"' in pod["reason"] or '"cpu":"1000"' in pod["reason"]
    assert "kubernetes.io/arch In [amd64]" in pod["reason"]
    assert result.events("FailedScheduling")


def test_nominated_events_name_the_nodeclaim(simulate: Simulate) -> None:
    result = simulate(node_pool() + KWOK_NODE_CLASS + deployment("web", 2, cpu="500m"))
    nominated = result.events("Nominated")
    assert len(nominated) == 2
    node_names = {n["name"] for n in result.nodes()}
    for event in nominated:
        assert event["message"].startswith("Pod should schedule on: nodeclaim/")
        assert event["message"].removeprefix("Pod should schedule on: nodeclaim/") in node_names


def test_launched_nodes_carry_karpenters_labels(simulate: Simulate) -> None:
    result = simulate(node_pool() + KWOK_NODE_CLASS + deployment("web", 1, cpu="500m"))
    (node,) = result.nodes()
    labels = node["labels"]
    for key in (
        "karpenter.sh/nodepool",
        "karpenter.sh/capacity-type",
        "karpenter.sh/registered",
        "karpenter.sh/initialized",
        "karpenter.kwok.sh/kwoknodeclass",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "kubernetes.io/hostname",
    ):
        assert key in labels, key
    assert labels["karpenter.sh/initialized"] == "true"


def test_a_node_pool_matching_no_instance_type_says_so(simulate: Simulate) -> None:
    pool = node_pool(
        requirements="[{key: karpenter.kwok.sh/instance-family, operator: In, values: [zz]}]"
    )
    result = simulate(pool + KWOK_NODE_CLASS + deployment("web", 1))
    assert result.exit_code == 0, result.stderr
    (event,) = result.events("NoCompatibleInstanceTypes")
    assert event["object"] == "nodepool/default"
    (pod,) = result.pending()
    assert "requirements filtered out all compatible available instance types" in pod["reason"]


def test_deleting_a_node_by_hand_drains_it_and_terminates_its_instance(simulate: Simulate) -> None:
    from nodewright_kwok.plugin import ledger

    manifests = node_pool() + KWOK_NODE_CLASS + deployment("web", 3, cpu="1")
    first = simulate(manifests)
    (node,) = first.nodes()
    result = simulate(manifests, f"- delete: {{kind: Node, name: {node['name']}}}\n")
    assert result.exit_code == 0, result.stderr
    assert f"tainted node\tNode={node['name']} taint.Key=" in result.stdout
    assert len(result.events("Evicted")) == 3
    (replacement,) = result.nodes()
    assert replacement["name"] != node["name"]
    assert result.pending() == []
    running = [i for i in ledger.instances() if i.state != "terminated"]
    assert [i.node_claim for i in running] == [replacement["name"]]
