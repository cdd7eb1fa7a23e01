"""``nodewright simulate --metrics FILE``: the run's Prometheus metrics, as ``nodewright run``
serves them at /metrics, so a dashboard's queries can be tried on a simulation."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate


def samples(path: Path, name: str, pool: str) -> list[float]:
    return [
        sample.value
        for family in text_string_to_metric_families(path.read_text())
        for sample in family.samples
        if sample.name == name and sample.labels.get("nodepool") == pool
    ]


def test_the_metrics_file_prices_the_pool_as_the_report_does(
    simulate: Simulate, tmp_path: Path
) -> None:
    out = tmp_path / "metrics.txt"
    pool = node_pool(
        "metered",
        requirements="[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]",
    )
    result = simulate(
        pool + KWOK_NODE_CLASS + deployment("web", 3, cpu="1"), None, "--metrics", str(out)
    )
    assert result.exit_code == 0, result.stderr
    total = sum(n["pricePerHour"] for n in result.nodes())
    assert total > 0
    assert samples(out, "karpenter_nodepools_cost_total", "metered") == [total]
    created = samples(out, "karpenter_nodeclaims_created_total", "metered")
    assert sum(created) == len(result.nodes())


def test_an_unwritable_metrics_file_is_refused_before_the_run(
    simulate: Simulate, tmp_path: Path
) -> None:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS, None, "--metrics", str(tmp_path / "missing" / "m.txt")
    )
    assert result.exit_code == 2
    assert "--metrics" in result.stderr
