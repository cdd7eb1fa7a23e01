"""Reserved capacity end to end: ``nodewright simulate`` with a KWOK catalog that has a
capacity reservation, as an EC2 On-Demand Capacity Reservation would be offered."""

from __future__ import annotations

from pathlib import Path

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

RESERVATION_LABEL = "karpenter.kwok.sh/reservation-id"

CATALOG = """
- name: m5.xlarge
  resources: {cpu: 4, memory: 16Gi, pods: 20}
  offerings:
    - {zone: zone-1, capacityType: reserved, price: 0.00001,
       reservationID: cr-0123, reservationCapacity: 2}
    - {zone: zone-1, capacityType: on-demand, price: 0.192}
    - {zone: zone-2, capacityType: on-demand, price: 0.192}
"""


def catalog(tmp_path: Path) -> str:
    path = tmp_path / "types.yaml"
    path.write_text(CATALOG)
    return f"kwok.instance-types-file={path}"


def test_pods_fill_the_reservation_first_then_wait_one_pass_for_on_demand(
    simulate: Simulate, tmp_path: Path
) -> None:
    manifests = node_pool() + KWOK_NODE_CLASS + deployment("app", 3, cpu="3", memory="1Gi")
    result = simulate(manifests, None, "--provider-option", catalog(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert not result.pending()
    nodes = result.nodes()
    reserved = [n for n in nodes if n["capacityType"] == "reserved"]
    assert len(reserved) == 2
    assert all(n["labels"][RESERVATION_LABEL] == "cr-0123" for n in reserved)
    (other,) = [n for n in nodes if n["capacityType"] != "reserved"]
    assert other["capacityType"] == "on-demand"
    assert RESERVATION_LABEL not in other["labels"]
    # The pod that waited for the reservation to be counted was never reported unschedulable.
    assert not result.events("FailedScheduling")
    assert not result.events("InsufficientCapacityError")
    assert len(result.events("Nominated")) == 3


def test_a_pod_that_selects_the_reservation_waits_when_it_is_full(
    simulate: Simulate, tmp_path: Path
) -> None:
    pinned = deployment(
        "pinned",
        3,
        cpu="3",
        memory="1Gi",
        extra_spec=f'nodeSelector: {{"{RESERVATION_LABEL}": cr-0123}}',
    )
    manifests = node_pool() + KWOK_NODE_CLASS + pinned
    result = simulate(manifests, None, "--provider-option", catalog(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert [n["capacityType"] for n in result.nodes()] == ["reserved", "reserved"]
    (waiting,) = result.pending()
    assert waiting["name"].startswith("pinned-")


def test_consolidation_moves_a_node_into_reserved_capacity_that_freed_up(
    simulate: Simulate, tmp_path: Path
) -> None:
    path = tmp_path / "one.yaml"
    path.write_text(CATALOG.replace("reservationCapacity: 2", "reservationCapacity: 1"))
    pool = node_pool(
        disruption="{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}"
    )
    manifests = (
        pool
        + KWOK_NODE_CLASS
        + deployment("first", 1, cpu="3", memory="1Gi")
        + deployment("second", 1, cpu="3", memory="1Gi")
    )
    scenario = "- delete: {kind: Deployment, name: first}\n"
    result = simulate(manifests, scenario, "--provider-option", f"kwok.instance-types-file={path}")
    assert result.exit_code == 0, result.stderr
    removed = {n["capacityType"]: n for n in result.report["removedNodes"]}
    # The reserved node emptied and went; the on-demand one was then replaced by a node in
    # the freed reservation, because it costs next to nothing.
    assert set(removed) == {"reserved", "on-demand"}
    assert removed["on-demand"]["disruptionReason"] == "Underutilized"
    (node,) = result.nodes()
    assert node["capacityType"] == "reserved"
    assert node["labels"][RESERVATION_LABEL] == "cr-0123"
    assert not result.pending()
