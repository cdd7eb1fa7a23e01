"""NodeOverlays through the Kubernetes adapter: read from ``karpenter.sh/v1alpha1`` and watched
like every cached kind, and their status written through the status subresource."""

from __future__ import annotations

from nodewright.api.meta import Condition, ObjectMeta
from nodewright.api.nodeoverlay import NodeOverlay, NodeOverlaySpec, NodeSelectorRequirement
from nodewright.cluster.kube import KubeCluster, collection_path
from nodewright.cluster.objects import mutable
from tests.kube.conftest import FAST
from tests.kube.fake_apiserver import FakeApiServer
from tests.kube.polling import eventually


def test_overlays_are_watched_and_their_status_written(
    kube: KubeCluster, apiserver: FakeApiServer
) -> None:
    assert collection_path(NodeOverlay, None) == "/apis/karpenter.sh/v1alpha1/nodeoverlays"
    assert kube.list(NodeOverlay) == []
    other = KubeCluster.connect(str(apiserver.kubeconfig), settings=FAST)
    try:
        other.create(
            NodeOverlay(
                metadata=ObjectMeta(name="gpu"),
                spec=NodeOverlaySpec(
                    requirements=[
                        NodeSelectorRequirement(
                            key="kubernetes.io/arch", operator="In", values=["amd64"]
                        )
                    ],
                    capacity={"example.com/gpu": "1"},
                ),
            )
        )
        eventually(lambda: kube.get(NodeOverlay, "gpu") is not None)
    finally:
        other.close()
    seen = kube.get(NodeOverlay, "gpu")
    assert seen is not None
    assert seen.spec.capacity == {"example.com/gpu": "1"}
    overlay = mutable(seen)
    overlay.status.conditions.append(
        Condition(type="Ready", status="True", reason="Ready", last_transition_time=None)
    )
    kube.update_status(overlay)
    assert (
        apiserver.count("PUT", "/apis/karpenter.sh/v1alpha1/nodeoverlays/gpu/status")
        + (apiserver.count("PATCH", "/apis/karpenter.sh/v1alpha1/nodeoverlays/gpu/status"))
        == 1
    )
    stored = apiserver.stored("nodeoverlays", "gpu")
    assert stored is not None
    assert stored["status"]["conditions"][0]["type"] == "Ready"
