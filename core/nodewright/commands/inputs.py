"""What ``simulate`` and ``tune`` read from their arguments: the manifests, the snapshot
(``--from-cluster``, ``--from-dump``), the scenario and the controllers' settings, read and
checked into :class:`~nodewright.simulation.session.SimulationInputs` before anything runs.
Each problem raises :class:`~nodewright.simulation.inputs.InputError`, one line each."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from nodewright.api.core import TopologySpreadConstraint
from nodewright.api.duration import DurationError, format_duration, parse_duration
from nodewright.api.excerpt import cut
from nodewright.clock import Clock
from nodewright.cluster import ClusterError
from nodewright.commands.kubeconfig import kubeconfig_problem
from nodewright.controllers.options import Options
from nodewright.plugin.host import PluginHost
from nodewright.service.logs import TextFormatter
from nodewright.settings.featuregates import DEFAULT_FEATURE_GATES, parse_feature_gates
from nodewright.settings.schedulerconfig import SchedulerConfigError, load_scheduler_config
from nodewright.simulation.inputs import (
    InputError,
    karpenter_rules,
    kind_registry,
    load_checked,
    warn_static_without_gate,
)
from nodewright.simulation.limits import BY_NAME, DEFAULT, LARGE, Limits
from nodewright.simulation.progress import ProgressAwareHandler, ProgressLine
from nodewright.simulation.scenario import Scenario, load_scenario, scenario_hint
from nodewright.simulation.session import SimulationInputs
from nodewright.simulation.snapshot import (
    LOAD_ORDER,
    Snapshot,
    read_dump,
    read_items,
)


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of what to simulate and how: manifests, a snapshot, a scenario, the seed,
    provider options and the controllers' settings."""
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="manifest files or directories (with a snapshot: applied over it)",
    )
    parser.add_argument(
        "--from-cluster",
        action="store_true",
        help="start from a read-only snapshot of a real cluster and report the what-if",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="with --from-cluster: the kubeconfig (default $KUBECONFIG or ~/.kube/config)",
    )
    parser.add_argument(
        "--context", metavar="NAME", help="with --from-cluster: the kubeconfig context"
    )
    parser.add_argument(
        "--from-dump",
        metavar="FILE",
        help="start from a `kubectl get nodes,pods,... -A -o yaml` dump (a v1 List)",
    )
    parser.add_argument("--scenario", metavar="FILE", help="steps to run after applying PATHs")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed for generated names and for faults drawn at random (default 0)",
    )
    parser.add_argument(
        "--provider-option",
        action="append",
        default=[],
        metavar="PROVIDER.NAME=VALUE",
        help="a provider setting, e.g. kwok.registration-delay=5s (repeatable)",
    )
    parser.add_argument(
        "--batch-idle-duration",
        default="1s",
        metavar="DURATION",
        help="the provisioner waits for more pending pods until none came for this long "
        "(default 1s)",
    )
    parser.add_argument(
        "--batch-max-duration",
        default="10s",
        metavar="DURATION",
        help="the longest the provisioner waits, from the first pending pod of a batch "
        "(default 10s)",
    )
    parser.add_argument(
        "--node-registration-delay",
        default="30s",
        metavar="DURATION",
        help="how long a cloud instance takes to register its Node (providers other than kwok)",
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        metavar="GATE=BOOL,...",
        help="Karpenter's feature gates, as run takes them, e.g. SpotToSpotConsolidation=true",
    )
    parser.add_argument(
        "--preference-policy",
        choices=("Respect", "Ignore"),
        default="Respect",
        help="preferred affinities and ScheduleAnyway spreads (default Respect)",
    )
    parser.add_argument(
        "--min-values-policy",
        choices=("Strict", "BestEffort"),
        default="Strict",
        help="requirement minValues handling (default Strict)",
    )
    parser.add_argument(
        "--scheduler-config",
        default="",
        metavar="DOCUMENT|FILE",
        help="kube-scheduler settings to mirror (podTopologySpread.defaultConstraints), as run "
        "takes them: a YAML/JSON document or a file holding one",
    )
    parser.add_argument(
        "--ignore-dra-requests",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="skip pods with Dynamic Resource Allocation claims, as run does by default; "
        "--no-ignore-dra-requests allocates their devices",
    )
    parser.add_argument(
        "--limits",
        choices=tuple(BY_NAME),
        default=DEFAULT.name,
        help=f"how much one run may be asked to do: {DEFAULT.name} ({_summary(DEFAULT)}; a run "
        f"within about 30 s of CPU) or {LARGE.name} ({_summary(LARGE)}; for clusters of "
        "thousands of nodes, a run at the limits takes minutes); docs/simulate.md lists every "
        "limit",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")


def _summary(limits: Limits) -> str:
    """The limits ``--help`` names."""
    return (
        f"{limits.pods:,} pods, {limits.snapshot_nodes:,} snapshot Nodes, "
        f"{format_duration(limits.step_time)} a step and "
        f"{format_duration(limits.scenario_time)} in all"
    )


def read_inputs(args: argparse.Namespace, host: PluginHost) -> SimulationInputs:
    """The run's inputs from the flags of :func:`add_input_arguments`, read and checked."""
    limits = BY_NAME[args.limits]
    scenario = load_scenario(Path(args.scenario), limits) if args.scenario else Scenario()
    provider_options = _parse_provider_options(args.provider_option)
    options = _options(args)
    snapshot = _read_snapshot(args, host, limits)
    existing = snapshot.objects if snapshot is not None else []
    if not args.paths and snapshot is None:
        raise InputError(
            [f"give manifests (PATH ...), --from-cluster or --from-dump FILE to {args.command}"]
        )
    node_class_refs: dict[str, str] = {}
    objects = (
        load_checked(
            [Path(p) for p in args.paths],
            host,
            existing,
            file_hint=scenario_hint,
            limits=limits,
            node_class_refs=node_class_refs,
        )
        if args.paths
        else []
    )
    warn_static_without_gate([*existing, *objects], options)
    registration = _duration_option("--node-registration-delay", args.node_registration_delay)
    return SimulationInputs(
        options=options,
        provider_options=provider_options,
        seed=args.seed,
        node_registration_delay=registration,
        limits=limits,
        scenario=scenario,
        objects=objects,
        snapshot=snapshot,
        source=", ".join(args.paths) or (snapshot.source if snapshot is not None else ""),
        node_class_refs=node_class_refs,
    )


def _parse_provider_options(values: Sequence[str]) -> dict[str, dict[str, str]]:
    options: dict[str, dict[str, str]] = {}
    for value in values:
        key, sep, setting = value.partition("=")
        provider, dot, name = key.partition(".")
        if not sep or not dot or not provider or not name:
            raise InputError(
                [
                    f"--provider-option {value!r}: expected PROVIDER.NAME=VALUE, "
                    "e.g. kwok.registration-delay=5s"
                ]
            )
        options.setdefault(provider, {})[name] = setting
    return options


def _duration_option(name: str, value: str) -> timedelta:
    try:
        return parse_duration(value)
    except DurationError as error:
        raise InputError([f"{name}: {error}"]) from None


def _options(args: argparse.Namespace) -> Options:
    """The controllers' options from the flags ``run`` shares (durations, policies, gates)."""
    gates = _feature_gates(args.feature_gates)
    return Options(
        batch_idle_duration=_duration_option("--batch-idle-duration", args.batch_idle_duration),
        batch_max_duration=_duration_option("--batch-max-duration", args.batch_max_duration),
        preference_policy=args.preference_policy,
        min_values_policy=args.min_values_policy,
        spot_to_spot_consolidation=gates.get("SpotToSpotConsolidation", False),
        static_capacity=gates.get("StaticCapacity", False),
        default_spread=_default_spread(args.scheduler_config),
        node_repair=gates.get("NodeRepair", False),
        capacity_buffer=gates.get("CapacityBuffer", False),
        node_overlay=gates.get("NodeOverlay", False),
        dra=not args.ignore_dra_requests,
    )


def _read_snapshot(args: argparse.Namespace, host: PluginHost, limits: Limits) -> Snapshot | None:
    """The cluster snapshot to start from (``--from-cluster``, ``--from-dump``), if any."""
    if (args.kubeconfig or args.context) and not args.from_cluster:
        raise InputError(["--kubeconfig and --context go with --from-cluster"])
    if args.from_cluster and args.from_dump:
        raise InputError(["--from-cluster and --from-dump: give one snapshot, not both"])
    if args.from_dump:
        return read_dump(
            Path(args.from_dump), kind_registry(host), karpenter_rules(host), limits=limits
        )
    if not args.from_cluster:
        return None
    where = args.kubeconfig or "the default kubeconfig"
    context = f" (context {args.context})" if args.context else ""
    problem = kubeconfig_problem(args.kubeconfig)
    if problem is not None:
        raise InputError([f"--from-cluster {where}{context}: {problem}"])
    kinds = [
        *LOAD_ORDER,
        *(kind.model for kind in host.node_class_kinds()),
    ]
    # The API client is loaded only to read a cluster, not for every simulation.
    from nodewright.cluster.kube.snapshot import take_snapshot  # noqa: PLC0415

    try:
        taken = take_snapshot(kinds, args.kubeconfig, args.context)
    except ClusterError as error:
        raise InputError([f"--from-cluster {where}{context}: {error}"]) from None
    source = f"cluster {taken.server}"
    return read_items(
        taken.items, source, kind_registry(host), karpenter_rules(host), limits=limits
    )


def _default_spread(value: str) -> tuple[TopologySpreadConstraint, ...]:
    """``--scheduler-config``'s default topology spread constraints."""
    try:
        config = load_scheduler_config(value)
    except SchedulerConfigError as error:
        raise InputError([f"--scheduler-config: {error}"]) from None
    return config.default_constraints if config is not None else ()


def _feature_gates(text: str) -> dict[str, bool]:
    """Karpenter's gates at their defaults, overridden by ``--feature-gates``."""
    try:
        gates = parse_feature_gates(DEFAULT_FEATURE_GATES)
        gates.update(parse_feature_gates(text))
    except ValueError as error:
        raise InputError([f"--feature-gates {cut(text)}: {error}"]) from None
    return gates


def check_output_file(option: str, path: Path) -> None:
    """Refuse an output path that cannot be written before simulating, not after."""
    if path.is_dir():
        raise InputError([f"{option} {path}: is a directory; name a file"])
    if not path.parent.is_dir():
        raise InputError([f"{option} {path}: the folder {path.parent} does not exist"])


def configure_logging(clock: Clock, verbose: bool, progress: ProgressLine | None = None) -> None:
    handler = (
        logging.StreamHandler(sys.stdout)
        if progress is None
        else ProgressAwareHandler(sys.stdout, progress)
    )
    handler.setFormatter(TextFormatter.simulated(clock, verbose))
    root = logging.getLogger("nodewright")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False
