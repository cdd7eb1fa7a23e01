"""Settings of ``nodewright run``: every option is a command-line flag and an environment
variable, named as Karpenter names them (``BATCH_MAX_DURATION``, ``FEATURE_GATES``,
``METRICS_PORT`` ...), so a Karpenter deployment's environment carries over.

Flags win over the environment, which wins over the defaults. A bad value is reported as one
line naming the flag, the variable and what was wrong; never a traceback.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal, get_args, get_origin

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from nodewright.api.core import TopologySpreadConstraint
from nodewright.api.duration import DurationError, format_duration, parse_duration
from nodewright.settings.featuregates import DEFAULT_FEATURE_GATES, parse_feature_gates
from nodewright.settings.schedulerconfig import load_scheduler_config


class SettingsError(ValueError):
    """Bad settings; ``lines`` name each flag / variable and the problem."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


def parse_provider_options(values: Sequence[str]) -> dict[str, dict[str, str]]:
    """``["kwok.registration-delay=5s"]`` -> {"kwok": {"registration-delay": "5s"}}."""
    options: dict[str, dict[str, str]] = {}
    for value in values:
        key, sep, setting = value.partition("=")
        provider, dot, name = key.strip().partition(".")
        if not sep or not dot or not provider or not name:
            raise ValueError(
                f"{value!r} is not PROVIDER.NAME=VALUE (e.g. kwok.registration-delay=5s)"
            )
        options.setdefault(provider, {})[name] = setting
    return options


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except DurationError as error:
            raise ValueError(str(error)) from None
    return value


class RunSettings(BaseSettings):
    """Everything ``nodewright run`` can be told. Field docs are the flags' help texts."""

    model_config = SettingsConfigDict(
        env_prefix="", case_sensitive=False, extra="ignore", validate_default=True
    )

    # -- the cluster -----------------------------------------------------------------------------
    kubeconfig: str | None = Field(
        default=None, description="kubeconfig file (default: in-cluster service account)"
    )
    kube_context: str | None = Field(default=None, description="kubeconfig context to use")
    cluster_name: str = Field(default="nodewright", description="the cluster's name (for tags)")
    cluster_endpoint: str = Field(default="", description="the API server URL nodes join")
    kube_client_qps: float = Field(default=200.0, gt=0, description="API requests per second")
    kube_client_burst: int = Field(default=300, gt=0, description="API request burst")
    kube_client_timeout: timedelta = Field(
        default=timedelta(seconds=30), description="timeout of each API call"
    )

    # -- provisioning ----------------------------------------------------------------------------
    batch_max_duration: timedelta = Field(
        default=timedelta(seconds=10), description="longest a provisioning batch stays open"
    )
    batch_idle_duration: timedelta = Field(
        default=timedelta(seconds=1), description="a batch closes after this long without pods"
    )
    preference_policy: Literal["Respect", "Ignore"] = Field(
        default="Respect", description="Respect or Ignore preferred scheduling terms"
    )
    min_values_policy: Literal["Strict", "BestEffort"] = Field(
        default="Strict", description="Strict or BestEffort handling of minValues"
    )
    feature_gates: str = Field(
        default=DEFAULT_FEATURE_GATES, description="NAME=true|false,... (Karpenter's gates)"
    )
    provider_options: str = Field(
        default="",
        description="PROVIDER.NAME=VALUE,... provider settings (flag: repeatable)",
    )
    scheduler_config: str = Field(
        default="",
        description="kube-scheduler settings to mirror, a YAML/JSON document (or a file holding "
        "one): podTopologySpread.defaultConstraints",
    )
    ignore_dra_requests: bool = Field(
        default=True,
        description="skip pods with Dynamic Resource Allocation claims; false allocates their "
        "devices from published ResourceSlices and the devices instance types offer",
    )

    # -- observability ---------------------------------------------------------------------------
    log_level: Literal["debug", "info", "warn", "error"] = Field(
        default="info", description="debug, info, warn or error"
    )
    log_format: Literal["json", "text"] = Field(default="json", description="json or text")
    log_output_paths: str = Field(
        default="stderr", description="where logs go: stdout, stderr or files, comma-separated"
    )
    metrics_port: int = Field(default=8080, ge=0, le=65535, description="Prometheus /metrics")
    health_probe_port: int = Field(default=8081, ge=0, le=65535, description="/healthz and /readyz")
    bind_address: str = Field(
        default="127.0.0.1",
        description="address the ports listen on (the chart sets 0.0.0.0: the pod's own network)",
    )

    # -- high availability -----------------------------------------------------------------------
    disable_leader_election: bool = Field(
        default=False, description="run without a Lease (one replica only!)"
    )
    leader_election_name: str = Field(
        default="karpenter-leader-election", description="name of the coordination.k8s.io Lease"
    )
    leader_election_namespace: str = Field(
        default="", description="namespace of the Lease (default: SYSTEM_NAMESPACE or kube-system)"
    )
    leader_election_lease_duration: timedelta = Field(
        default=timedelta(seconds=15), description="how long a Lease holds without renewal"
    )
    leader_election_renew_deadline: timedelta = Field(
        default=timedelta(seconds=10), description="the leader gives up if it cannot renew by then"
    )
    leader_election_retry_period: timedelta = Field(
        default=timedelta(seconds=2), description="how often to try to acquire or renew"
    )

    _durations = field_validator(
        "kube_client_timeout",
        "batch_max_duration",
        "batch_idle_duration",
        "leader_election_lease_duration",
        "leader_election_renew_deadline",
        "leader_election_retry_period",
        mode="before",
    )(_duration)

    @field_validator("feature_gates")
    @classmethod
    def _check_gates(cls, value: str) -> str:
        parse_feature_gates(value)
        return value

    @field_validator("scheduler_config")
    @classmethod
    def _check_scheduler_config(cls, value: str) -> str:
        load_scheduler_config(value)
        return value

    @property
    def default_spread(self) -> tuple[TopologySpreadConstraint, ...]:
        config = load_scheduler_config(self.scheduler_config)
        return config.default_constraints if config is not None else ()

    @field_validator("log_output_paths")
    @classmethod
    def _check_output_paths(cls, value: str) -> str:
        if not [p for p in value.split(",") if p.strip()]:
            raise ValueError("name at least one of stdout, stderr or a file")
        return value

    @property
    def output_paths(self) -> list[str]:
        return [p.strip() for p in self.log_output_paths.split(",") if p.strip()]

    @field_validator("provider_options")
    @classmethod
    def _check_provider_options(cls, value: str) -> str:
        parse_provider_options([v for v in value.split(",") if v.strip()])
        return value

    @property
    def gates(self) -> dict[str, bool]:
        gates = parse_feature_gates(DEFAULT_FEATURE_GATES)
        gates.update(parse_feature_gates(self.feature_gates))
        return gates

    @property
    def providers(self) -> dict[str, dict[str, str]]:
        return parse_provider_options([v for v in self.provider_options.split(",") if v.strip()])

    @property
    def lease_namespace(self) -> str:
        return self.leader_election_namespace or os.environ.get("SYSTEM_NAMESPACE") or "kube-system"


