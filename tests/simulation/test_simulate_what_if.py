"""``nodewright simulate --from-dump``: a snapshot of a real cluster (``kubectl get -o yaml``)
loaded into the embedded cluster, and the what-if a user reads: what the nodes cost now, which
would be removed or replaced and why, what the cluster would cost, which pods find no place."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.simulation.conftest import DUMP, RunDump, example, item

#: The example's KWOK prices: c-4x-amd64-linux and c-8x-amd64-linux on demand.
C4_ON_DEMAND = 0.1086
C8_ON_DEMAND = 0.2172


def test_the_empty_node_is_removed_and_the_projected_cost_drops_by_its_price(
    run_dump: RunDump,
) -> None:
    run = run_dump(DUMP)
    assert run.exit_code == 0, run.stderr
    assert f"  now:       4 node(s), ${C4_ON_DEMAND * 2 + C8_ON_DEMAND:.4f}/h" in run.stdout
    assert "(3 managed, 1 unmanaged)" in run.stdout
    assert (
        f"  projected: 3 node(s), ${C4_ON_DEMAND * 2:.4f}/h (saves ${C8_ON_DEMAND:.4f}/h, 50%)"
        in run.stdout
    )
    row = next(
        line for line in run.stdout.splitlines() if line.startswith("kwok-c ") and "removed" in line
    )
    assert row.split()[-4:] == ["removed", "Empty", "(Emptiness/Delete)", "-"]  # replaced by none
    assert f"    ${C8_ON_DEMAND:.4f}/h  removing 1 node(s)" in run.stdout
    assert "modelled" not in run.stdout  # KWOK's prices are its own, not estimates
    assert "not priced (no catalog offering, left out of the totals): static-1" in run.stdout

    what_if = run.what_if
    assert what_if["currentPricePerHour"] == pytest.approx(
        C4_ON_DEMAND * 2 + C8_ON_DEMAND, abs=1e-4
    )
    assert what_if["projectedPricePerHour"] == pytest.approx(C4_ON_DEMAND * 2, abs=1e-4)
    assert run.changes() == [("kwok-c", "removed", "Empty")]
    assert what_if["changes"][0]["replacedBy"] == []
    assert what_if["savings"]["removal"] == {
        "perHour": pytest.approx(C8_ON_DEMAND, abs=1e-4),
        "nodes": 1,
        "modelled": False,
    }
    assert what_if["savings"]["rightSizing"]["perHour"] == 0
    assert what_if["addedNodes"] == []
    assert what_if["unplacedPods"] == []
    managed = {n["name"]: n["managed"] for n in what_if["currentNodes"]}
    # kwok-b and kwok-c have no NodeClaim in the dump: they are adopted all the same
    assert managed == {"kwok-a": True, "kwok-b": True, "kwok-c": True, "static-1": False}


def test_the_web_page_shows_the_what_if(run_dump: RunDump, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    run = run_dump(DUMP, "--html", str(page))
    assert run.exit_code == 0, run.stderr
    html = page.read_text()
    assert "<h2>What-if for " in html
    assert f"Saves ${C8_ON_DEMAND:.2f}/h (50%)" in html
    assert f"projected: 3 node(s), ${C4_ON_DEMAND * 2:.4f}/h" in html
    assert f"${C8_ON_DEMAND:.4f}/h</span>removing 1 node(s)" in html
    changes = html.split('id="what-if-changes"')[1].split("</table>")[0]
    assert "<span>kwok-c</span>" in changes
    assert "<td>removed</td><td>Empty</td><td>-</td>" in changes
    # the control-plane node has no price: said so, and left out of every total
    assert "left out of the totals: static-1" in html
    assert "$0.2172/h (1 not priced, left out)" in html
    nodes = html.split('id="nodes"')[1].split("</table>")[0]
    static = nodes.split("<span>static-1</span>")[1].split("</tr>")[0]
    assert '<td class="num">not priced</td>' in static
    # the snapshot's nodes are existing ones, not launched at the start of the run
    assert nodes.count("<td>existing</td>") == 3
    removed = html.split('id="removed-nodes"')[1].split("</table>")[0]
    assert "<td>existing</td><td>45 s</td>" in removed


def test_a_json_dump_gives_the_same_what_if(run_dump: RunDump, tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps(example()))
    run = run_dump(dump)
    assert run.exit_code == 0, run.stderr
    assert run.changes() == [("kwok-c", "removed", "Empty")]
    assert run.what_if["projectedPricePerHour"] == pytest.approx(C4_ON_DEMAND * 2, abs=1e-4)

    dump.write_text('{"apiVersion": "v1", "kind": "List", "items": [')
    run = run_dump(dump)
    assert run.exit_code == 2
    (error,) = _errors(run.stderr)
    assert error.startswith(f"error: {dump}: malformed JSON: ")


def test_loading_rolls_no_workload_and_keeps_every_pod_where_it_ran(run_dump: RunDump) -> None:
    run = run_dump(DUMP)
    placed = {p["name"]: p["node"] for p in run.report["pods"]}
    assert placed == {
        "web-7d4b9c8f6d-p0abc": "kwok-a",
        "web-7d4b9c8f6d-q1abc": "kwok-a",
        "web-7d4b9c8f6d-r2abc": "kwok-a",
        "web-7d4b9c8f6d-s3abc": "kwok-b",
        "web-7d4b9c8f6d-t4abc": "kwok-b",
        "etcd-static-1": "static-1",
    }
    # the real cluster's NodeClaim had its NodePool's hash: not drifted under nodewright's
    assert not [e for e in run.report["events"] if "Drift" in e["message"]]


def test_an_underutilized_node_is_removed_when_its_pods_fit_elsewhere(run_dump: RunDump) -> None:
    dump = example()
    pool = item(dump, "NodePool", "default")
    pool["spec"]["disruption"]["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
    # one of kwok-a's pods runs on kwok-c instead: kwok-b has room for it
    item(dump, "Pod", "web-7d4b9c8f6d-r2abc")["spec"]["nodeName"] = "kwok-c"
    run = run_dump(dump)
    assert run.exit_code == 0, run.stderr
    assert run.changes() == [("kwok-c", "removed", "Underutilized")]
    assert run.what_if["projectedPricePerHour"] == pytest.approx(C4_ON_DEMAND * 2, abs=1e-4)
    assert not run.report["pods"] or all(p["node"] for p in run.report["pods"])


def test_a_node_its_nodepool_no_longer_allows_is_replaced_as_drifted(run_dump: RunDump) -> None:
    dump = example()
    node = item(dump, "Node", "kwok-b")
    node["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot"  # the pool wants on-demand
    run = run_dump(dump)
    assert run.exit_code == 0, run.stderr
    # its pods fit on the empty kwok-c: deleted, not replaced
    assert run.changes() == [("kwok-b", "removed", "Drifted")]
    on_c = [p for p in run.report["pods"] if p["node"] == "kwok-c"]
    assert len(on_c) == 2  # kwok-b's two pods, recreated by their ReplicaSet

    dump["items"].remove(item(dump, "Node", "kwok-c"))
    run = run_dump(dump)
    assert run.exit_code == 0, run.stderr
    assert run.changes() == [("kwok-b", "replaced", "Drifted")]
    (added,) = run.what_if["addedNodes"]
    assert added["capacityType"] == "on-demand"
    assert len([p for p in run.report["pods"] if p["node"] == added["name"]]) == 2


def test_a_nodeclaim_the_real_cluster_saw_drifted_stays_drifted(run_dump: RunDump) -> None:
    dump = example()
    claim = item(dump, "NodeClaim", "default-x7k2p")
    claim["metadata"]["annotations"]["karpenter.sh/nodepool-hash"] = "1234"  # an older template
    run = run_dump(dump)
    # its three pods fit on the empty kwok-c
    assert run.changes() == [("kwok-a", "removed", "Drifted")]


def test_pods_that_find_no_place_are_reported_with_the_reason(run_dump: RunDump) -> None:
    dump = example()
    pending = copy.deepcopy(item(dump, "Pod", "etcd-static-1"))
    pending["metadata"]["name"] = "huge"
    pending["metadata"]["uid"] = "uid-pod-huge"
    del pending["spec"]["nodeName"]
    pending["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500"
    pending["status"] = {"phase": "Pending"}
    dump["items"].append(pending)
    run = run_dump(dump)
    assert run.exit_code == 0, run.stderr
    (unplaced,) = run.what_if["unplacedPods"]
    assert (unplaced["namespace"], unplaced["name"]) == ("default", "huge")
    assert unplaced["reason"]
    assert "1 pod(s) could not be placed" in run.stdout


def test_manifests_given_with_a_dump_are_applied_over_it(run_dump: RunDump, tmp_path: Path) -> None:
    # what if the NodePool never consolidated?
    pool = item(example(), "NodePool", "default")
    pool["spec"]["disruption"]["consolidateAfter"] = "Never"
    for key in ("uid", "resourceVersion", "managedFields", "creationTimestamp", "annotations"):
        pool["metadata"].pop(key, None)
    pool.pop("status")
    override = tmp_path / "pool.yaml"
    override.write_text(yaml.safe_dump(pool))
    run = run_dump(DUMP, str(override))
    assert run.exit_code == 0, run.stderr
    assert run.changes() == []
    assert run.what_if["projectedPricePerHour"] == run.what_if["currentPricePerHour"]


# -- bad input ----------------------------------------------------------------------------------


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_a_dump_that_is_not_a_list_is_refused_with_one_line(run_dump: RunDump) -> None:
    node = item(example(), "Node", "kwok-a")
    run = run_dump(node)
    assert run.exit_code == 2
    (error,) = _errors(run.stderr)
    assert "a dump is one List" in error
    assert "1 document(s) of kind 'Node'" in error
    assert run.stdout == ""


def test_a_malformed_object_in_a_dump_is_named_with_its_field(run_dump: RunDump) -> None:
    dump = example()
    item(dump, "Pod", "web-7d4b9c8f6d-p0abc")["spec"]["containers"] = "pause"
    run = run_dump(dump)
    assert run.exit_code == 2
    (error,) = _errors(run.stderr)
    assert 'Pod "web-7d4b9c8f6d-p0abc"' in error
    assert "spec.containers" in error
    assert "Traceback" not in run.stderr


def test_a_list_whose_items_are_not_objects_is_refused(run_dump: RunDump) -> None:
    run = run_dump({"apiVersion": "v1", "kind": "List", "items": ["just a string"]})
    assert run.exit_code == 2
    (error,) = _errors(run.stderr)
    assert "items[0]: expected an object" in error


def test_kinds_a_simulation_does_not_use_are_skipped_and_counted(run_dump: RunDump) -> None:
    dump = example()
    dump["items"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web", "namespace": "x"}}
    )
    run = run_dump(dump)
    assert run.exit_code == 0, run.stderr
    assert "skipped kinds a simulation does not use: ConfigMap x1" in run.stdout


def test_a_missing_dump_file_and_a_kubeconfig_without_from_cluster_exit_2(
    run_dump: RunDump, tmp_path: Path
) -> None:
    run = run_dump(tmp_path / "nope.yaml")
    assert run.exit_code == 2
    (error,) = _errors(run.stderr)
    assert "nope.yaml" in error
    run = run_dump(DUMP, "--kubeconfig", str(tmp_path / "k"))
    assert run.exit_code == 2
    assert _errors(run.stderr) == ["error: --kubeconfig and --context go with --from-cluster"]


def test_a_cluster_and_a_dump_together_are_refused(run_dump: RunDump) -> None:
    run = run_dump(DUMP, "--from-cluster")
    assert run.exit_code == 2
    assert _errors(run.stderr) == [
        "error: --from-cluster and --from-dump: give one snapshot, not both"
    ]


def _owned_pod(
    dump: dict[str, Any], name: str, node: str, owner: tuple[str, str, str], spec: dict[str, Any]
) -> dict[str, Any]:
    """A running pod of ``owner`` (apiVersion, kind, name) on ``node``, as the server lists it."""
    pod = copy.deepcopy(item(dump, "Pod", "etcd-static-1"))
    api_version, kind, owner_name = owner
    pod["metadata"].update(
        name=name,
        uid=f"uid-{name}",
        labels=dict(spec["metadata"]["labels"]),
        ownerReferences=[
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": owner_name,
                "uid": f"uid-{owner_name}",
                "controller": True,
            }
        ],
    )
    pod["spec"].update(copy.deepcopy(spec["spec"]), nodeName=node)
    return pod


def test_daemonset_statefulset_and_job_pods_are_kept_not_duplicated(run_dump: RunDump) -> None:
    dump = example()
    items = dump["items"]
    agent = {
        "metadata": {"labels": {"app": "agent"}},
        "spec": {
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {"name": "agent", "image": "agent", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default", "uid": "uid-agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": agent},
        }
    )
    for node in ("kwok-a", "kwok-b", "kwok-c", "static-1"):
        items.append(
            _owned_pod(dump, f"agent-{node}", node, ("apps/v1", "DaemonSet", "agent"), agent)
        )
    db = {
        "metadata": {"labels": {"app": "db"}},
        "spec": {"containers": [{"name": "db", "image": "db"}]},
    }
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default", "uid": "uid-db"},
            "spec": {
                "replicas": 1,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": db,
            },
        }
    )
    items.append(_owned_pod(dump, "db-0", "kwok-b", ("apps/v1", "StatefulSet", "db"), db))
    batch = {
        "metadata": {"labels": {"job": "batch"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "b", "image": "b"}]},
    }
    items.append(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "batch", "namespace": "default", "uid": "uid-batch"},
            "spec": {"completions": 1, "parallelism": 1, "template": batch},
            "status": {"active": 1},
        }
    )
    items.append(_owned_pod(dump, "batch-x1", "kwok-a", ("batch/v1", "Job", "batch"), batch))
    run = run_dump(dump)
    assert run.exit_code == 0, run.stderr
    # a DaemonSet's pod does not keep a node: kwok-c is still empty
    assert run.changes() == [("kwok-c", "removed", "Empty")]
    placed = {p["name"]: p["node"] for p in run.report["pods"]}
    assert {name: node for name, node in placed.items() if not name.startswith("web-")} == {
        "agent-kwok-a": "kwok-a",
        "agent-kwok-b": "kwok-b",
        "agent-static-1": "static-1",
        "db-0": "kwok-b",
        "batch-x1": "kwok-a",
        "etcd-static-1": "static-1",
    }
