"""Runs the real operator against the in-memory cluster on a simulated clock.

Time jumps straight to the next moment anything is due, so a simulated hour costs only the
work done in it. Each instant is run to a fixed point (controllers and the embedded
Kubernetes until nothing writes), then the clock moves.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from nodewright.api.core import Event, Pod
from nodewright.api.meta import KubeObject
from nodewright.clock import SimulatedClock
from nodewright.cluster import AlreadyExistsError
from nodewright.cluster.memory import MemoryCluster
from nodewright.controllers.options import Options
from nodewright.operator import Operator
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import ProviderContext
from nodewright.simulation.kubelet import DEFAULT_REGISTRATION_DELAY, SimulatedKubelets
from nodewright.simulation.kubernetes import EmbeddedKubernetes

log = logging.getLogger("nodewright.simulation")
binder_log = logging.getLogger("nodewright.kube-scheduler")

#: A run settles when nothing but events changed for this long.
QUIET_PERIOD = timedelta(seconds=60)
#: Settling gives up after this long (a controller that never stops writing).
MAX_SETTLE = timedelta(hours=2)
#: The smallest step the clock takes when something asks to run again "now".
MIN_STEP = timedelta(milliseconds=100)
#: Passes at one instant before the runner assumes a livelock and moves time on.
MAX_PASSES_PER_INSTANT = 200


class Simulation:
    """An embedded cluster, the operator, and a clock that only the simulation moves."""

    def __init__(
        self,
        host: PluginHost,
        options: Options | None = None,
        provider_options: Mapping[str, Mapping[str, str]] | None = None,
        seed: int = 0,
        node_registration_delay: timedelta | None = DEFAULT_REGISTRATION_DELAY,
    ) -> None:
        self.clock = SimulatedClock()
        self.cluster = MemoryCluster(self.clock, seed=seed)
        self.kube = EmbeddedKubernetes(self.cluster, self.clock)
        self.host = host
        self.options = options or Options()
        per_provider = provider_options or {}
        host.configure(
            lambda name: ProviderContext(
                cluster=self.cluster,
                clock=self.clock,
                options=dict(per_provider.get(name, {})),
                cluster_name=self.options.cluster_name,
            )
        )
        self.operator = Operator(self.cluster, host, self.clock, self.options)
        # None: no simulated kubelets; the caller registers Nodes itself (lifecycle tests).
        self.kubelets = (
            SimulatedKubelets(self.cluster, host, self.clock, node_registration_delay)
            if node_registration_delay is not None
            else None
        )
        self._bound: dict[str, str] = {}
        self._last_rv = self.cluster.resource_version()
        self._last_change = self.clock.now()

    # -- changing the cluster -------------------------------------------------------------------

    def apply(self, objects: Iterable[KubeObject]) -> None:
        """Create the objects, or replace their spec when they already exist."""
        for obj in objects:
            try:
                self.cluster.create(obj)
            except AlreadyExistsError:
                current = self.cluster.get(type(obj), obj.name, obj.namespace)
                if current is None:
                    continue
                replacement = obj.model_copy(deep=True)
                replacement.metadata = current.metadata
                self.cluster.update(replacement)

    # -- moving time ------------------------------------------------------------------------------

    def settle(self, limit: timedelta = MAX_SETTLE) -> None:
        """Run until nothing but events has changed for :data:`QUIET_PERIOD`."""
        self._run(self.clock.now() + limit, stop_when_quiet=True)

    def advance(self, duration: timedelta) -> None:
        """Run for exactly ``duration`` of simulated time."""
        self._run(self.clock.now() + duration, stop_when_quiet=False)

    def _run(self, deadline: datetime, stop_when_quiet: bool) -> None:
        self._last_change = self.clock.now()
        while True:
            wake = self._converge()
            now = self.clock.now()
            if stop_when_quiet and now - self._last_change >= QUIET_PERIOD:
                return
            if now >= deadline:
                return
            target = wake if wake is not None else now + QUIET_PERIOD
            if stop_when_quiet:
                target = min(target, self._last_change + QUIET_PERIOD)
            self.clock.advance_to(max(min(target, deadline), now + MIN_STEP))

    def _converge(self) -> datetime | None:
        """Run controllers and the embedded Kubernetes at this instant until they stop writing."""
        wake: datetime | None = None
        for _ in range(MAX_PASSES_PER_INSTANT):
            before = self.cluster.resource_version()
            self.kube.reconcile()
            wake = self.operator.run_once()
            if self.kubelets is not None:
                wake = _earliest(wake, self.kubelets.reconcile())
            self._log_bindings()
            if self.cluster.resource_version() == before:
                break
        else:
            log.warning("controllers kept writing at %s; moving time on", self.clock.now())
        self._note_changes()
        return wake

    def _note_changes(self) -> None:
        current = self.cluster.resource_version()
        if current == self._last_rv:
            return
        if any(not isinstance(e.object, Event) for e in self.cluster.watch(self._last_rv)):
            self._last_change = self.clock.now()
        self._last_rv = current

    def _log_bindings(self) -> None:
        bound = {p.key: p.spec.node_name for p in self.cluster.peek(Pod) if p.spec.node_name}
        fresh = Counter(node for key, node in bound.items() if self._bound.get(key) != node)
        for node, count in sorted(fresh.items()):
            binder_log.info("Bound %d pod(s) to node %s", count, node)
        self._bound = bound


def _earliest(first: datetime | None, second: datetime | None) -> datetime | None:
    if first is None or second is None:
        return first or second
    return min(first, second)
