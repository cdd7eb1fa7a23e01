"""One simulation from start to report: what ``nodewright simulate`` runs once and
``nodewright tune`` once per variant.

The inputs are read and checked before (:mod:`nodewright.simulation.inputs`,
:mod:`nodewright.simulation.scenario`, :mod:`nodewright.simulation.snapshot`); :func:`start`
builds the simulation and refuses providers that cannot work, :func:`run` loads the snapshot,
applies the manifests, runs the scenario and builds the report (and the what-if, from a
snapshot).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from nodewright.api.karpenter import NodePool
from nodewright.api.meta import KubeObject
from nodewright.controllers.options import Options
from nodewright.plugin.host import PluginHost
from nodewright.simulation.inputs import NODE_CLASS_REF, InputError
from nodewright.simulation.limits import LimitReached, Limits
from nodewright.simulation.preflight import option_problems, unusable_providers
from nodewright.simulation.report import Report, build_report
from nodewright.simulation.runner import Simulation
from nodewright.simulation.scenario import Scenario, run_scenario
from nodewright.simulation.snapshot import Snapshot, describe, load_snapshot
from nodewright.simulation.whatif import WhatIf, build_what_if, price_nodes

log = logging.getLogger("nodewright.simulation")


@dataclass
class SimulationInputs:
    """Everything one run is given, read and checked."""

    options: Options
    provider_options: dict[str, dict[str, str]]
    seed: int
    node_registration_delay: timedelta
    #: How much the run may be asked to do (``--limits``): the scenario's steps are checked
    #: against them as they run, wherever that is (a tune's worker process too).
    limits: Limits
    scenario: Scenario = field(default_factory=Scenario)
    #: Manifests, applied over the snapshot when there is one.
    objects: list[KubeObject] = field(default_factory=list)
    snapshot: Snapshot | None = None
    #: What the run starts from, for a refusal while it settles: the manifest files, or the
    #: snapshot's source.
    source: str = ""
    #: Per NodePool of the manifests, where it names its NodeClass
    #: (:func:`~nodewright.simulation.inputs.node_class_ref_places`).
    node_class_refs: dict[str, str] = field(default_factory=dict)

    def node_class_ref(self, pool: NodePool) -> str:
        """Where ``pool`` names its NodeClass, for a problem with its provider: its manifest's
        file and line, or the snapshot it came from."""
        found = self.node_class_refs.get(pool.name)
        if found is not None:
            return found
        source = f"{self.snapshot.source}: " if self.snapshot is not None else ""
        return f'{source}NodePool "{pool.name}": {NODE_CLASS_REF}'

    def all_objects(self) -> list[KubeObject]:
        """The snapshot's objects, then the manifests'."""
        existing = self.snapshot.objects if self.snapshot is not None else []
        return [*existing, *self.objects]


@dataclass
class Outcome:
    simulation: Simulation
    report: Report
    #: From a snapshot: what its nodes cost and what the run made of them.
    what_if: WhatIf | None = None


def start(host: PluginHost, inputs: SimulationInputs) -> Simulation:
    """The simulation, its providers configured; :class:`InputError` when a provider option
    is refused or a provider the NodePools need cannot work."""
    simulation = Simulation(
        host,
        inputs.options,
        inputs.provider_options,
        seed=inputs.seed,
        node_registration_delay=inputs.node_registration_delay,
    )
    problems = option_problems(host, inputs.provider_options) or unusable_providers(
        host, inputs.all_objects(), inputs.node_class_ref
    )
    if problems:
        raise InputError(problems)
    simulation.limits = inputs.limits
    return simulation


def run(simulation: Simulation, inputs: SimulationInputs) -> Outcome:
    """Load, apply, settle, run the scenario, and report. A scenario step that cannot run,
    or a run beyond its limits, raises :class:`InputError` naming the step (or the inputs,
    while they settle)."""
    snapshot = inputs.snapshot
    current = None
    if snapshot is not None:
        log.info("Loaded %s", describe(snapshot))
        load_snapshot(simulation, snapshot)
        current = price_nodes(simulation)
        # The timeline prices the snapshot's unmanaged nodes as the what-if does.
        simulation.known_prices = {
            n.name: n.price_per_hour
            for n in current
            if not n.managed and n.price_per_hour is not None
        }
    simulation.apply(inputs.objects)
    # The snapshot's and the manifests' NodeClaims were there before the run.
    simulation.forget_launches()
    try:
        simulation.settle()
    except LimitReached as error:
        raise InputError([f"{inputs.source or 'the inputs'}: {error}"]) from None
    run_scenario(simulation, inputs.scenario, simulation.host, inputs.limits)
    try:
        simulation.finish()
    except LimitReached as error:
        raise InputError([f"{inputs.source or 'the inputs'}: {error}"]) from None
    report = build_report(simulation)
    what_if = None
    if snapshot is not None and current is not None:
        what_if = build_what_if(simulation, snapshot.source, current, report)
        report.notes.extend(snapshot.notes)
    return Outcome(simulation, report, what_if)
