"""CapacityBuffers (feature gate ``CapacityBuffer``): a buffer becomes virtual pods that
provisioning places with the pending pods, so headroom nodes launch and stay; its status says
whether its pod shape resolved and whether it fits existing capacity."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nodewright.api.capacitybuffer import CapacityBuffer, PodTemplate
from nodewright.api.core import Pod
from nodewright.api.meta import Condition, find_condition
from nodewright.controllers.options import Options
from tests.builders import deployment, pod_template
from tests.conftest import Simulate
from tests.disruption.harness import Harness

ON = Options(capacity_buffer=True)


def template(name: str = "chunk", cpu: str = "1500m") -> PodTemplate:
    return PodTemplate.model_validate(
        {
            "metadata": {"name": name, "namespace": "default"},
            "template": pod_template("headroom", cpu, image="pause"),
        }
    )


def buffer(name: str = "headroom", **spec: Any) -> CapacityBuffer:
    return CapacityBuffer.model_validate(
        {"metadata": {"name": name, "namespace": "default"}, "spec": spec}
    )


def status_of(harness: Harness, name: str = "headroom") -> CapacityBuffer:
    found = harness.cluster.get(CapacityBuffer, name, "default")
    assert found is not None
    return found


def condition(harness: Harness, kind: str, name: str = "headroom") -> tuple[str, str, str]:
    found: Condition | None = find_condition(status_of(harness, name).status.conditions, kind)
    assert found is not None, kind
    return found.status, found.reason or "", found.message or ""


def buffer_events(harness: Harness) -> list[tuple[str, str]]:
    return [
        event
        for reason in ("Nominated", "FailedScheduling")
        for event in harness.event_log(reason)
        if "capacity-buffer-" in event[0]
    ]


def test_a_buffer_launches_headroom_that_consolidation_leaves_alone(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=ON)
    harness.apply(template())
    harness.apply(buffer(podTemplateRef={"name": "chunk"}, replicas=2))
    harness.run(60)
    claims = harness.claim_names()
    assert claims, "nodes launch for the buffer's two 1.5-CPU chunks"
    assert condition(harness, "ReadyForProvisioning") == (
        "True",
        "Resolved",
        "Pod template resolved successfully",
    )
    assert status_of(harness).status.replicas == 2
    assert status_of(harness).status.pod_template_ref is not None
    harness.run(600)
    assert harness.claim_names() == claims, "empty of real pods, but holding the buffer"
    assert condition(harness, "Provisioning") == (
        "True",
        "FitsExistingCapacity",
        "All 2 virtual pods fit on existing capacity",
    )
    assert harness.cluster.list(Pod) == [], "virtual pods are never written"
    assert buffer_events(harness) == []
    # Virtual pods are placed on the headroom on every pass, but never nominate it: a
    # nominated node could not be disrupted at all (drift, expiry) while the buffer lasts.
    assert [
        event
        for event in harness.event_log("DisruptionBlocked")
        if event[1] == "Node is nominated for a pending pod"
    ] == []


def test_a_pod_using_the_headroom_makes_the_buffer_ask_for_more(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=ON)
    harness.apply(template())
    harness.apply(buffer(podTemplateRef={"name": "chunk"}, replicas=1))
    harness.run(60)
    (first,) = harness.claim_names()
    (pod,) = harness.bind_pods(None, 1, cpu="1500m")
    harness.run(60)
    bound = harness.cluster.get(Pod, pod, "default")
    assert bound is not None
    assert bound.spec.node_name == first, "the real pod lands on the headroom at once"
    assert len(harness.claim_names()) == 2, "and a new node restores the headroom"
    harness.run(600)
    assert len(harness.claim_names()) == 2
    assert condition(harness, "Provisioning")[:2] == ("True", "FitsExistingCapacity")


def test_without_the_gate_buffers_are_ignored(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    harness.apply(template())
    harness.apply(buffer(podTemplateRef={"name": "chunk"}, replicas=2))
    harness.run(60)
    assert harness.claim_names() == set()
    assert status_of(harness).status.conditions == []


def test_a_missing_pod_template_is_not_ready(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=ON)
    harness.apply(buffer(podTemplateRef={"name": "missing"}, replicas=2))
    harness.bind_pods(None, 1)  # a provisioning pass runs for a real pod
    harness.run(60)
    assert len(harness.claim_names()) == 1, "a node for the real pod only"
    assert condition(harness, "ReadyForProvisioning") == (
        "False",
        "PodTemplateNotFound",
        'podtemplates "missing" not found',
    )
    assert condition(harness, "Provisioning") == (
        "False",
        "NotReadyForProvisioning",
        "Buffer is not ReadyForProvisioning",
    )


def test_zero_replicas_is_an_empty_buffer(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=ON)
    harness.apply(template())
    harness.apply(buffer(podTemplateRef={"name": "chunk"}, replicas=0))
    harness.bind_pods(None, 1)  # a provisioning pass runs for a real pod
    harness.run(60)
    assert condition(harness, "Provisioning") == (
        "False",
        "BufferEmpty",
        "Buffer has zero desired replicas",
    )


def test_replicas_follow_percentage_replicas_and_limits(tmp_path: Path) -> None:
    harness = Harness(tmp_path, options=ON)
    harness.apply(deployment("web", 5, "100m", image="pause"))
    harness.apply(template("one-cpu", cpu="1"))
    scalable = {"kind": "Deployment", "name": "web"}
    harness.apply(buffer("share", scalableRef=scalable, percentage=50))
    harness.apply(buffer("larger", scalableRef=scalable, percentage=10, replicas=2))
    harness.apply(buffer("limited", podTemplateRef={"name": "one-cpu"}, limits={"cpu": "3"}))
    harness.apply(
        buffer("capped", podTemplateRef={"name": "one-cpu"}, replicas=5, limits={"cpu": "2500m"})
    )
    harness.apply(buffer("elsewhere", scalableRef={"kind": "DaemonSet", "name": "x"}, replicas=1))
    harness.apply(buffer("gone", scalableRef={"kind": "Deployment", "name": "gone"}, replicas=1))
    harness.run(30)
    replicas = {
        name: status_of(harness, name).status.replicas
        for name in ("share", "larger", "limited", "capped")
    }
    assert replicas == {"share": 3, "larger": 2, "limited": 3, "capped": 2}
    assert condition(harness, "ReadyForProvisioning", "elsewhere") == (
        "False",
        "ResolutionFailed",
        'unsupported kind "DaemonSet"',
    )
    assert condition(harness, "ReadyForProvisioning", "gone") == (
        "False",
        "ScalableRefNotFound",
        'deployments.apps "gone" not found',
    )


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "capacity-buffer"


def test_the_example_keeps_headroom_only_with_the_gate(simulate: Simulate) -> None:
    manifests = (EXAMPLE / "manifests" / "nodepool.yaml").read_text() + "---\n"
    manifests += (EXAMPLE / "manifests" / "buffer.yaml").read_text()
    off = simulate(manifests)
    assert off.exit_code == 0
    assert off.nodes() == []
    on = simulate(manifests, None, "--feature-gates", "CapacityBuffer=true")
    assert on.exit_code == 0
    (node,) = on.nodes()
    assert node["pods"] == [], "a node held ready for two 1-CPU chunks, no pod on it"
    assert on.events("Nominated") == []


def test_the_example_scenario_restores_the_headroom(simulate: Simulate) -> None:
    manifests = (EXAMPLE / "manifests" / "nodepool.yaml").read_text() + "---\n"
    manifests += (EXAMPLE / "manifests" / "buffer.yaml").read_text()
    scenario = (
        (EXAMPLE / "scenario.yaml")
        .read_text()
        .replace("apply: web.yaml", f"apply: {EXAMPLE / 'web.yaml'}")
    )
    result = simulate(manifests, scenario, "--feature-gates", "CapacityBuffer=true")
    assert result.exit_code == 0
    assert result.pending() == []
    with_web = [n for n in result.nodes() if n["pods"]]
    (headroom,) = with_web
    assert len(headroom["pods"]) == 2, "web landed on the headroom"
    assert len(result.nodes()) == 2, "and a node was added to keep one more chunk ready"
