"""One variant, run: the job unpickled afresh, the variant's values set, one simulation, and
what it measured. The same in the command's own process or a local worker process, so a
variant's result does not depend on where it ran."""

from __future__ import annotations

import logging
import os
import pickle
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime

from nodewright.api.core import Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.clock import SIMULATION_EPOCH
from nodewright.cluster.objects import tune_collector
from nodewright.cluster.state import is_terminal
from nodewright.controllers.state.cluster import owner_kind
from nodewright.plugin.host import PluginHost
from nodewright.simulation import session
from nodewright.simulation.inputs import InputError
from nodewright.simulation.runner import Simulation
from nodewright.simulation.scenario import ScenarioError
from nodewright.simulation.tune.job import TuneJob, Variant


@dataclass
class VariantResult:
    """What one variant's run measured. Every field but ``cpu_seconds`` and ``ran_on``
    depends only on the job, the variant and the seed."""

    index: int
    #: Why the run could not finish (a scenario step the variant breaks); None: it did.
    error: str | None = None
    #: Simulated seconds from the start to the end of the run.
    seconds: float = 0.0
    #: What the nodes cost over the run.
    dollar_hours: float = 0.0
    #: What they cost per hour when it ended.
    price_per_hour: float = 0.0
    #: Seconds pods spent pending, summed over pods.
    pending_pod_seconds: float = 0.0
    #: The longest any one pod waited, and which.
    longest_pending: float = 0.0
    longest_pending_pod: str = ""
    #: Pods still pending at the end.
    pending_pods: int = 0
    #: Nodes nodewright disrupted (consolidation, drift, expiry), with when (seconds).
    disruption_times: list[float] = field(default_factory=list)
    #: NodeClaims the run launched.
    nodes_launched: int = 0
    #: Nodes at the end.
    nodes: int = 0
    #: From a snapshot: what its nodes cost per hour before the run.
    current_price_per_hour: float | None = None
    cpu_seconds: float = 0.0
    ran_on: str = ""

    @property
    def disruptions(self) -> int:
        return len(self.disruption_times)


class PendingWatch:
    """How long each pod waits unbound, from the pod changes after every simulated step."""

    def __init__(self, simulation: Simulation) -> None:
        self._simulation = simulation
        self._feed = simulation.cluster.state.feed(Pod)
        self._since: dict[tuple[str, ...], datetime] = {}
        self.pod_seconds = 0.0
        self.longest = 0.0
        self.longest_pod = ""

    def observe(self) -> None:
        now = self._simulation.clock.now()
        for change in self._feed.drain():
            key = tuple(str(part) for part in change.key)
            new = change.new
            waiting = (
                isinstance(new, Pod)
                and not is_terminal(new)
                and not new.spec.node_name
                and owner_kind(new) != "DaemonSet"
            )
            if waiting:
                self._since.setdefault(key, now)
            else:
                self._close(key, now)

    def finish(self) -> int:
        """Close the waits still open at the end; how many there were."""
        self.observe()
        now = self._simulation.clock.now()
        still = len(self._since)
        for key in list(self._since):
            self._close(key, now)
        return still

    def _close(self, key: tuple[str, ...], now: datetime) -> None:
        since = self._since.pop(key, None)
        if since is None:
            return
        waited = (now - since).total_seconds()
        self.pod_seconds += waited
        if waited > self.longest:
            self.longest, self.longest_pod = waited, "/".join(p for p in key if p)


def run_variant(payload: bytes, variant: Variant) -> VariantResult:
    """Run ``variant`` of the pickled job; a run a scenario step stops is a result with its
    error."""
    started = time.process_time()
    # A worker process (local or on Ray) starts with CPython's collector settings; the
    # simulation needs those simulate runs with, or the collector costs a fifth of its CPU.
    tune_collector()
    job: TuneJob = pickle.loads(payload)
    logging.getLogger("nodewright").handlers[:] = [logging.NullHandler()]
    logging.getLogger("nodewright").propagate = False
    host = PluginHost.load(only=job.plugins, blocked=job.blocked)
    result = VariantResult(variant.index)
    try:
        inputs = job.inputs_for(variant, host)
        simulation = session.start(host, inputs)
        claims_before = {claim.name for claim in simulation.cluster.list(NodeClaim)}
        watch = PendingWatch(simulation)
        simulation.on_step = watch.observe
        outcome = session.run(simulation, inputs)
    except (InputError, ScenarioError) as error:
        lines = error.lines if isinstance(error, InputError) else [str(error)]
        result.error = "; ".join(lines)
    else:
        report = outcome.report
        result.pending_pods = watch.finish()
        result.seconds = report.simulated_seconds
        result.dollar_hours = round(report.dollar_hours, 9)
        result.price_per_hour = report.total_price_per_hour
        result.pending_pod_seconds = round(watch.pod_seconds, 3)
        result.longest_pending = round(watch.longest, 3)
        result.longest_pending_pod = watch.longest_pod
        history = simulation.operator.disruption.history.records.values()
        result.disruption_times = sorted(
            ((r.removed_at or simulation.clock.now()) - SIMULATION_EPOCH).total_seconds()
            for r in history
            if r.disruption
        )
        result.nodes_launched = sum(1 for r in history if r.node_claim not in claims_before)
        result.nodes = len(report.nodes)
        if outcome.what_if is not None:
            result.current_price_per_hour = outcome.what_if.current_price_per_hour
    result.cpu_seconds = round(time.process_time() - started, 3)
    result.ran_on = f"{socket.gethostname()}:{os.getpid()}"
    return result
