"""What a pass reads from the cluster about devices, as Karpenter does: the claims a pod uses
(a template's claim by the pod's status), the devices claims hold (free once every consumer is
a pod leaving its node), and the slices of nodes still in the pass."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.core import Pod
from nodewright.api.resource import ResourceClaim, ResourceSlice
from nodewright.scheduling.dra.claims import read_claim
from nodewright.scheduling.dra.cluster import (
    MissingClaim,
    held_devices,
    pod_claim_names,
    pod_claims,
    usable_slices,
)
from nodewright.scheduling.dra.devices import DeviceID
from nodewright.scheduling.dra.pools import published_slice

GPU = "gpu.example.com"


def pod(claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": "p", "namespace": "ml"},
            "spec": {"resourceClaims": claims, "containers": [{"name": "c"}]},
            "status": {"resourceClaimStatuses": statuses},
        }
    )


def allocated(name: str, device: str, consumers: list[dict[str, Any]]) -> ResourceClaim:
    return ResourceClaim.model_validate(
        {
            "metadata": {"name": name, "namespace": "ml"},
            "status": {
                "allocation": {
                    "devices": {
                        "results": [{"request": "r", "driver": GPU, "pool": "p", "device": device}]
                    }
                },
                "reservedFor": consumers,
            },
        }
    )


def test_claim_names_follow_the_pod_and_its_status() -> None:
    p = pod(
        [
            {"name": "a", "resourceClaimName": "shared"},
            {"name": "b", "resourceClaimTemplateName": "t"},
            {"name": "c", "resourceClaimTemplateName": "t"},
            {"name": "d", "resourceClaimTemplateName": "t"},
        ],
        [{"name": "b", "resourceClaimName": "p-b-x1"}, {"name": "c"}],
    )
    assert pod_claim_names(p) == ["shared", "p-b-x1"]


def test_a_claim_not_made_yet_keeps_the_pod_waiting() -> None:
    p = pod([{"name": "a", "resourceClaimName": "shared"}])
    with pytest.raises(MissingClaim, match='resourceclaim "ml/shared" not found'):
        pod_claims(p, {})


def test_devices_are_free_only_when_every_consumer_is_a_leaving_pod() -> None:
    claims = [
        read_claim(allocated("live", "d0", [{"resource": "pods", "name": "x", "uid": "u1"}]), {}),
        read_claim(
            allocated("leaving", "d1", [{"resource": "pods", "name": "y", "uid": "u2"}]), {}
        ),
        read_claim(allocated("unreserved", "d2", []), {}),
        read_claim(
            allocated(
                "other", "d3", [{"apiGroup": "x.io", "resource": "jobs", "name": "j", "uid": "u3"}]
            ),
            {},
        ),
    ]
    held = held_devices(claims, {"u2", "u3"})
    assert held.exclusive == {DeviceID(GPU, "p", d) for d in ("d0", "d2", "d3")}


def test_slices_of_nodes_outside_the_pass_are_not_used() -> None:
    def node_slice(name: str, owner: str | None) -> ResourceSlice:
        meta: dict[str, Any] = {"name": name}
        if owner:
            meta["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Node", "name": owner, "uid": owner}
            ]
        return ResourceSlice.model_validate(
            {"metadata": meta, "spec": {"driver": GPU, "pool": {"name": name}, "allNodes": True}}
        )

    slices = [
        published_slice(node_slice(n, o))
        for n, o in (("a", "node-a"), ("b", "node-b"), ("c", None))
    ]
    assert [s.name for s in usable_slices(slices, {"node-a"})] == ["a", "c"]
