"""What the caches keep of each object (only what nodewright reads), how they list (a page at a
time), and that a write of a trimmed object never loses what the cache left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nodewright.api.core import Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.cluster.kube import MERGE_PATCH, KubeCluster
from nodewright.cluster.kube.slim import slimmed
from nodewright.scheduling.pods import pod_request
from tests.kube.apiserver.status import failure
from tests.kube.fake_apiserver import FakeApiServer, Fault

MANAGED_FIELDS = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}},
    }
]


def _post(kube: KubeCluster, path: str, body: dict[str, Any]) -> None:
    """Create ``body`` as a client would, then its status (which a create leaves out)."""
    answer = kube._api.call("POST", path, body=body)
    assert answer.status == 201, answer.body
    if body.get("status"):
        name = body["metadata"]["name"]
        answer = kube._api.call(
            "PATCH",
            f"{path}/{name}/status",
            body={"status": body["status"]},
            content_type=MERGE_PATCH,
        )
        assert answer.status == 200, answer.body


def _served_pod(name: str) -> dict[str, Any]:
    """A pod as a real server holds it after kubelet started it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app": "inflate"},
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": '{"a": "copy"}',
                "karpenter.sh/do-not-disrupt": "true",
            },
            "managedFields": MANAGED_FIELDS,
        },
        "spec": {
            "nodeName": "n1",
            "dnsPolicy": "ClusterFirst",
            "containers": [
                {
                    "name": "app",
                    "image": "pause",
                    "resources": {"requests": {"cpu": "1"}},
                    "volumeMounts": [{"name": "token", "mountPath": "/var/run/secrets"}],
                    "terminationMessagePath": "/dev/termination-log",
                }
            ],
            "volumes": [
                {"name": "token", "projected": {"sources": [{"serviceAccountToken": {}}]}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0}],
        },
    }


def test_a_cached_pod_keeps_what_nodewright_reads_and_nothing_else(
    apiserver: FakeApiServer, kube: KubeCluster
) -> None:
    _post(kube, "/api/v1/namespaces/default/pods", _served_pod("p1"))
    pod = kube.get(Pod, "p1", "default")
    assert pod is not None
    kept = pod.to_dict()
    assert kept["metadata"]["annotations"] == {"karpenter.sh/do-not-disrupt": "true"}
    assert "managedFields" not in kept["metadata"]
    [container] = kept["spec"]["containers"]
    assert (container["name"], container["image"]) == ("app", "pause")
    assert container["resources"]["requests"] == {"cpu": "1"}
    assert "volumeMounts" not in container
    assert "terminationMessagePath" not in container
    assert "dnsPolicy" not in kept["spec"]
    assert [
        v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim
    ] == ["data"]
    assert "projected" not in str(kept["spec"]["volumes"])
    assert kept["status"]["phase"] == "Running"
    assert "containerStatuses" not in kept["status"]
    assert "podIP" not in kept["status"]


def test_a_cached_node_keeps_every_field_but_managed_fields(
    apiserver: FakeApiServer, kube: KubeCluster
) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "managedFields": MANAGED_FIELDS},
        "status": {"nodeInfo": {"kubeletVersion": "v1.31.0"}},
    }
    _post(kube, "/api/v1/nodes", node)
    cached = kube.get(Node, "n1")
    assert cached is not None
    assert "managedFields" not in cached.to_dict()["metadata"]
    assert (cached.status.model_extra or {})["nodeInfo"] == {"kubeletVersion": "v1.31.0"}


def test_a_status_write_that_cannot_be_a_patch_keeps_what_the_cache_left_out(
    apiserver: FakeApiServer, kube: KubeCluster
) -> None:
    _post(kube, "/api/v1/namespaces/default/pods", _served_pod("p1"))
    pod = kube.get(Pod, "p1", "default")
    assert pod is not None
    changed = pod.clone()
    changed.status.phase = "Succeeded"
    # the server cannot apply our patch (a test of a value it holds differently): replace
    apiserver.inject(
        Fault("PATCH", "/pods/p1/status", status=422, body=failure(422, "Invalid", ""))
    )
    kube.update_status(changed)
    stored = apiserver.stored("pods", "p1", "default")
    assert stored is not None
    assert stored["status"]["phase"] == "Succeeded"
    assert stored["status"]["containerStatuses"] == [
        {"name": "app", "ready": True, "restartCount": 0}
    ]
    assert stored["status"]["podIP"] == "10.0.0.1"
    assert apiserver.count("PUT", "/pods/p1/status") == 1


def test_caches_list_a_page_at_a_time(apiserver: FakeApiServer, kube: KubeCluster) -> None:
    for index in range(501):
        _post(
            kube,
            "/api/v1/nodes",
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{index:03d}"}},
        )
    assert len(kube.list(Node)) == 501
    lists = [
        path
        for method, path, _ in apiserver.requests
        if method == "GET" and path.startswith("/api/v1/nodes?") and "watch" not in path
    ]
    assert len(lists) == 2
    assert "limit=500" in lists[0]
    assert "continue=" in lists[1]


def test_a_list_whose_snapshot_expires_between_pages_is_read_again_at_once(
    apiserver: FakeApiServer, kube: KubeCluster
) -> None:
    for index in range(501):
        _post(
            kube,
            "/api/v1/nodes",
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{index:03d}"}},
        )
    apiserver.inject(Fault("GET", "continue=", status=410, body=failure(410, "Expired", "too old")))
    assert len(kube.list(Node)) == 501
    lists = [
        path
        for method, path, _ in apiserver.requests
        if method == "GET" and path.startswith("/api/v1/nodes") and "watch" not in path
    ]
    assert "limit" not in lists[-1]  # the last list asked for everything at once


SERVED = Path(__file__).resolve().parents[2] / "bench" / "data" / "served_objects.json"


def test_trimmed_objects_read_as_the_served_ones_do() -> None:
    """A real server's pod, Node and NodeClaim: what nodewright reads of each is unchanged by
    trimming (the pod as the solver sees it; the Node and NodeClaim whole, but for
    managedFields)."""
    served = json.loads(SERVED.read_text(encoding="utf-8"))
    pod = Pod.model_validate(served["Pod"])
    trimmed_pod = Pod.model_validate(slimmed(Pod, served["Pod"]))
    assert pod_request(trimmed_pod, 0, {}) == pod_request(pod, 0, {})
    assert trimmed_pod.spec.node_selector == pod.spec.node_selector
    assert [(c.type, c.status, c.last_transition_time) for c in trimmed_pod.status.conditions] == [
        (c.type, c.status, c.last_transition_time) for c in pod.status.conditions
    ]
    meta = pod.metadata.to_dict()
    meta.pop("managedFields")
    assert trimmed_pod.metadata.to_dict() == meta
    for kind in (Node, NodeClaim):
        full = kind.model_validate(served[kind.KIND]).to_dict()
        full["metadata"].pop("managedFields")
        assert kind.model_validate(slimmed(kind, served[kind.KIND])).to_dict() == full
