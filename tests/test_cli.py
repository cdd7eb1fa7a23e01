"""The command line: clear one-line errors and exit status 2 for bad input, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodewright.cli import main
from tests.conftest import KWOK_CLASS, Simulate, deployment, node_pool


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def test_malformed_yaml_names_the_file_and_line(simulate: Simulate) -> None:
    result = simulate("apiVersion: v1\nkind: Pod\nmetadata: {name: x\n")
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert "manifests.yaml:" in error
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("pool", "field"),
    [
        (node_pool(weight=500), "spec.weight"),
        (
            node_pool(requirements="[{key: example.com/size, operator: Gt, values: [big]}]"),
            "spec.template.spec.requirements[0]",
        ),
        (
            node_pool(requirements="[{key: karpenter.sh/nodepool, operator: In, values: [x]}]"),
            "spec.template.spec.requirements[0].key",
        ),
    ],
    ids=["weight-500", "gt-not-an-integer", "nodepool-label-in-requirements"],
)
def test_an_invalid_node_pool_names_object_and_field(
    simulate: Simulate, pool: str, field: str
) -> None:
    result = simulate(pool + KWOK_CLASS)
    assert result.exit_code == 2
    errors = _errors(result.stderr)
    assert errors
    assert any('NodePool "default"' in e and field in e for e in errors), errors
    assert "Traceback" not in result.stderr


def test_a_missing_node_class_names_the_reference(simulate: Simulate) -> None:
    result = simulate(node_pool() + deployment("web", 1))
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert 'NodePool "default"' in error
    assert "spec.template.spec.nodeClassRef.name" in error
    assert 'KWOKNodeClass "default" is neither in the given manifests' in error


def test_a_node_pool_applied_later_may_name_a_node_class_applied_earlier(
    simulate: Simulate, tmp_path: Path
) -> None:
    (tmp_path / "later.yaml").write_text(
        node_pool(
            "later",
            requirements='[{key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["8"]}]',
            weight=10,
        )
        + deployment("web", 1)
    )
    result = simulate(KWOK_CLASS, "- apply: later.yaml\n")
    assert result.exit_code == 0, result.stderr
    (node,) = result.nodes()
    assert node["nodePool"] == "later"


def test_a_node_pool_applied_later_naming_a_missing_node_class_is_an_input_error(
    simulate: Simulate, tmp_path: Path
) -> None:
    (tmp_path / "later.yaml").write_text(node_pool("later"))
    result = simulate(deployment("web", 1), "- apply: later.yaml\n")
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert 'NodePool "later"' in error
    assert 'KWOKNodeClass "default" is neither in the given manifests nor applied earlier' in error


def test_a_bad_scenario_step_is_an_input_error(simulate: Simulate) -> None:
    result = simulate(node_pool() + KWOK_CLASS, "- scael: {kind: Deployment, name: web}\n")
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert "steps[0]" in error
    assert "scael" in error


def test_scaling_a_missing_deployment_is_an_input_error(simulate: Simulate) -> None:
    result = simulate(
        node_pool() + KWOK_CLASS, "- scale: {kind: Deployment, name: nope, replicas: 3}\n"
    )
    assert result.exit_code == 2
    assert "'nope' does not exist" in result.stderr


def test_plugins_lists_the_kwok_provider(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    kwok = next(row for row in rows if row["name"] == "kwok")
    assert kwok["distribution"] == "nodewright-kwok"
    assert kwok["version"]
    assert "KWOKNodeClass" in kwok["node_classes"]


def test_simulate_without_the_kwok_provider_says_how_to_install_it(tmp_path: Path) -> None:
    manifests = tmp_path / "pool.yaml"
    manifests.write_text(node_pool() + KWOK_CLASS)
    completed = subprocess.run(
        [sys.executable, "-m", "nodewright.cli", "simulate", str(manifests)],
        capture_output=True,
        text=True,
        env={"NODEWRIGHT_DISABLE_PLUGINS": "kwok", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    assert "KWOKNodeClass" in completed.stderr
    assert 'pip install "nodewright[kwok]"' in completed.stderr


def test_a_logged_exception_shows_its_type_and_message_and_its_traceback_when_verbose() -> None:
    import logging

    from nodewright.cli import _ClockFormatter
    from nodewright.clock import SimulatedClock

    try:
        raise TypeError("'str' object is not callable")
    except TypeError:
        record = logging.LogRecord(
            "nodewright.operator",
            logging.ERROR,
            __file__,
            1,
            "controller %s failed",
            ("x",),
            sys.exc_info(),
        )
    quiet = _ClockFormatter(SimulatedClock()).format(record)
    assert quiet.endswith("controller x failed: TypeError: 'str' object is not callable")
    assert "Traceback" not in quiet
    loud = _ClockFormatter(SimulatedClock(), verbose=True).format(record)
    assert "Traceback (most recent call last)" in loud
