"""Runs the real operator against the in-memory cluster on a simulated clock.

Time jumps straight to the next moment anything is due, so a simulated hour costs only the
work done in it; while nothing changes, it jumps over the controllers' periodic polls to the
next thing due by time alone, so idle time costs nothing. Each instant is run to a fixed
point (controllers and the embedded Kubernetes until nothing writes), then the clock moves.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import cast

from nodewright.api.core import Event, Node, NodeCondition, Pod
from nodewright.api.karpenter import CONDITION_LAUNCHED, CONDITION_REGISTERED, NodeClaim
from nodewright.api.labels import SIMULATED_CONDITIONS_ANNOTATION
from nodewright.api.meta import Condition, KubeObject, find_condition
from nodewright.clock import SimulatedClock
from nodewright.cluster import AlreadyExistsError, object_version
from nodewright.cluster.memory import MemoryCluster
from nodewright.cluster.objects import mutable
from nodewright.controllers.options import Options
from nodewright.operator import Operator
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import ProviderContext
from nodewright.simulation.kubelet import DEFAULT_REGISTRATION_DELAY, SimulatedKubelets
from nodewright.simulation.kubernetes import EmbeddedKubernetes
from nodewright.simulation.limits import Limits, Work
from nodewright.simulation.timeline import Timeline

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
        *,
        clock: SimulatedClock | None = None,
    ) -> None:
        # A test hands in the clock when something built before the simulation (a fake
        # cloud stamping its resources) must tell the same time.
        self.clock = clock or SimulatedClock()
        self.cluster = MemoryCluster(self.clock, seed=seed)
        self.options = options or Options()
        self.kube = EmbeddedKubernetes(self.cluster, self.clock, self.options.default_spread)
        self.host = host
        per_provider = provider_options or {}
        host.configure(
            lambda name: ProviderContext(
                cluster=self.cluster,
                clock=self.clock,
                options=dict(per_provider.get(name, {})),
                cluster_name=self.options.cluster_name,
                seed=seed,
            )
        )
        # Nothing changes here but what the passes write: a pass leaves out the controllers
        # it cannot give anything to do.
        self.operator = Operator(self.cluster, host, self.clock, self.options, skip_unchanged=True)
        # None: no simulated kubelets; the caller registers Nodes itself (lifecycle tests).
        self.kubelets = (
            SimulatedKubelets(self.cluster, host, self.clock, node_registration_delay)
            if node_registration_delay is not None
            else None
        )
        #: Hourly prices of Nodes no NodeClaim launched, known from elsewhere (a snapshot's
        #: nodes, priced from the catalog); the timeline counts other such Nodes as free.
        self.known_prices: dict[str, float] = {}
        #: Pod changes since the last pass: bindings are logged from them.
        self._pods = self.cluster.state.feed(Pod)
        #: What each step looked like, and what the run cost (the report's timeline).
        self.timeline = Timeline(self.cluster.state, self._node_price, self.clock.now())
        self._last_seen = self._object_changes()
        self._last_change = self.clock.now()
        #: When the simulated kubelets next have something to do.
        self._kubelets_wake: datetime | None = None
        #: Called after every simulated step (the command line's progress line).
        self.on_step: Callable[[], None] | None = None
        #: Bounds on the nodes the run launches and the work it does, checked after
        #: every step (:class:`~nodewright.simulation.limits.LimitReached`); None: unbounded.
        self.limits: Limits | None = None
        #: NodeClaims created since the start, or since :meth:`forget_launches`.
        self.nodes_launched = 0
        #: Passes of the controllers so far, and the Nodes there at each, summed.
        self._passes = 0
        self._nodes_in_passes = 0
        self._claims = self.cluster.state.feed(NodeClaim)
        self.operator.provisioner.launch_allowance = self._launch_allowance

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

    def select_nodes(
        self, name: str = "", selector: Iterable[tuple[str, str]] = (), count: int | None = None
    ) -> list[str]:
        """Names of the Node called ``name``, or of the first ``count`` (None: all) Nodes by
        name carrying every label of ``selector`` and not being deleted; raises LookupError
        saying what is missing."""
        state = self.cluster.state
        if name:
            if state.get(Node, ("", name)) is None:
                present = ", ".join(key[1] for key in sorted(state.objects(Node))[:10])
                raise LookupError(f"Node {name!r} does not exist (nodes: {present or 'none'})")
            return [name]
        wanted = dict(selector)
        matching = [
            node.name
            for node in state.sorted(Node)
            if not node.deleting
            and all(node.metadata.labels.get(k) == v for k, v in wanted.items())
        ]
        shown = ",".join(f"{k}={v}" for k, v in wanted.items())
        if not matching:
            raise LookupError(f"no Node carries the labels {shown}")
        if count is not None and len(matching) < count:
            raise LookupError(
                f"{len(matching)} Node(s) carry the labels {shown}, fewer than count {count}"
            )
        return matching if count is None else matching[:count]

    def set_node_condition(
        self, node_name: str, condition_type: str, status: str, reason: str = "", message: str = ""
    ) -> Node:
        """Report a condition on a Node as its kubelet or a node agent would (``Ready=False``
        for a broken machine); the transition time is now when the status changes. The Node
        is annotated so emulated kubelets keep the condition as written."""
        node = self.cluster.get(Node, node_name)
        if node is None:
            raise KeyError(node_name)
        node = mutable(node)
        annotations = node.metadata.annotations
        pinned = [t for t in annotations.get(SIMULATED_CONDITIONS_ANNOTATION, "").split(",") if t]
        if condition_type not in pinned:
            annotations[SIMULATED_CONDITIONS_ANNOTATION] = ",".join([*pinned, condition_type])
            node = self.cluster.update(node).status_copy()
        now = self.clock.now()
        current = next((c for c in node.status.conditions if c.type == condition_type), None)
        if current is None:
            current = NodeCondition(type=condition_type, status=status, last_transition_time=now)
            node.status.conditions.append(current)
        elif current.status != status:
            current.status = status
            current.last_transition_time = now
        current.reason = reason or None
        current.message = message or None
        current.last_heartbeat_time = now
        log.info("Set condition %s=%s on node %s", condition_type, status, node_name)
        return self.cluster.update_status(node)

    # -- moving time ------------------------------------------------------------------------------

    def settle(self, limit: timedelta = MAX_SETTLE) -> None:
        """Run until nothing but events has changed for :data:`QUIET_PERIOD`."""
        self._run(self.clock.now() + limit, stop_when_quiet=True)

    def advance(self, duration: timedelta) -> None:
        """Run for exactly ``duration`` of simulated time."""
        self._run(self.clock.now() + duration, stop_when_quiet=False)

    def finish(self, limit: timedelta = MAX_SETTLE) -> None:
        """End the run: settle first if an instance is still launching, so the report shows
        the node it becomes (or the launch's failure), not a run cut short."""
        if self.launches_in_flight():
            self.settle(limit)

    def forget_launches(self) -> None:
        """Count no NodeClaim so far as launched by the run (a snapshot's, the manifests')."""
        self._claims.drain()
        self.nodes_launched = 0

    def _launch_allowance(self) -> int | None:
        """How many NodeClaims a provisioning pass may plan: one beyond what the launch limit
        leaves, so that a pass that would plan more goes beyond the limit, and the run stops
        there, without planning (and creating) the rest (None: no limits). Counted as the
        limit counts them, at the end of the last step: NodeClaims made since then may take
        the run a little further beyond, never a run within the limit."""
        if self.limits is None:
            return None
        return max(0, self.limits.launched_nodes + 1 - self.nodes_launched)

    def _check_limits(self) -> None:
        self.nodes_launched += sum(1 for change in self._claims.drain() if change.old is None)
        if self.limits is not None:
            self.limits.check_run(self.work())

    def work(self) -> Work:
        """The work the run's controllers have done so far (what its limits count)."""
        return Work(
            passes=self._passes,
            nodes_in_passes=self._nodes_in_passes,
            launched=self.nodes_launched,
            pods_solved=self.operator.provisioner.pods_solved,
            claims_tried=self.operator.provisioner.claims_tried,
            simulations=self.operator.disruption.simulations,
            pods_moved=self.operator.disruption.pods_moved,
        )

    def launches_in_flight(self) -> int:
        """Instances launched whose Node has not registered yet (their NodeClaims not going).

        A NodeClaim whose launch keeps failing is not in flight: it never changes by waiting.
        """
        count = 0
        for claim in self.cluster.state.objects(NodeClaim).values():
            conditions = claim.status.conditions
            if (
                not claim.deleting
                and _is_true(find_condition(conditions, CONDITION_LAUNCHED))
                and not _is_true(find_condition(conditions, CONDITION_REGISTERED))
            ):
                count += 1
        return count

    def _run(self, deadline: datetime, stop_when_quiet: bool) -> None:
        self._last_change = self.clock.now()
        while True:
            wake, settled = self._converge()
            if settled:
                # Every controller has seen the cluster as it is now (or was left out, having
                # seen it already), so their polls would find nothing new: time jumps to the
                # next thing due by time alone.
                wake = self._next_deadline()
            self.timeline.observe(self.clock.now())
            self._check_limits()
            if self.on_step is not None:
                self.on_step()
            now = self.clock.now()
            quiet = stop_when_quiet and now - self._last_change >= QUIET_PERIOD
            # Quiet, but a launch in flight will change things when its Node registers.
            waiting_for_launches = quiet and self.launches_in_flight() > 0
            if quiet and not waiting_for_launches:
                return
            if now >= deadline:
                return
            target = wake if wake is not None else deadline
            if stop_when_quiet and not waiting_for_launches:
                target = min(target, self._last_change + QUIET_PERIOD)
            self.clock.advance_to(max(min(target, deadline), now + MIN_STEP))

    def _next_deadline(self) -> datetime | None:
        """The next instant anything is due by time alone (the controllers' polls left out)."""
        return _earlier_wake(self.operator.next_deadline(), self._kubelets_wake)

    def _converge(self) -> tuple[datetime | None, bool]:
        """Run controllers and the embedded Kubernetes at this instant until they stop writing
        (Events aside); return when the earliest wants to run again, and whether they
        stopped (False: they kept writing, and time moves on anyway)."""
        wake: datetime | None = None
        settled = False
        for _ in range(MAX_PASSES_PER_INSTANT):
            before = object_version(self.cluster)
            self.kube.reconcile()
            wake = self.operator.run_once()
            self._passes += 1
            self._nodes_in_passes += len(self.cluster.state.objects(Node))
            # A pass may create a thousand NodeClaims: stop before they launch and register.
            self._check_limits()
            if self.kubelets is not None:
                self._kubelets_wake = self.kubelets.reconcile()
                wake = _earlier_wake(wake, self._kubelets_wake)
            self._log_bindings()
            if object_version(self.cluster) == before:
                settled = True
                break
        else:
            log.warning("controllers kept writing at %s; moving time on", self.clock.now())
        self._note_changes()
        return wake, settled

    def _object_changes(self) -> int:
        """How many changes the cluster saw to anything but Events (a quiet-period counter)."""
        state = self.cluster.state
        return state.version - state.kind_version(Event)

    def _note_changes(self) -> None:
        seen = self._object_changes()
        if seen != self._last_seen:
            self._last_change = self.clock.now()
            self._last_seen = seen

    def _node_price(self, node: Node) -> float | None:
        """The node's price at launch (for one nodewright did not launch, its known price, else
        0), None until the operator has recorded its launch."""
        claim = self.cluster.state.claim_for(node)
        if claim is None:
            return self.known_prices.get(node.name, 0.0)
        record = self.operator.disruption.history.records.get(claim.name)
        if record is None:
            return None
        return record.price_per_hour or 0.0

    def _log_bindings(self) -> None:
        fresh: Counter[str] = Counter()
        changes = self._pods.drain()
        self.timeline.pods_changed(
            (cast("Pod | None", change.old), cast("Pod | None", change.new)) for change in changes
        )
        for change in changes:
            new = change.new
            if new is None or not isinstance(new, Pod) or not new.spec.node_name:
                continue
            old = change.old
            if not isinstance(old, Pod) or old.spec.node_name != new.spec.node_name:
                fresh[new.spec.node_name] += 1
        for node, count in sorted(fresh.items()):
            binder_log.info("Bound %d pod(s) to node %s", count, node)


def _is_true(condition: Condition | None) -> bool:
    return condition is not None and condition.status == "True"


def _earlier_wake(first: datetime | None, second: datetime | None) -> datetime | None:
    """The earlier of two instants something is due (None: nothing is)."""
    if first is None or second is None:
        return first or second
    return min(first, second)
