"""The ``nodewright`` command: ``simulate``, ``plugins`` and ``version``.

Input problems (bad YAML, an invalid NodePool, a missing provider) are printed as one line
each, naming the file, object and field, and exit with status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from nodewright import __version__
from nodewright.api.apps import Deployment, Job, ReplicaSet, StatefulSet
from nodewright.api.capacitybuffer import CapacityBuffer, validate_capacity_buffer
from nodewright.api.core import Pod, TopologySpreadConstraint
from nodewright.api.duration import DurationError, parse_duration
from nodewright.api.excerpt import cut, printable
from nodewright.api.karpenter import NodeClaim, NodePool
from nodewright.api.manifests import (
    ExtraRules,
    KindRegistry,
    LoadResult,
    Manifest,
    ManifestError,
    UnknownKindError,
    load_manifests,
    manifest_files,
)
from nodewright.api.meta import KubeObject
from nodewright.api.nodeoverlay import NodeOverlay
from nodewright.api.validation import (
    FieldError,
    validate_node_claim,
    validate_node_overlay,
    validate_node_pool,
)
from nodewright.clock import Clock
from nodewright.cluster import ClusterError
from nodewright.cluster.kube.snapshot import take_snapshot
from nodewright.cluster.objects import mutable, tune_collector
from nodewright.controllers.options import Options
from nodewright.convert_cli import run_convert
from nodewright.crds_cli import run_crds
from nodewright.logfields import as_text, level_name, record_fields
from nodewright.plugin.errors import PluginError, UnknownNodeClassError
from nodewright.plugin.host import PluginHost
from nodewright.schedulerconfig import SchedulerConfigError, load_scheduler_config
from nodewright.service.command import add_run_command
from nodewright.settings import DEFAULT_FEATURE_GATES, DRA_FALSE_REFUSED, parse_feature_gates
from nodewright.simulation.html import render_html
from nodewright.simulation.preflight import option_problems, unusable_providers
from nodewright.simulation.progress import ProgressAwareHandler, ProgressLine
from nodewright.simulation.report import Report, build_report
from nodewright.simulation.runner import Simulation
from nodewright.simulation.scenario import Scenario, ScenarioError, Step, load_scenario
from nodewright.simulation.snapshot import (
    LOAD_ORDER,
    Snapshot,
    SnapshotError,
    describe,
    load_snapshot,
    read_dump,
    read_items,
)
from nodewright.simulation.whatif import WhatIf, build_what_if, price_nodes

EXIT_OK = 0
EXIT_INVALID_INPUT = 2


class InputError(Exception):
    """Problems with what the user gave us; each line names the file, object and field."""

    def __init__(self, lines: Sequence[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


# -- logging --------------------------------------------------------------------------------


#: Keys of log lines measured on the wall clock, which simulate leaves out.
WALL_CLOCK_KEYS = frozenset({"duration"})


class _ClockFormatter(logging.Formatter):
    """Karpenter-style lines stamped with the (simulated) clock:
    ``TIME LEVEL logger message key=value ...``."""

    def __init__(self, clock: Clock, verbose: bool = False) -> None:
        super().__init__()
        self._clock = clock
        self._verbose = verbose

    def format(self, record: logging.LogRecord) -> str:
        stamp = self._clock.now().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        logger = record.name.removeprefix("nodewright.")
        line = f"{stamp}\t{level_name(record)}\t{logger}\t{record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line += f": {type(error).__name__}: {error}"
        # Wall-clock durations differ from run to run; a simulation's output must not.
        values = {k: v for k, v in record_fields(record).items() if k not in WALL_CLOCK_KEYS}
        if values:
            line += f"\t{as_text(values)}"
        if self._verbose and record.exc_info and record.exc_info[1] is not None:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _configure_logging(clock: Clock, verbose: bool, progress: ProgressLine | None = None) -> None:
    handler = (
        logging.StreamHandler(sys.stdout)
        if progress is None
        else ProgressAwareHandler(sys.stdout, progress)
    )
    handler.setFormatter(_ClockFormatter(clock, verbose))
    root = logging.getLogger("nodewright")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False


# -- plugins selection ---------------------------------------------------------------------------

#: Comma-separated provider names to load (all installed ones when unset).
PLUGINS_ENV = "NODEWRIGHT_PLUGINS"
#: Comma-separated provider names never to load.
DISABLE_PLUGINS_ENV = "NODEWRIGHT_DISABLE_PLUGINS"


def _names(variable: str) -> list[str] | None:
    value = os.environ.get(variable)
    if value is None:
        return None
    return [name.strip() for name in value.split(",") if name.strip()]


def load_host() -> PluginHost:
    """Load providers from entry points, honouring the selection environment variables."""
    return PluginHost.load(only=_names(PLUGINS_ENV), blocked=_names(DISABLE_PLUGINS_ENV) or ())


# -- simulate ---------------------------------------------------------------------------------


def _registry(host: PluginHost) -> KindRegistry:
    registry = KindRegistry()
    for kind in host.node_class_kinds():
        registry.register(kind.model, kind.extra_versions)
    return registry


#: The most pods one simulation may be asked to run (replicas of every workload together):
#: far beyond what a simulation is for, and a bound on its time and memory.
MAX_SIMULATED_PODS = 100_000
#: The most nodes static NodePools (``spec.replicas``) may ask for together.
MAX_STATIC_NODES = 10_000


def _karpenter_rules(host: PluginHost) -> ExtraRules:
    """Karpenter's NodePool, NodeClaim and NodeOverlay rules, with the providers' label domains."""
    domains, well_known = host.restricted_label_domains(), host.well_known_labels()

    def rules(obj: KubeObject) -> Sequence[FieldError]:
        if isinstance(obj, NodePool):
            return validate_node_pool(obj, restricted_domains=domains, well_known_labels=well_known)
        if isinstance(obj, NodeClaim):
            return validate_node_claim(
                obj, restricted_domains=domains, well_known_labels=well_known
            )
        if isinstance(obj, CapacityBuffer):
            return validate_capacity_buffer(obj)
        if isinstance(obj, NodeOverlay):
            return validate_node_overlay(
                obj, restricted_domains=domains, well_known_labels=well_known
            )
        return ()

    return rules


def _loading_problems(result: LoadResult, paths: Sequence[Path], host: PluginHost) -> list[str]:
    """The load's errors as lines for the user: a NodeClass kind nobody serves is explained
    as a provider to install, and a scenario file among the manifests as one."""
    scenario_hints: dict[str, str] = {}
    files, _ = manifest_files(paths)
    for file in files:
        name = str(file)
        if any(_in_file(error, name) for error in result.errors):
            hint = _scenario_hint(file)
            if hint:
                scenario_hints[name] = hint
    lines: list[str] = []
    for error in result.errors:
        scenario = next((f for f in scenario_hints if _in_file(error, f)), None)
        if scenario is not None:
            if scenario_hints[scenario] not in lines:
                lines.append(scenario_hints[scenario])
            continue
        if isinstance(error, UnknownKindError) and error.kind.endswith("NodeClass"):
            group = error.api_version.split("/", 1)[0] if "/" in error.api_version else ""
            try:
                host.provider_for(group, error.kind)
            except UnknownNodeClassError as missing:
                lines.append(f"{error.source}: {error.kind}: {missing}")
                continue
            except PluginError as broken:
                lines.append(
                    f"{error.source}: {error.kind}: the provider for it failed to load: {broken}"
                )
                continue
        lines.append(str(error))
    return lines


def _in_file(error: ManifestError, file: str) -> bool:
    return error.source == file or error.source.startswith((f"{file}:", f"{file} "))


def _scenario_hint(file: Path) -> str | None:
    """A line saying ``file`` is a scenario, when it reads as one."""
    try:
        scenario = load_scenario(file)
    except ScenarioError:
        return None
    if not scenario.steps:
        return None
    return (
        f"{file}: this is a scenario ({len(scenario.steps)} step(s)), not manifests; "
        f"pass it with --scenario {file}"
    )


def _cross_object_problems(
    manifests: Sequence[Manifest],
    host: PluginHost,
    existing: Sequence[KubeObject] = (),
) -> list[str]:
    """Problems between objects: a NodePool's NodeClass must be served and present (given
    here or applied by an earlier step), and the workloads must fit in a simulation."""
    problems: list[str] = []
    objects = [m.obj for m in manifests if m.obj is not None]
    node_classes = {(o.api_version.split("/", 1)[0], o.kind, o.name) for o in [*existing, *objects]}
    pods = 0
    static_nodes = 0
    for manifest in manifests:
        obj = manifest.obj
        if isinstance(obj, Deployment | ReplicaSet | StatefulSet):
            pods += obj.spec.replicas
        elif isinstance(obj, Job):
            pods += obj.spec.parallelism
        elif isinstance(obj, Pod):
            pods += 1
        if not isinstance(obj, NodePool):
            continue
        static_nodes += obj.spec.replicas or 0
        ref = obj.spec.template.spec.node_class_ref
        path = "spec.template.spec.nodeClassRef"
        where = f'{manifest.where(path)}: NodePool "{obj.name}"'
        try:
            host.provider_for(ref.group, ref.kind)
        except (UnknownNodeClassError, PluginError) as error:
            problems.append(f"{where}: {path}: {error}")
            continue
        if (ref.group, ref.kind, ref.name) not in node_classes:
            problems.append(
                f'{manifest.where(f"{path}.name")}: NodePool "{obj.name}": {path}.name: '
                f'{ref.kind} "{ref.name}" is neither in the given manifests nor applied earlier'
            )
    if pods > MAX_SIMULATED_PODS:
        problems.append(
            f"{', '.join(sorted({m.source for m in manifests}))}: the workloads ask for {pods} "
            f"pods; a simulation runs at most {MAX_SIMULATED_PODS}"
        )
    if static_nodes > MAX_STATIC_NODES:
        problems.append(
            f"{', '.join(sorted({m.source for m in manifests}))}: static NodePools ask for "
            f"{static_nodes} nodes; a simulation runs at most {MAX_STATIC_NODES}"
        )
    return problems


def _load(
    paths: Sequence[Path], host: PluginHost, existing: Sequence[KubeObject] = ()
) -> list[KubeObject]:
    """Load, check and convert manifests; warnings are printed, problems raised."""
    result = load_manifests(paths, _registry(host), rules=_karpenter_rules(host))
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if result.errors:
        raise InputError(_loading_problems(result, paths, host))
    problems = _cross_object_problems(result.manifests, host, existing)
    if problems:
        raise InputError(problems)
    return result.objects


#: The NodePool CRD's rule against turning a pool static or dynamic once it exists.
STATIC_SWITCH_MESSAGE = (
    "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) "
    "provisioning modes"
)


def _static_switches(simulation: Simulation, objects: Sequence[KubeObject]) -> list[str]:
    """NodePools an update would turn static or dynamic, which the API server refuses."""
    problems = []
    for obj in objects:
        if not isinstance(obj, NodePool):
            continue
        current = simulation.cluster.get(NodePool, obj.name)
        if current is not None and (current.spec.replicas is None) != (obj.spec.replicas is None):
            problems.append(f'NodePool "{obj.name}": spec.replicas: {STATIC_SWITCH_MESSAGE}')
    return problems


def _warn_static_without_gate(objects: Sequence[KubeObject], options: Options) -> None:
    """Say so when static NodePools will launch nothing because the gate is off."""
    if options.static_capacity:
        return
    for obj in objects:
        if isinstance(obj, NodePool) and obj.spec.replicas is not None:
            print(
                f'warning: NodePool "{obj.name}" is static (spec.replicas) but the '
                "StaticCapacity feature gate is off, so it launches no nodes; "
                "pass --feature-gates StaticCapacity=true",
                file=sys.stderr,
            )


def _scale_node_pool(simulation: Simulation, step: Step) -> None:
    """``kubectl scale nodepool``: set ``spec.replicas`` of a static NodePool."""
    where = f"{step.where}.scale"
    if step.namespace:
        raise InputError([f"{where}.namespace: a NodePool is cluster-scoped; drop 'namespace'"])
    pool = simulation.cluster.get(NodePool, step.name)
    if pool is None:
        raise InputError([f"{where}: NodePool {step.name!r} does not exist"])
    if pool.spec.replicas is None:
        raise InputError(
            [
                f"{where}: NodePool {step.name!r} is dynamic (no spec.replicas), so it cannot be "
                f"scaled: {STATIC_SWITCH_MESSAGE}"
            ]
        )
    others = sum(
        p.spec.replicas or 0 for p in simulation.cluster.list(NodePool) if p.name != pool.name
    )
    if others + step.replicas > MAX_STATIC_NODES:
        raise InputError(
            [
                f"{where}.replicas: static NodePools would ask for {others + step.replicas} "
                f"nodes; a simulation runs at most {MAX_STATIC_NODES}"
            ]
        )
    pool = mutable(pool)
    pool.spec.replicas = step.replicas
    simulation.cluster.update(pool)
    logging.getLogger("nodewright.simulation").info(
        "Scaled nodepool %s to %d replica(s)", step.name, step.replicas
    )
    simulation.settle()


def _run_step(simulation: Simulation, step: Step, host: PluginHost) -> None:
    if step.action == "apply":
        applied = [
            node_class
            for kind in host.node_class_kinds()
            for node_class in simulation.cluster.list(kind.model)
        ]
        objects = _load(step.paths, host, applied)
        switched = _static_switches(simulation, objects)
        if switched:
            raise InputError([f"{step.where}.apply: {line}" for line in switched])
        _warn_static_without_gate(objects, simulation.operator.options)
        problems = unusable_providers(host, objects)
        if problems:
            raise InputError([f"{step.where}.apply: {line}" for line in problems])
        simulation.apply(objects)
        simulation.settle()
    elif step.action == "advance":
        assert step.duration is not None
        simulation.advance(step.duration)
    elif step.action == "settle":
        if step.duration is None:
            simulation.settle()
        else:
            simulation.settle(step.duration)
    elif step.action == "scale" and step.kind == "NodePool":
        _scale_node_pool(simulation, step)
    elif step.action == "scale":
        kinds = {"Deployment": Deployment, "ReplicaSet": ReplicaSet, "StatefulSet": StatefulSet}
        kind = kinds.get(step.kind)
        if kind is None:
            raise InputError(
                [
                    f"{step.where}.scale.kind: cannot scale a {step.kind}; "
                    f"expected one of {', '.join([*kinds, 'NodePool'])}"
                ]
            )
        if step.replicas > MAX_SIMULATED_PODS:
            raise InputError(
                [
                    f"{step.where}.scale.replicas: {step.replicas} pods; a simulation runs at "
                    f"most {MAX_SIMULATED_PODS}"
                ]
            )
        workload = simulation.cluster.get(kind, step.name, step.namespace or "default")
        if workload is None:
            raise InputError([f"{step.where}.scale: {step.kind} {step.name!r} does not exist"])
        assert isinstance(workload, Deployment | ReplicaSet | StatefulSet)
        workload = mutable(workload)
        workload.spec.replicas = step.replicas
        simulation.cluster.update(workload)
        logging.getLogger("nodewright.simulation").info(
            "Scaled %s %s to %d replica(s)", step.kind.lower(), step.name, step.replicas
        )
        simulation.settle()
    elif step.action == "setNodeCondition":
        change = step.condition
        assert change is not None
        try:
            names = simulation.select_nodes(change.node, change.selector, change.count)
        except LookupError as error:
            field = "node" if change.node else "selector"
            raise InputError([f"{step.where}.setNodeCondition.{field}: {error}"]) from None
        for name in names:
            simulation.set_node_condition(
                name, change.type, change.status, change.reason, change.message
            )
        simulation.settle()
    elif step.action == "delete":
        registry = _registry(host)
        versions = registry.versions(step.kind)
        model = registry.lookup(versions[0], step.kind) if versions else None
        if model is None:
            raise InputError([f"{step.where}.delete.kind: unknown kind {step.kind!r}"])
        namespace = (step.namespace or "default") if model.NAMESPACED else ""
        if simulation.cluster.get(model, step.name, namespace) is None:
            raise InputError([f"{step.where}.delete: {step.kind} {step.name!r} does not exist"])
        simulation.cluster.delete(model, step.name, namespace)
        logging.getLogger("nodewright.simulation").info(
            "Deleted %s %s", step.kind.lower(), step.name
        )
        simulation.settle()


def _print_tables(report: Report) -> None:
    print()
    header = ("NODE", "NODEPOOL", "INSTANCE TYPE", "ZONE", "CAPACITY", "$/H", "PODS")
    rows = [
        (
            n.name,
            n.node_pool or "-",
            n.instance_type or "-",
            n.zone or "-",
            n.capacity_type or "-",
            f"{n.price_per_hour:.4f}" if n.price_per_hour is not None else "-",
            str(len(n.pods)),
        )
        for n in report.nodes
    ]
    _table(header, rows)
    bound = sum(1 for p in report.pods if p.node)
    print(
        f"\n{len(report.nodes)} node(s), ${report.total_price_per_hour:.4f}/h, "
        f"{bound} pod(s) bound, {len(report.pending)} pending"
    )
    if report.pending:
        print()
        _table(
            ("PENDING POD", "REASON"),
            [(f"{p.namespace}/{p.name}", p.reason or "-") for p in report.pending],
        )
    _print_removed_nodes(report)
    _print_disruption_decisions(report)
    print(
        f"\nThe run: {_took(report.simulated_seconds)} simulated, "
        f"${report.dollar_hours:.4f} spent on nodes"
    )
    for note in report.notes:
        print(f"note: {printable(cut(note))}")


#: Events that say what disruption decided, or why it did not act.
DISRUPTION_EVENTS = frozenset(
    {
        "Unconsolidatable",
        "DisruptionBlocked",
        "ConsolidationRejected",
        "ConsolidationCandidate",
        "ConsolidationApproved",
        "DisruptionLaunching",
        "DisruptionWaitingReadiness",
        "DisruptionTerminating",
        "NodeRepairBlocked",
    }
)


def _print_removed_nodes(report: Report) -> None:
    if not report.removed_nodes:
        return
    print()
    rows = []
    for r in report.removed_nodes:
        ran = (
            _took((r.removed_at - r.launched_at).total_seconds())
            if r.removed_at is not None and r.launched_at is not None
            else "-"
        )
        why = r.disruption_reason or "deleted"
        if r.disruption:
            why += f" ({r.disruption})"
        rows.append(
            (
                r.name,
                r.node_pool or "-",
                r.instance_type or "-",
                r.capacity_type or "-",
                f"{r.price_per_hour:.4f}" if r.price_per_hour is not None else "-",
                ran,
                why,
            )
        )
    _table(("REMOVED NODE", "NODEPOOL", "INSTANCE TYPE", "CAPACITY", "$/H", "RAN", "WHY"), rows)


def _print_disruption_decisions(report: Report) -> None:
    decisions = []
    seen = set()
    for event in report.events:
        # A NodeClaim's event repeats its Node's, at the same moment, in the same words.
        message = event["message"].replace("Disrupting NodeClaim:", "Disrupting Node:")
        said = (event.get("time"), event["reason"], message)
        if event["reason"] in DISRUPTION_EVENTS and said not in seen:
            seen.add(said)
            decisions.append(event)
    if not decisions:
        return
    print()
    _table(
        ("DISRUPTION", "OBJECT", "REASON", "MESSAGE"),
        [
            (
                _clock_time(e.get("time")),
                e["object"],
                e["reason"],
                printable(cut(e["message"])) + (f" (x{e['count']})" if e["count"] != "1" else ""),
            )
            for e in decisions
        ],
    )


def _clock_time(stamp: str | None) -> str:
    """``00:03:16`` of a report time stamp."""
    return stamp[11:19] if stamp else "-"


def _took(seconds: float) -> str:
    """``2m15s``, ``1h0m5s``, ``45s``: a duration as Karpenter's logs write it."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip())


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


