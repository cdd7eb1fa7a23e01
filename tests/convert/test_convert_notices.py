"""simulate names each object it reads from a retired Karpenter version, once, where it is
written, and what it became."""

from __future__ import annotations

from pathlib import Path

from nodewright.api.manifests.loading import load_manifests
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import conversion_notices, kind_registry
from nodewright.testing.manifests import deployment
from tests.convert.test_convert import SEED_000_PROVISIONER


def test_simulate_names_each_converted_object_once(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(SEED_000_PROVISIONER + "---\n" + deployment("web", 1))
    result = load_manifests([path], kind_registry(PluginHost.load()), keep_unknown_kinds=True)
    # a Provisioner becomes a NodePool and an EC2NodeClass: one line says both
    assert conversion_notices(result.manifests) == [
        f'{path}:2: Provisioner "default": karpenter.sh/v1alpha5 is retired; read as '
        "karpenter.sh/v1 NodePool and karpenter.k8s.aws/v1 EC2NodeClass "
        "(nodewright convert writes it so)"
    ]
