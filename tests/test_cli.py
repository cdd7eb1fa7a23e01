"""The command line: clear one-line errors and exit status 2 for bad input, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodewright.commands import main
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate


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
    result = simulate(pool + KWOK_NODE_CLASS)
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
    result = simulate(KWOK_NODE_CLASS, "- apply: later.yaml\n")
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
    result = simulate(node_pool() + KWOK_NODE_CLASS, "- scael: {kind: Deployment, name: web}\n")
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert "steps[0]" in error
    assert "scael" in error


def test_scaling_a_missing_deployment_is_an_input_error(simulate: Simulate) -> None:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS, "- scale: {kind: Deployment, name: nope, replicas: 3}\n"
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
    manifests.write_text(node_pool() + KWOK_NODE_CLASS)
    completed = subprocess.run(
        [sys.executable, "-m", "nodewright.commands", "simulate", str(manifests)],
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

    from nodewright.clock import SimulatedClock
    from nodewright.logfields import fields
    from nodewright.service.logs import TextFormatter

    try:
        raise TypeError("'str' object is not callable")
    except TypeError:
        record = logging.LogRecord(
            "nodewright.operator",
            logging.ERROR,
            __file__,
            1,
            "Reconciler error",
            (),
            sys.exc_info(),
        )
        record.__dict__.update(fields(controller="x"))
    quiet = TextFormatter.simulated(SimulatedClock()).format(record)
    assert quiet.endswith("Reconciler error: TypeError: 'str' object is not callable\tcontroller=x")
    assert "Traceback" not in quiet
    loud = TextFormatter.simulated(SimulatedClock(), verbose=True).format(record)
    assert "Traceback (most recent call last)" in loud


def test_simulated_log_lines_mask_secrets_as_run_does() -> None:
    import logging

    from nodewright.clock import SimulatedClock
    from nodewright.logfields import fields
    from nodewright.service.logs import TextFormatter

    record = logging.LogRecord(
        "nodewright.provider",
        logging.ERROR,
        __file__,
        1,
        "launch failed: Authorization: Bearer abc.def-123",
        (),
        None,
    )
    record.__dict__.update(fields(error="password=hunter2"))
    line = TextFormatter.simulated(SimulatedClock()).format(record)
    assert "abc.def-123" not in line
    assert "hunter2" not in line
    assert line.count("[redacted]") == 2


# --- bad input: file:line on every line, exit 2, never a traceback (issue 18) ----------------


def test_node_pool_rule_errors_name_file_and_line(simulate: Simulate, tmp_path: Path) -> None:
    pool = node_pool(requirements="[{key: example.com/size, operator: Inn, values: [big]}]")
    result = simulate(pool + KWOK_NODE_CLASS)
    assert result.exit_code == 2
    assert _errors(result.stderr) == [
        f'error: {tmp_path / "manifests.yaml"}:12: NodePool "default": '
        "spec.template.spec.requirements[0].operator: must be one of In, NotIn, Exists, "
        "DoesNotExist, Gt, Lt, Gte, Lte, got 'Inn'"
    ]


def test_a_missing_node_class_names_file_and_line(simulate: Simulate, tmp_path: Path) -> None:
    result = simulate(node_pool() + deployment("web", 1))
    (error,) = _errors(result.stderr)
    assert error.startswith(f'error: {tmp_path / "manifests.yaml"}:17: NodePool "default": ')


def test_cpu_lots_in_a_deployment_is_refused_before_the_simulation_scales_it(
    simulate: Simulate,
) -> None:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("web", 0, cpu="lots"),
        "- scale: {kind: Deployment, name: web, replicas: 3}\n",
    )
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert "requests[cpu]: must be a quantity" in error
    assert "Traceback" not in result.stderr + result.stdout


def test_a_scenario_among_the_manifests_says_to_use_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pool.yaml").write_text(node_pool() + KWOK_NODE_CLASS)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("steps:\n  - scale: {kind: Deployment, name: web, replicas: 3}\n")
    assert main(["simulate", str(tmp_path)]) == 2
    assert _errors(capsys.readouterr().err) == [
        f"error: {scenario}: this is a scenario (1 step(s)), not manifests; "
        f"pass it with --scenario {scenario}"
    ]


def test_an_empty_file_is_an_error(simulate: Simulate, tmp_path: Path) -> None:
    result = simulate("# nothing here yet\n")
    assert result.exit_code == 2
    assert _errors(result.stderr) == [
        f"error: {tmp_path / 'manifests.yaml'}: no objects to read (the files are empty or "
        "only comments)"
    ]


def test_an_empty_file_among_manifests_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-empty.yaml").write_text("---\n")
    (tmp_path / "pool.yaml").write_text(node_pool() + KWOK_NODE_CLASS)
    assert main(["simulate", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"warning: {tmp_path / 'a-empty.yaml'}: no objects in this file" in err.splitlines()


def test_a_directory_without_manifests_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "README.txt").write_text("manifests go here\n")
    assert main(["simulate", str(tmp_path)]) == 2
    assert _errors(capsys.readouterr().err) == [
        f"error: {tmp_path}: directory has no manifest files (names ending .yaml, .yml, .json)"
    ]


def test_more_pods_than_a_simulation_runs_is_an_error(simulate: Simulate, tmp_path: Path) -> None:
    result = simulate(node_pool() + KWOK_NODE_CLASS + deployment("web", 2_000_000))
    assert result.exit_code == 2
    assert _errors(result.stderr) == [
        f"error: {tmp_path / 'manifests.yaml'}: the workloads would ask for 2,000,000 pods "
        "together; a simulation runs at most 20,000 (--limits large allows 100,000)"
    ]


def test_the_large_limits_refuse_beyond_theirs_without_naming_more(
    simulate: Simulate, tmp_path: Path
) -> None:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("web", 2_000_000), None, "--limits", "large"
    )
    assert result.exit_code == 2
    assert _errors(result.stderr) == [
        f"error: {tmp_path / 'manifests.yaml'}: the workloads would ask for 2,000,000 pods "
        "together; a simulation runs at most 100,000"
    ]


def test_crds_into_a_path_that_is_a_file_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "crds"
    blocker.write_text("a file, not a directory\n")
    assert main(["crds", "--output-dir", str(blocker)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {blocker}: cannot write: ")


DOCS_EXAMPLE_POOL = """\
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: default
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: Inn, values: [spot]}
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
"""
DOCS_EXAMPLE_APPS = """\
apiVersion: v1
kind: Pod
metadata:
  name: UPPER_case!