def cmd_simulate(args: argparse.Namespace) -> int:
    tune_collector()
    host = load_host()
    try:
        if args.json:
            _check_output_file("--json", Path(args.json))
        if args.html:
            _check_output_file("--html", Path(args.html))
        scenario = load_scenario(Path(args.scenario)) if args.scenario else Scenario()
        provider_options = _parse_provider_options(args.provider_option)
        if not args.ignore_dra_requests:
            raise InputError([f"--no-ignore-dra-requests: {DRA_FALSE_REFUSED}"])
        gates = _feature_gates(args.feature_gates)
        options = Options(
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
        )
        snapshot = _read_snapshot(args, host)
        existing = snapshot.objects if snapshot is not None else []
        if not args.paths and snapshot is None:
            raise InputError(
                ["give manifests (PATH ...), --from-cluster or --from-dump FILE to simulate"]
            )
        objects = _load([Path(p) for p in args.paths], host, existing) if args.paths else []
        _warn_static_without_gate([*existing, *objects], options)
        registration = _duration_option("--node-registration-delay", args.node_registration_delay)
        # Configuring providers may log their failures; they are reported below, once each.
        logging.getLogger("nodewright").handlers[:] = [logging.NullHandler()]
        simulation = Simulation(
            host, options, provider_options, seed=args.seed, node_registration_delay=registration
        )
        problems = option_problems(host, provider_options) or unusable_providers(
            host, [*existing, *objects]
        )
        if problems:
            raise InputError(problems)
        # A status line while it runs, on a terminal only.
        progress = ProgressLine(simulation, sys.stderr) if sys.stderr.isatty() else None
        _configure_logging(simulation.clock, args.verbose, progress)
        if progress is not None:
            simulation.on_step = progress.update
        current = None
        if snapshot is not None:
            logging.getLogger("nodewright.simulation").info("Loaded %s", describe(snapshot))
            load_snapshot(simulation, snapshot)
            current = price_nodes(simulation)
        try:
            simulation.apply(objects)
            simulation.settle()
            for step in scenario.steps:
                _run_step(simulation, step, host)
            simulation.finish()
        finally:
            if progress is not None:
                progress.finish()
    except (InputError, ScenarioError, SnapshotError) as error:
        lines = error.lines if isinstance(error, InputError | SnapshotError) else [str(error)]
        for line in lines:
            print(f"error: {printable(cut(line))}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    report = build_report(simulation)
    what_if = None
    if snapshot is not None and current is not None:
        what_if = build_what_if(simulation, snapshot.source, current, report)
        report.notes.extend(snapshot.notes)
    _print_tables(report)
    if what_if is not None:
        _print_what_if(what_if)
    if args.json:
        data = report.to_dict()
        if what_if is not None:
            data["whatIf"] = what_if.to_dict()
        try:
            Path(args.json).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            print(f"error: --json {args.json}: cannot write: {error.strerror}", file=sys.stderr)
            return EXIT_INVALID_INPUT
    if args.html:
        try:
            Path(args.html).write_text(render_html(report, what_if=what_if), encoding="utf-8")
        except OSError as error:
            print(f"error: --html {args.html}: cannot write: {error.strerror}", file=sys.stderr)
            return EXIT_INVALID_INPUT
    return EXIT_OK


def _read_snapshot(args: argparse.Namespace, host: PluginHost) -> Snapshot | None:
    """The cluster snapshot to start from (``--from-cluster``, ``--from-dump``), if any."""
    if (args.kubeconfig or args.context) and not args.from_cluster:
        raise InputError(["--kubeconfig and --context go with --from-cluster"])
    if args.from_cluster and args.from_dump:
        raise InputError(["--from-cluster and --from-dump: give one snapshot, not both"])
    if args.from_dump:
        return read_dump(Path(args.from_dump), _registry(host), _karpenter_rules(host))
    if not args.from_cluster:
        return None
    kinds = [
        *LOAD_ORDER,
        *(kind.model for kind in host.node_class_kinds()),
    ]
    try:
        taken = take_snapshot(kinds, args.kubeconfig, args.context)
    except ClusterError as error:
        where = args.kubeconfig or "the default kubeconfig"
        context = f" (context {args.context})" if args.context else ""
        raise InputError([f"--from-cluster {where}{context}: {error}"]) from None
    source = f"cluster {taken.server}"
    return read_items(taken.items, source, _registry(host), _karpenter_rules(host))


def _print_what_if(what_if: WhatIf) -> None:
    """What the snapshot's nodes cost now, what nodewright would change, what it would cost."""
    current, projected = what_if.current_price_per_hour, what_if.projected_price_per_hour
    managed = sum(1 for n in what_if.current if n.managed)
    print(f"\nWhat-if for {what_if.source}:")
    print(
        f"  now:       {len(what_if.current)} node(s), ${current:.4f}/h "
        f"({managed} managed, {len(what_if.current) - managed} unmanaged)"
    )
    saved = current - projected
    share = f", {saved / current:.0%}" if current > 0 else ""
    change = f"saves ${saved:.4f}/h{share}" if saved >= 0 else f"costs ${-saved:.4f}/h more"
    print(f"  projected: {len(what_if.projected)} node(s), ${projected:.4f}/h ({change})")
    if what_if.unplaced:
        print(f"  {len(what_if.unplaced)} pod(s) could not be placed (PENDING POD above)")
    if what_if.unpriced:
        shown = cut(", ".join(what_if.unpriced), 200)
        print(f"  not priced (no catalog offering, left out of the totals): {shown}")
    if what_if.changes:
        print()
        _table(
            ("EXISTING NODE", "NODEPOOL", "INSTANCE TYPE", "CAPACITY", "$/H", "ACTION", "WHY"),
            [
                (
                    c.node.name,
                    c.node.node_pool or "-",
                    c.node.instance_type or "-",
                    c.node.capacity_type or "-",
                    _money(c.node.price_per_hour),
                    c.action,
                    (c.reason or "deleted") + (f" ({c.disruption})" if c.disruption else ""),
                )
                for c in what_if.changes
            ],
        )
    if what_if.added:
        print()
        _table(
            ("NEW NODE", "NODEPOOL", "INSTANCE TYPE", "ZONE", "CAPACITY", "$/H"),
            [
                (
                    n.name,
                    n.node_pool or "-",
                    n.instance_type or "-",
                    n.zone or "-",
                    n.capacity_type or "-",
                    _money(n.price_per_hour),
                )
                for n in what_if.added
            ],
        )


def _money(price: float | None) -> str:
    return f"{price:.4f}" if price is not None else "-"


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


def _check_output_file(option: str, path: Path) -> None:
    """Refuse an output path that cannot be written before simulating, not after."""
    if path.is_dir():
        raise InputError([f"{option} {path}: is a directory; name a file"])
    if not path.parent.is_dir():
        raise InputError([f"{option} {path}: the folder {path.parent} does not exist"])


# -- plugins ------------------------------------------------------------------------------------


def cmd_plugins(args: argparse.Namespace) -> int:
    """List the installed providers; exit 2 when any of them failed to load, so a script
    (or an install check) notices a broken one."""
    host = load_host()
    rows = host.describe()
    if args.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print('No providers installed. Install one, e.g.: pip install "nodewright[kwok]"')
    else:
        header = ("NAME", "DISTRIBUTION", "VERSION", "NODE CLASSES", "STATUS")
        keys = ("name", "distribution", "version", "node_classes", "status")
        _table(header, [tuple(str(row.get(k, "")) for k in keys) for row in rows])
    broken = [row for row in rows if row.get("status", "ok") != "ok"]
    for row in broken:
        print(
            f"error: provider {row['name']} ({row['distribution']} {row['version']}): "
            f"{row['status'].removeprefix('error: ')}",
            file=sys.stderr,
        )
    return EXIT_INVALID_INPUT if broken else EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    host = load_host()
    return run_convert(
        [Path(p) for p in args.paths], registry=_registry(host), rules=_karpenter_rules(host)
    )


def cmd_crds(args: argparse.Namespace) -> int:
    return run_crds(load_host(), Path(args.output_dir) if args.output_dir else None)


def cmd_version(_: argparse.Namespace) -> int:
    print(f"nodewright {__version__}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nodewright",
        description="A Kubernetes node autoscaler, drop-in compatible with Karpenter.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    simulate = commands.add_parser(
        "simulate",
        help="run the controller against an in-memory cluster with a simulated clock",
        description="Load manifests (NodePools, node classes, workloads, nodes), run nodewright "
        "against an embedded cluster until it settles, run the scenario's steps, and report.",
    )
    simulate.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="manifest files or directories (with a snapshot: applied over it)",
    )
    simulate.add_argument(
        "--from-cluster",
        action="store_true",
        help="start from a read-only snapshot of a real cluster and report the what-if",
    )
    simulate.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="with --from-cluster: the kubeconfig (default $KUBECONFIG or ~/.kube/config)",
    )
    simulate.add_argument(
        "--context", metavar="NAME", help="with --from-cluster: the kubeconfig context"
    )
    simulate.add_argument(
        "--from-dump",
        metavar="FILE",
        help="start from a `kubectl get nodes,pods,... -A -o yaml` dump (a v1 List)",
    )
    simulate.add_argument("--scenario", metavar="FILE", help="steps to run after applying PATHs")
    simulate.add_argument("--json", metavar="FILE", help="write a JSON report to FILE")
    simulate.add_argument(
        "--html",
        metavar="FILE",
        help="write the report as one self-contained web page (timeline charts, nodes, events)",
    )
    simulate.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed for generated names and for faults drawn at random (default 0)",
    )
    simulate.add_argument(
        "--provider-option",
        action="append",
        default=[],
        metavar="PROVIDER.NAME=VALUE",
        help="a provider setting, e.g. kwok.registration-delay=5s (repeatable)",
    )
    simulate.add_argument("--batch-idle-duration", default="1s", metavar="DURATION")
    simulate.add_argument("--batch-max-duration", default="10s", metavar="DURATION")
    simulate.add_argument(
        "--node-registration-delay",
        default="30s",
        metavar="DURATION",
        help="how long a cloud instance takes to register its Node (providers other than kwok)",
    )
    simulate.add_argument(
        "--feature-gates",
        default="",
        metavar="GATE=BOOL,...",
        help="Karpenter's feature gates, as run takes them, e.g. SpotToSpotConsolidation=true",
    )
    simulate.add_argument(
        "--preference-policy",
        choices=("Respect", "Ignore"),
        default="Respect",
        help="preferred affinities and ScheduleAnyway spreads (default Respect)",
    )
    simulate.add_argument(
        "--min-values-policy",
        choices=("Strict", "BestEffort"),
        default="Strict",
        help="requirement minValues handling (default Strict)",
    )
    simulate.add_argument(
        "--scheduler-config",
        default="",
        metavar="DOCUMENT|FILE",
        help="kube-scheduler settings to mirror (podTopologySpread.defaultConstraints), as run "
        "takes them: a YAML/JSON document or a file holding one",
    )
    simulate.add_argument(
        "--ignore-dra-requests",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="skip pods with Dynamic Resource Allocation claims, as run does (only true)",
    )
    simulate.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    simulate.set_defaults(handler=cmd_simulate)

    plugins = commands.add_parser("plugins", help="list installed providers")
    plugins.add_argument("--json", action="store_true", help="print JSON")
    plugins.set_defaults(handler=cmd_plugins)

    convert = commands.add_parser(
        "convert",
        help="print retired Karpenter manifests (v1alpha5, v1beta1, v1alpha2) as current ones",
        description="Convert Provisioner/AWSNodeTemplate (v1alpha5), v1beta1 NodePool/NodeClaim "
        "and v1alpha2 AKSNodeClass documents to karpenter.sh/v1 and current NodeClasses; other "
        "documents pass through. Fields that cannot be carried over are named on stderr.",
    )
    convert.add_argument("paths", nargs="+", metavar="FILE", help="manifest files or directories")
    convert.set_defaults(handler=cmd_convert)

    crds = commands.add_parser(
        "crds",
        help="print the CRDs: NodePool, NodeClaim and each installed provider's NodeClass",
    )
    crds.add_argument(
        "--output-dir", metavar="DIR", help="write one YAML file per CRD into DIR instead"
    )
    crds.set_defaults(handler=cmd_crds)

    add_run_command(commands, load_host)

    version = commands.add_parser("version", help="print the version")
    version.set_defaults(handler=cmd_version)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = args.handler
    result: int = handler(args)
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
