"""The nodewright-crd chart: the core's CRDs (NodePool, NodeClaim, NodeOverlay), and the
NodeClass CRDs of the enabled providers only, as templates Helm upgrades; each the CRD
``nodewright crds`` prints."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from nodewright.api.crds import core_crds
from nodewright.commands.crds import all_crds
from nodewright.commands.host import load_host
from tests.charts.crdchart import REGENERATE, templates
from tests.charts.helm import CRD_CHART, ValuesError, render

K8S_VERSION = "1.30.0"
CORE = [crd["metadata"]["name"] for crd in core_crds()]


def _crds(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    objects = render(values, chart=CRD_CHART, release="nodewright-crd")
    for obj in objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    return {o["metadata"]["name"]: o for o in objects}


@pytest.mark.parametrize(
    ("providers", "node_classes"),
    [
        ("kwok", ["kwoknodeclasses.karpenter.kwok.sh"]),
        ("aws", ["ec2nodeclasses.karpenter.k8s.aws"]),
        ("azure", ["aksnodeclasses.karpenter.azure.com"]),
        ("azure, aws", ["aksnodeclasses.karpenter.azure.com", "ec2nodeclasses.karpenter.k8s.aws"]),
    ],
)
def test_the_enabled_providers_node_class_crds_only(
    providers: str, node_classes: list[str]
) -> None:
    crds = _crds({"providers": {"enabled": providers}})
    assert "nodeoverlays.karpenter.sh" in CORE
    assert sorted(crds) == sorted([*CORE, *node_classes])


def test_each_crd_is_the_one_nodewright_crds_prints() -> None:
    crds = _crds({"providers": {"enabled": "aws,azure,kwok"}})
    assert crds == {crd["metadata"]["name"]: dict(crd) for crd in all_crds(load_host())}


def test_additional_annotations_go_on_every_crd() -> None:
    keep = {"helm.sh/resource-policy": "keep"}
    crds = _crds({"additionalAnnotations": keep})
    assert [c["metadata"]["annotations"] for c in crds.values()] == [keep] * (len(CORE) + 1)


def test_unknown_values_are_refused() -> None:
    with pytest.raises(ValuesError, match="Additional properties are not allowed"):
        render({"crds": {"install": True}}, chart=CRD_CHART)


def test_the_templates_are_generated() -> None:
    committed = {p.name: p.read_text() for p in (CRD_CHART / "templates").glob("*.yaml")}
    assert committed == templates(), f"charts/nodewright-crd is stale; run: {REGENERATE}"