spec:
  containers: [{name: app}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spce:
  replicas: 3
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          resources: {requests: {cpu: lots}}
"""


def test_the_errors_shown_in_the_docs_are_what_simulate_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pools").mkdir()
    (tmp_path / "apps").mkdir()
    (tmp_path / "pools" / "default.yaml").write_text(DOCS_EXAMPLE_POOL)
    (tmp_path / "apps" / "web.yaml").write_text(DOCS_EXAMPLE_APPS)
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "pools", "apps"]) == 2
    docs = (Path(__file__).resolve().parents[1] / "docs" / "simulate.md").read_text()
    block = docs.split("```text\n$ nodewright simulate pools apps\n", 1)[1].split("```", 1)[0]
    assert capsys.readouterr().err == block


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("clusters: " + "[" * 1000, "refused: nested more than 100 levels deep"),
        (
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n"
                for p, n in zip("abcdefgh", "bcdefghi", strict=True)
            ),
            "refused: aliases expand to more than 100000 values",
        ),
    ],
    ids=["nested", "alias-bomb"],
)
def test_run_reads_its_kubeconfig_with_the_same_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, words: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(text)
    assert main(["run", "--kubeconfig", str(kubeconfig)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: cannot read the kubeconfig: {kubeconfig}:")
    assert words in line


@pytest.mark.parametrize(
    ("scenario", "words"),
    [
        (
            "- advance: 100000h\n",
            "steps[0].advance: got '100000h'; a step runs at most 168h (--limits large allows "
            "720h)",
        ),
        ("- advance: 99999999999999999999h\n", "is out of range (at most about 292 years)"),
        ("steps: []\n1: a\nb: c\n", "unknown key(s) 'b', 1; expected 'steps'"),
        ("- scale: {kind: Deployment, name: web, 1: a, b: c}\n", "unknown field(s) 'b', 1"),
        ("- settle: " + "[" * 1000 + "\n", "refused: nested more than 100 levels deep"),
    ],
    ids=["advance-100000h", "advance-overflow", "mixed-keys", "mixed-fields", "nested"],
)
def test_a_scenario_that_would_hang_or_crash_is_an_input_error(
    simulate: Simulate, tmp_path: Path, scenario: str, words: str
) -> None:
    result = simulate(node_pool() + KWOK_NODE_CLASS, scenario)
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert error.startswith(f"error: {tmp_path / 'scenario.yaml'}")
    assert words in error


def test_scenario_step_errors_name_their_line(simulate: Simulate, tmp_path: Path) -> None:
    result = simulate(node_pool() + KWOK_NODE_CLASS, "steps:\n  - settle: {}\n  - scael: {}\n")
    (error,) = _errors(result.stderr)
    assert error.startswith(f"error: {tmp_path / 'scenario.yaml'}:3: steps[1]: unknown step")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("expireAfter", "99999999999999999999h"),
        ("terminationGracePeriod", "99999999999999999999h"),
    ],
)
def test_a_node_pool_duration_beyond_any_clock_is_refused(
    simulate: Simulate, field: str, value: str
) -> None:
    pool = node_pool().replace(
        "      nodeClassRef:", f"      {field}: {value}\n      nodeClassRef:"
    )
    result = simulate(pool + KWOK_NODE_CLASS)
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert f"spec.template.spec.{field}: '{value}' is out of range" in error


def test_a_json_report_path_that_is_a_directory_is_refused_before_simulating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifests = tmp_path / "pool.yaml"
    manifests.write_text(node_pool() + KWOK_NODE_CLASS)
    assert main(["simulate", str(manifests), "--json", str(tmp_path)]) == 2
    assert _errors(capsys.readouterr().err) == [
        f"error: --json {tmp_path}: is a directory; name a file"
    ]


# --- the commands ------------------------------------------------------------------------------


def test_every_command_is_listed_and_explains_itself(capsys: pytest.CaptureFixture[str]) -> None:
    from nodewright.commands import COMMANDS

    with pytest.raises(SystemExit) as listed:
        main(["--help"])
    assert listed.value.code == 0
    overview = capsys.readouterr().out
    names = [command.name for command in COMMANDS]
    assert names == ["simulate", "tune", "plugins", "convert", "crds", "run", "version"]
    for command in COMMANDS:
        assert command.name in overview
        assert command.help in " ".join(overview.split())
        with pytest.raises(SystemExit) as helped:
            main([command.name, "--help"])
        assert helped.value.code == 0
        usage = capsys.readouterr().out
        assert usage.startswith(f"usage: nodewright {command.name} ")
        if command.description:
            assert command.description.split()[0] in usage


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bogus"])
    assert exited.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
