"""``tune --ray ADDRESS``: the variants run as tasks of a Ray cluster (here a head of one node
started on a loopback port, :mod:`tests.tune.ray_head`) and rank exactly as in one process,
failed variants included; Ctrl-C keeps what had finished; a cluster that cannot be used is one
``error:`` line naming the address, never a traceback."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ports import free_port
from tests.tune.conftest import INFLATE, SCALE_UP_AND_DOWN, SPACE, Tune
from tests.tune.interrupt import interrupt_tune
from tests.tune.ray_head import RAY_ENV, RayHead, ray_head
from tests.tune.test_tune_parallel import measured

#: These tests need Ray, the extra nodewright[distributed] (bin/check and CI install every extra).
needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="Ray is not installed (nodewright[distributed])"
)

#: A dynamic NodePool cannot be scaled: every variant left dynamic fails at the last step.
STATIC_SPACE = """\
parameters:
  - field: spec.replicas
    values: [null, 1]
  - field: spec.limits
    values: [null]
"""
SCALE_THE_POOL = """\
steps:
  - scale: {kind: Deployment, name: inflate, namespace: default, replicas: 3}
  - advance: 5m
  - scale: {kind: NodePool, name: default, replicas: 2}
  - advance: 5m
"""


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayHead]:
    with ray_head() as head:
        yield head


def tune_on_ray(
    tmp_path: Path, address: str, space: str, scenario: str, *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``nodewright tune ... --ray ADDRESS`` as a user runs it (the space and scenario
    written where the ``tune`` fixture writes them, so that errors name the same files)."""
    (tmp_path / "space.yaml").write_text(space)
    (tmp_path / "scenario.yaml").write_text(scenario)
    report = tmp_path / "ray-tune.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nodewright.commands",
            "tune",
            str(INFLATE),
            "--space",
            str(tmp_path / "space.yaml"),
            "--scenario",
            str(tmp_path / "scenario.yaml"),
            "--json",
            str(report),
            "--ray",
            address,
            *extra,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **RAY_ENV},
        timeout=600,
        check=False,
    )
    return done, json.loads(report.read_text()) if report.exists() else {}


@needs_ray
@pytest.mark.slow
def test_a_tune_on_ray_ranks_as_one_process_does(
    tune: Tune, tmp_path: Path, ray_cluster: RayHead
) -> None:
    ray_address = ray_cluster.address
    alone = tune(SPACE, "--jobs", "1")
    on_ray, report = tune_on_ray(tmp_path, ray_address, SPACE, SCALE_UP_AND_DOWN)

    assert on_ray.returncode == alone.exit_code == 0, on_ray.stderr + ray_cluster.problems()
    assert "Traceback" not in on_ray.stderr
    assert measured(report) == measured(alone.report)
    assert report["winningManifests"] == alone.report["winningManifests"]
    assert report["ran"] == f"the Ray cluster at {ray_address}"
    assert f"13 of 13 variant(s) ran (the Ray cluster at {ray_address})" in on_ray.stdout
    # The same table, and progress as for local processes: one line per finished variant.
    assert _table(on_ray.stdout) == _table(alone.stdout)
    finished = [line for line in on_ray.stderr.splitlines() if line.startswith("variant ")]
    assert len(finished) == 13


@needs_ray
@pytest.mark.slow
def test_a_variant_that_fails_on_a_worker_is_reported_as_in_one_process(
    tune: Tune, tmp_path: Path, ray_cluster: RayHead
) -> None:
    gate = ("--feature-gates", "StaticCapacity=true")
    alone = tune(STATIC_SPACE, "--jobs", "1", *gate, scenario=SCALE_THE_POOL)
    on_ray, report = tune_on_ray(tmp_path, ray_cluster.address, STATIC_SPACE, SCALE_THE_POOL, *gate)

    assert on_ray.returncode == alone.exit_code == 0, on_ray.stderr + ray_cluster.problems()
    assert measured(report) == measured(alone.report)
    failed = {v["index"]: v["error"] for v in report["variants"] if v["error"]}
    assert sorted(failed) == [0, 1]
    assert "steps[2].scale: NodePool 'default' is dynamic" in failed[1]
    assert _table(on_ray.stdout) == _table(alone.stdout)


@needs_ray
@pytest.mark.slow
def test_ctrl_c_on_ray_ranks_what_had_finished(tmp_path: Path, ray_cluster: RayHead) -> None:
    run = interrupt_tune(
        tmp_path, "--ray", ray_cluster.address, env=RAY_ENV, explain=ray_cluster.problems
    )

    assert run.returncode == 130, run.stderr
    assert "Traceback" not in run.stderr
    assert "interrupted: the variants that had finished are ranked" in run.stdout
    data = run.report
    assert data["interrupted"] is True
    assert 2 <= data["variantsFinished"] < 42
    assert data["variantsFinished"] == len(data["variants"])


#: Started first in every Python of a head given it in PYTHONPATH: nodewright and its providers
#: cannot be imported there, as on a node where they are not installed. (Taking their folders
#: from ``sys.path`` is not enough: Ray gives workers the driver's ``sys.path``.)
WITHOUT_NODEWRIGHT = """\
import sys


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0].partition("_")[0] == "nodewright":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""


@needs_ray
@pytest.mark.slow
def test_workers_that_cannot_import_nodewright_are_one_error(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(WITHOUT_NODEWRIGHT)
    with ray_head(env={"PYTHONPATH": str(site)}) as head:
        run, report = tune_on_ray(tmp_path, head.address, SPACE, SCALE_UP_AND_DOWN)

    assert run.returncode == 3, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert [line for line in run.stderr.splitlines() if line.startswith("error:")] == [
        f"error: --ray {head.address}: the cluster's workers cannot run nodewright: "
        "No module named 'nodewright' (install nodewright and its providers on every node)"
    ]
    assert report == {}


@needs_ray
def test_an_unreachable_address_is_one_error_naming_it(tune: Tune) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there

    run = tune(SPACE, "--ray", address)

    assert run.exit_code == 3
    assert run.errors() == [
        f"error: --ray {address}: cannot reach the Ray cluster: Connection refused"
    ]
    assert "Traceback" not in run.stderr
    assert run.report == {}


@needs_ray
def test_an_address_that_is_no_address_is_one_error(tune: Tune) -> None:
    run = tune(SPACE, "--ray", "head-node:port")

    assert run.exit_code == 3
    assert run.errors() == [
        "error: --ray head-node:port: expected HOST:PORT, ray://HOST:PORT or auto "
        "(the address of the cluster's head)"
    ]


def test_without_ray_installed_the_error_says_which_extra(
    tune: Tune, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as without the extra

    run = tune(SPACE, "--ray", "127.0.0.1:6379")

    assert run.exit_code == 3
    assert run.errors() == [
        "error: --ray 127.0.0.1:6379: Ray is not installed here; install the extra "
        "nodewright[distributed] (pip install 'nodewright[distributed]')"
    ]


def test_jobs_and_ray_do_not_go_together(tune: Tune) -> None:
    with pytest.raises(SystemExit) as exit_:
        tune(SPACE, "--jobs", "2", "--ray", "127.0.0.1:6379")

    assert exit_.value.code == 2


def _table(stdout: str) -> list[str]:
    """The ranked table and what follows it (the first line says where the variants ran)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("RANK"))
    return [line for line in lines[start:] if not line.startswith("interrupted")]
