"""``nodewright run`` settings: flags over environment over Karpenter's defaults."""

from __future__ import annotations

import argparse
import io
import json
import logging
import re
from datetime import timedelta

import pytest

from nodewright.commands import main
from nodewright.service import logs
from nodewright.service.runner import options_from
from nodewright.settings.run import RunSettings, SettingsError, add_flags, load_settings


def _flags(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    return parser.parse_args(argv)


def test_defaults_are_karpenters(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KUBECONFIG", "FEATURE_GATES", "METRICS_PORT", "BATCH_MAX_DURATION"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(_flags())
    assert settings.batch_max_duration == timedelta(seconds=10)
    assert settings.batch_idle_duration == timedelta(seconds=1)
    assert settings.metrics_port == 8080
    assert settings.health_probe_port == 8081
    assert settings.kube_client_qps == 200
    assert settings.kube_client_burst == 300
    assert settings.preference_policy == "Respect"
    assert settings.min_values_policy == "Strict"
    assert settings.gates["ReservedCapacity"] is True
    assert settings.gates["SpotToSpotConsolidation"] is False
    assert settings.leader_election_name == "karpenter-leader-election"
    assert not settings.disable_leader_election


def test_environment_then_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATCH_MAX_DURATION", "30s")
    monkeypatch.setenv("BATCH_IDLE_DURATION", "2s")
    monkeypatch.setenv("FEATURE_GATES", "SpotToSpotConsolidation=true")
    monkeypatch.setenv("DISABLE_LEADER_ELECTION", "true")
    monkeypatch.setenv("PROVIDER_OPTIONS", "kwok.registration-delay=5s")
    monkeypatch.setenv("LOG_FORMAT", "text")
    settings = load_settings(
        _flags("--batch-max-duration", "1m", "--provider-option", "kwok.manage-nodes=true")
    )
    assert settings.batch_max_duration == timedelta(minutes=1)  # the flag wins
    assert settings.batch_idle_duration == timedelta(seconds=2)  # from the environment
    assert settings.gates["SpotToSpotConsolidation"] is True
    assert settings.gates["ReservedCapacity"] is True  # unnamed gates keep their defaults
    assert settings.disable_leader_election
    assert settings.providers == {"kwok": {"manage-nodes": "true"}}
    assert settings.log_format == "text"
    assert load_settings(_flags("--no-disable-leader-election")).disable_leader_election is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--batch-max-duration", "soon"), "--batch-max-duration / BATCH_MAX_DURATION: 'soon'"),
        (("--feature-gates", "Bogus=true"), "unknown feature gate 'Bogus'"),
        (("--feature-gates", "NodeRepair"), "is not NAME=true or NAME=false"),
        (("--preference-policy", "Maybe"), "--preference-policy / PREFERENCE_POLICY"),
        (("--metrics-port", "70000"), "--metrics-port / METRICS_PORT"),
        (("--provider-option", "kwok"), "is not PROVIDER.NAME=VALUE"),
    ],
)
def test_bad_values_name_the_flag_and_variable(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(SettingsError) as error:
        load_settings(_flags(*argv))
    assert message in str(error.value)


def test_run_reports_bad_settings_without_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--log-format", "xml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --log-format / LOG_FORMAT:")
    assert "Traceback" not in err


def test_run_reports_a_missing_kubeconfig(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    assert main(["run", "--kubeconfig", "/nonexistent/kubeconfig"]) == 2
    err = capsys.readouterr().err
    assert "cannot load Kubernetes credentials from /nonexistent/kubeconfig" in err


def test_json_logs_mask_credentials() -> None:
    stream = io.StringIO()
    root = logging.getLogger("nodewright")
    saved = (root.handlers[:], root.level, root.propagate)
    logs.configure("info", "json", stream)
    try:
        logging.getLogger("nodewright.run").info(
            "calling with Authorization: Bearer abc.def-123 and token=xyz"
        )
    finally:
        root.handlers[:], root.level, root.propagate = saved
    entry = json.loads(stream.getvalue().strip())
    assert entry["level"] == "INFO"
    assert entry["logger"] == "run"
    assert "abc.def-123" not in entry["message"]
    assert "xyz" not in entry["message"]
    assert "[redacted]" in entry["message"]


def test_settings_model_lists_every_flag() -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser)
    flags = {a.dest for a in parser._actions}
    assert set(RunSettings.model_fields) <= flags


def test_the_configuration_reference_lists_every_setting() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "kubernetes.md").read_text()
    for name in RunSettings.model_fields:
        flag = "--provider-option" if name == "provider_options" else "--" + name.replace("_", "-")
        assert f"| `{flag}`" in page, flag
        assert f"`{name.upper()}`" in page, name.upper()


def test_the_charts_environment_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """What charts/nodewright's Deployment sets with its default values."""
    chart_env = {
        "SYSTEM_NAMESPACE": "nodewright",
        "NODEWRIGHT_PLUGINS": "kwok",
        "PROVIDER_OPTIONS": "",
        "CLUSTER_NAME": "prod",
        "CLUSTER_ENDPOINT": "",
        "LOG_LEVEL": "info",
        "LOG_FORMAT": "json",
        "BATCH_MAX_DURATION": "10s",
        "BATCH_IDLE_DURATION": "1s",
        "FEATURE_GATES": "",
        "DISABLE_LEADER_ELECTION": "false",
        "LEADER_ELECTION_NAME": "nodewright-leader-election",
        "LEADER_ELECTION_NAMESPACE": "nodewright",
        "METRICS_PORT": "8080",
        "HEALTH_PROBE_PORT": "8081",
    }
    for name, value in chart_env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(_flags())
    assert settings.cluster_name == "prod"
    assert settings.lease_namespace == "nodewright"
    assert settings.gates["ReservedCapacity"] is True
    assert settings.providers == {}
    assert not settings.disable_leader_election


def test_help_shows_durations_as_karpenter_writes_them_and_what_each_flag_takes() -> None:
    parser = argparse.ArgumentParser(prog="nodewright run")
    add_flags(parser)
    text = " ".join(parser.format_help().split())  # argparse wraps lines anywhere
    assert "--kube-client-timeout DURATION" in text
    assert "[env KUBE_CLIENT_TIMEOUT; default 30s]" in text
    assert "[env BATCH_IDLE_DURATION; default 1s]" in text
    assert "[env LEADER_ELECTION_LEASE_DURATION; default 15s]" in text
    assert "0:00" not in text
    assert "--metrics-port PORT" in text
    assert "--kubeconfig FILE" in text
    assert "--log-level {debug,info,warn,error}" in text
    assert "[env KUBECONFIG]" in text  # no "default None"
    # every flag says what it takes; only the provider option's value is free-form
    assert re.findall(r"--[a-z-]+ VALUE\b", text) == []


def test_the_node_repair_gate_reaches_the_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FEATURE_GATES", raising=False)
    assert options_from(load_settings(_flags())).node_repair is False
    monkeypatch.setenv("FEATURE_GATES", "NodeRepair=true")
    assert options_from(load_settings(_flags())).node_repair is True
