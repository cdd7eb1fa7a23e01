"""``nodewright simulate`` ends honestly: a provider that cannot work stops the run before it
starts (exit 2, one line naming the provider and what to set), a provider failing while the
report is built leaves the last known value with a note, and the run does not end while an
instance is still launching."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate

ROOT = Path(__file__).resolve().parents[2]
SCALE_TO_10 = "- scale: {kind: Deployment, name: web, namespace: default, replicas: 10}\n"


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_a_typo_in_a_provider_option_stops_the_run_naming_the_option(simulate: Simulate) -> None:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("web", 3),
        None,
        "--provider-option",
        "kwok.registraton-delay=5s",
    )
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert error.startswith(
        "error: --provider-option kwok.registraton-delay=5s: unknown kwok option "
        "'registraton-delay'; known options: registration-delay,"
    )
    assert result.stdout == "", "nothing is simulated"
    assert result.report == {}
    assert "Traceback" not in result.stderr


def test_an_option_for_a_provider_that_is_not_installed_stops_the_run(simulate: Simulate) -> None:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS, None, "--provider-option", "kwk.registration-delay=5s"
    )
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert error.startswith(
        "error: --provider-option kwk.registration-delay: no provider named 'kwk' is installed "
        "(installed: "
    )
    assert "kwok" in error
    assert result.stdout == ""


def test_a_bad_fault_value_stops_the_run_naming_the_option(simulate: Simulate) -> None:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS, None, "--provider-option", "kwok.fault-api-errors=lanch=2"
    )
    assert result.exit_code == 2
    (error,) = _errors(result.stderr)
    assert error.startswith("error: --provider-option kwok.fault-api-errors=lanch=2: ")
    assert "'lanch'" in error


def _clear_aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for variable in (
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


AWS_MANIFESTS = (ROOT / "examples" / "aws" / "nodeclass.yaml").read_text() + "\n---\n"


def test_an_aws_pool_without_a_region_stops_the_run_saying_what_to_set(
    simulate: Simulate, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear_aws_environment(monkeypatch, tmp_path)
    result = simulate(AWS_MANIFESTS + deployment("web", 3))
    assert result.exit_code == 2
    assert _errors(result.stderr) == [
        f'error: {tmp_path / "manifests.yaml"}:35: NodePool "default": '
        "spec.template.spec.nodeClassRef: provider aws: no AWS region: set --provider-option "
        "aws.region=<region> or AWS_REGION"
    ]
    assert result.stdout == ""


def test_an_aws_pool_without_credentials_stops_the_run(
    simulate: Simulate, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear_aws_environment(monkeypatch, tmp_path)
    result = simulate(AWS_MANIFESTS, None, "--provider-option", "aws.region=eu-west-1")
    assert result.exit_code == 2
    assert _errors(result.stderr) == [
        f'error: {tmp_path / "manifests.yaml"}:35: NodePool "default": '
        "spec.template.spec.nodeClassRef: provider aws: no AWS credentials found (environment, "
        "shared config or instance role)"
    ]


def test_seed_000s_retired_provisioner_without_a_region_fails_fast_naming_its_provider_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from nodewright.commands import main

    _clear_aws_environment(monkeypatch, tmp_path)
    example = ROOT / "examples" / "aws-seed-000"
    code = main(
        ["simulate", str(example / "manifests"), "--scenario", str(example / "scenario.yaml")]
    )
    out = capsys.readouterr()
    assert code == 2
    # The Provisioner (karpenter.sh/v1alpha5) names its NodeClass by its spec.provider block.
    assert _errors(out.err) == [
        f'error: {example / "manifests" / "provisioner.yaml"}:22: NodePool "default": '
        "spec.template.spec.nodeClassRef: provider aws: no AWS region: set --provider-option "
        "aws.region=<region> or AWS_REGION"
    ]
    assert "TemporaryProviderError" not in out.out + out.err


def test_an_unconfigured_provider_nobody_uses_does_not_stop_a_kwok_run(
    simulate: Simulate, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear_aws_environment(monkeypatch, tmp_path)
    result = simulate(node_pool() + KWOK_NODE_CLASS + deployment("web", 2))
    assert result.exit_code == 0, result.stderr
    assert result.pending() == []


def test_a_provider_failing_while_the_report_is_built_leaves_the_launch_price_with_a_note(
    simulate: Simulate,
) -> None:
    # Every "get" of an instance fails: the node never registers its pods, and the report
    # cannot ask the provider for the instance's price.
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("web", 0),
        SCALE_TO_10,
        "--provider-option",
        "kwok.fault-api-errors=get=1000",
    )
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    (node,) = result.nodes()
    assert node["pricePerHour"] is not None
    assert node["pricePerHour"] > 0
    (note,) = result.report["notes"]
    assert note.startswith(f"node {node['name']}: price ${node['pricePerHour']:.4f}/h, the last")
    assert "the provider failed: kwok: injected API error in get" in note
    assert f"\nnote: {note}\n" in result.stdout
    assert f"1 node(s), ${node['pricePerHour']:.4f}/h" in result.stdout


def test_the_run_waits_for_an_instance_still_launching(simulate: Simulate) -> None:
    # Registration takes longer than the 60 s quiet period that ends a settle.
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("web", 0, cpu="100m"),
        SCALE_TO_10,
        "--provider-option",
        "kwok.registration-delay=90s",
    )
    assert result.exit_code == 0, result.stderr
    assert result.pending() == []
    (node,) = result.nodes()
    assert len([p for p in node["pods"] if "/web-" in p]) == 10
    assert "10 pod(s) bound, 0 pending" in result.stdout


def test_a_launch_that_keeps_failing_does_not_hold_the_run(simulate: Simulate) -> None:
    result = simulate(
        node_pool() + KWOK_NODE_CLASS + deployment("web", 2),
        None,
        "--provider-option",
        "kwok.fault-instance-quota=0",
    )
    assert result.exit_code == 0, result.stderr
    assert len(result.pending()) == 2
    assert result.report["simulatedSeconds"] < 600
