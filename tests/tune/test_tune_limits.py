"""``tune --limits large``: the limits travel with the job to the worker processes, which check
a scenario's steps against them as they run."""

from __future__ import annotations

from pathlib import Path

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.simulation.test_simulate_large_limits import NOWHERE
from tests.tune.conftest import Tune

#: Pods that each need a node of their own, none yet; no NodePool can take them.
MANIFESTS = node_pool() + KWOK_NODE_CLASS + deployment("apart", 0, extra_spec=NOWHERE)
#: Beyond the default limit (1,000), checked when the step runs: in a worker.
SCALE_BEYOND = "- scale: {kind: Deployment, name: apart, namespace: default, replicas: 1001}\n"
#: One variant besides the baseline, so two worker processes each run one.
SPACE = """\
parameters:
  - field: spec.disruption.consolidateAfter
    values: [1m]
"""


def test_the_workers_run_within_the_limits_the_tune_was_given(tune: Tune, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(MANIFESTS)

    default = tune(SPACE, "--jobs", "2", inputs=(str(manifests),), scenario=SCALE_BEYOND)
    assert default.report["ran"] == "2 local processes"
    refusals = [variant["error"] for variant in default.report["variants"]]
    assert len(refusals) == 2
    assert all(
        "steps[0].scale.replicas: the workloads would ask for 1,001 pods that each" in error
        and "(--limits large allows 6,000)" in error
        for error in refusals
    )

    large = tune(
        SPACE, "--jobs", "2", "--limits", "large", inputs=(str(manifests),), scenario=SCALE_BEYOND
    )
    assert large.report["ran"] == "2 local processes"
    assert [variant["error"] for variant in large.report["variants"]] == [None, None]
    assert [variant["podsPendingAtEnd"] for variant in large.report["variants"]] == [1001, 1001]
    assert large.exit_code == 0, large.stderr


def test_a_variant_that_would_start_beyond_the_limits_is_refused_before_anything_runs(
    tune: Tune, tmp_path: Path
) -> None:
    space = "parameters:\n  - kind: Deployment\n    field: spec.replicas\n    values: [5, 20001]\n"
    run = tune(space, "--jobs", "1", scenario=None)
    assert run.exit_code == 2
    assert run.errors() == [
        f"error: {tmp_path}/space.yaml: replicas=20001: the workloads would ask for 20,001 pods "
        "together; a simulation runs at most 20,000 (--limits large allows 100,000)"
    ]