def env_name(field: str) -> str:
    return field.upper()


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


#: What each flag takes, in ``--help``, where its type does not say it well enough.
METAVARS: dict[str, str] = {
    "kubeconfig": "FILE",
    "kube_context": "CONTEXT",
    "cluster_name": "NAME",
    "cluster_endpoint": "URL",
    "kube_client_qps": "QPS",
    "kube_client_burst": "REQUESTS",
    "feature_gates": "GATE=BOOL,...",
    "scheduler_config": "DOCUMENT|FILE",
    "log_output_paths": "PATH,...",
    "metrics_port": "PORT",
    "health_probe_port": "PORT",
    "bind_address": "ADDRESS",
    "leader_election_name": "NAME",
    "leader_election_namespace": "NAMESPACE",
}


def _metavar(name: str, annotation: Any) -> str:
    if name in METAVARS:
        return METAVARS[name]
    if annotation is timedelta:
        return "DURATION"
    if get_origin(annotation) is Literal:
        return "{" + ",".join(str(choice) for choice in get_args(annotation)) + "}"
    return "VALUE"


def _shown_default(value: Any) -> str:
    """A default as a user would write it: ``30s`` (as Karpenter's flags show durations),
    ``200``, ``false``."""
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per setting; unset flags leave the environment and defaults in charge."""
    for name, info in RunSettings.model_fields.items():
        default = "" if info.default in (None, "") else f"; default {_shown_default(info.default)}"
        help_text = f"{info.description} [env {env_name(name)}{default}]"
        if name == "provider_options":
            parser.add_argument(
                "--provider-option",
                dest=name,
                action="append",
                metavar="PROVIDER.NAME=VALUE",
                help=help_text,
            )
        elif info.annotation is bool:
            parser.add_argument(
                flag_name(name), dest=name, action=argparse.BooleanOptionalAction, help=help_text
            )
        else:
            parser.add_argument(
                flag_name(name),
                dest=name,
                metavar=_metavar(name, info.annotation),
                help=help_text,
            )


def load_settings(flags: argparse.Namespace | Mapping[str, Any]) -> RunSettings:
    """Settings from flags over the environment over defaults; raises SettingsError."""
    given = vars(flags) if isinstance(flags, argparse.Namespace) else dict(flags)
    overrides = {
        name: given[name]
        for name in RunSettings.model_fields
        if name in given and given[name] is not None
    }
    if isinstance(overrides.get("provider_options"), list):
        overrides["provider_options"] = ",".join(overrides["provider_options"])
    try:
        return RunSettings(**overrides)
    except ValidationError as error:
        lines = []
        for problem in error.errors():
            field = str(problem["loc"][0]) if problem["loc"] else "?"
            message = str(problem["msg"]).removeprefix("Value error, ")
            lines.append(f"{flag_name(field)} / {env_name(field)}: {message}")
        raise SettingsError(lines) from None
