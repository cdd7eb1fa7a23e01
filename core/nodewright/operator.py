"""The operator: every controller wired to one cluster, one plugin host and one clock.

The same :class:`Operator` runs in ``nodewright simulate`` (against the in-memory cluster,
with a simulated clock) and in ``nodewright run`` (against a real API server).
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from nodewright import metrics
from nodewright.clock import Clock, next_deadline
from nodewright.cluster import Cluster, ReadOnlyViolation
from nodewright.cluster.fence import NotLeaderError
from nodewright.controllers import Controller
from nodewright.controllers.capacitybuffer.controller import CapacityBuffers
from nodewright.controllers.capacitybuffer.virtualpods import VirtualPods
from nodewright.controllers.catalog import Catalog
from nodewright.controllers.disruption import DisruptionController
from nodewright.controllers.events import EventRecorder
from nodewright.controllers.metrics.node import NodeMetrics
from nodewright.controllers.metrics.nodepool import NodePoolMetrics
from nodewright.controllers.metrics.pod import PodMetrics
from nodewright.controllers.node.health import NodeHealth
from nodewright.controllers.node.termination import NodeTermination
from nodewright.controllers.nodeclaim.garbagecollection import GarbageCollection
from nodewright.controllers.nodeclaim.lifecycle import NodeClaimLifecycle
from nodewright.controllers.nodeoverlay import NodeOverlayController
from nodewright.controllers.nodepool.registrationhealth import NodePoolRegistrationHealth
from nodewright.controllers.nodepool.status import (
    NodeClassStatusController,
    NodePoolStatusController,
)
from nodewright.controllers.options import Options
from nodewright.controllers.passinputs import PassInputs, pass_inputs
from nodewright.controllers.provider import ProviderBackgroundWork
from nodewright.controllers.provisioning.controller import Provisioner
from nodewright.controllers.state.nodepoolhealth import RegistrationOutcomes
from nodewright.controllers.state.nominations import Nominations
from nodewright.controllers.static.controller import StaticDeprovisioning, StaticProvisioning
from nodewright.logfields import duration, fields
from nodewright.plugin.host import PluginHost

log = logging.getLogger("nodewright.operator")

#: A controller whose pass raised runs again this much later.
RETRY_AFTER = timedelta(seconds=5)


class Operator:
    def __init__(
        self,
        cluster: Cluster,
        host: PluginHost,
        clock: Clock,
        options: Options | None = None,
        *,
        skip_unchanged: bool = False,
    ) -> None:
        self.cluster = cluster
        self.host = host
        self.clock = clock
        self.options = options or Options()
        self.events = EventRecorder(cluster, clock)
        self.catalog = Catalog(cluster, host, clock)
        #: The CapacityBuffers' virtual pods: the buffer controller fills the store,
        #: provisioning places them and disruption keeps room for them.
        self.virtual_pods = VirtualPods(cluster, clock, enabled=self.options.capacity_buffer)
        self.buffers = CapacityBuffers(cluster, clock, self.virtual_pods)
        #: Nodes provisioning counts on for pending pods, which disruption leaves alone.
        self.nominations = Nominations(clock, self.options.batch_max_duration)
        self.provisioner = Provisioner(
            cluster,
            host,
            self.catalog,
            clock,
            self.events,
            options=self.options,
            virtual_pods=self.virtual_pods,
            nominations=self.nominations,
        )
        self.disruption = DisruptionController(
            cluster,
            host,
            self.catalog,
            clock,
            self.events,
            options=self.options,
            virtual_pods=self.virtual_pods,
            nominations=self.nominations,
        )
        #: How each NodePool's recent NodeClaims fared: the lifecycle records outcomes, the
        #: registration health controller starts pools over when they change.
        outcomes = RegistrationOutcomes()
        #: NodeOverlays are evaluated before provisioning reads the overlaid catalog.
        overlays: list[Controller] = (
            [NodeOverlayController(cluster, host, self.catalog, clock)]
            if self.options.node_overlay
            else []
        )
        #: In the order one pass runs them: provider work first (nodes register), status
        #: next (NodePools become ready), then provisioning and the lifecycle it feeds.
        self.controllers: list[Controller] = [
            ProviderBackgroundWork(host, clock, cluster),
            NodeClassStatusController(cluster, host, clock, self.events),
            NodePoolStatusController(cluster, host, self.catalog, clock, self.events),
            NodePoolRegistrationHealth(cluster, host, self.catalog, clock, outcomes),
            *overlays,
            *([self.buffers] if self.options.capacity_buffer else []),
            self.provisioner,
            # Karpenter registers the static pools' controllers only with this gate on.
            *(
                [StaticProvisioning(cluster, host, clock), StaticDeprovisioning(cluster, clock)]
                if self.options.static_capacity
                else []
            ),
            NodeClaimLifecycle(
                cluster,
                host,
                self.catalog,
                clock,
                self.events,
                outcomes=outcomes,
                dra=self.options.dra,
            ),
            self.disruption.conditions,
            self.disruption,
            *self._gated_controllers(),
            NodeTermination(cluster, host, self.catalog, clock, self.events),
            GarbageCollection(cluster, host, self.catalog, clock),
            PodMetrics(cluster, clock),
            NodeMetrics(cluster, host, clock),
            NodePoolMetrics(cluster, self.catalog, clock),
        ]
        for controller in self.controllers:
            metrics.register_controller(controller.name)
        self._due: dict[str, datetime] = {}
        #: When each controller has something due by time alone (for a :class:`Poll`, its
        #: deadline rather than the poll).
        self._deadlines: dict[str, datetime] = {}
        #: Whether a pass leaves out the controllers it cannot give anything to do (see
        #: :meth:`_unchanged_for`): a simulation, where nothing changes but what the passes
        #: write. ``nodewright run`` runs every controller whenever it wakes.
        self.skip_unchanged = skip_unchanged
        #: What each controller saw when it last started (:meth:`_inputs_of`).
        self._seen: dict[str, tuple[PassInputs, int]] = {}

    def _gated_controllers(self) -> list[Controller]:
        """The controllers of the feature gates that are on."""
        gated: list[Controller] = []
        if self.options.node_repair:
            gated.append(
                NodeHealth(
                    self.cluster,
                    self.host,
                    self.catalog,
                    self.clock,
                    self.events,
                    history=self.disruption.history,
                )
            )
        return gated

    def resync(self) -> None:
        """Have every controller look at every object on the next pass."""
        self._seen.clear()
        for controller in self.controllers:
            controller.resync()

    def _inputs_of(self, controller: Controller, inputs: PassInputs) -> tuple[PassInputs, int]:
        """What ``controller`` reads that a pass can change: ``inputs`` and, for disruption,
        the nominations provisioning makes (a node nominated anew is blocked, which its next
        pass tells in an event; nominating writes nothing to the cluster)."""
        return inputs, self.nominations.version if controller is self.disruption else 0

    def _unchanged_for(self, name: str, now: datetime, inputs: tuple[PassInputs, int]) -> bool:
        """Whether running controller ``name`` now provably changes nothing: nothing it reads
        (``inputs``) changed since it last started, and nothing it has is due by time (a poll
        it asked for only looks again, see :class:`~nodewright.clock.Poll`)."""
        if self._seen.get(name) != inputs:
            return False
        deadline = self._deadlines.get(name)
        return deadline is None or now < deadline

    def run_once(self) -> datetime | None:
        """Run every controller once; return when the earliest of them wants to run again.

        A controller that raises is logged and retried after a short delay: one broken
        object or plugin must never stop the others.
        """
        self.cluster.sync()
        # A pass runs on a cluster state whose caches have all listed (``run`` waits for them).
        metrics.cluster_sync.record(True, self.clock.now())
        for controller in self.controllers:
            now = self.clock.now()
            if self.skip_unchanged:
                inputs = self._inputs_of(
                    controller,
                    pass_inputs(self.cluster, self.catalog, self.host, self.virtual_pods),
                )
                if self._unchanged_for(controller.name, now, inputs):
                    continue
                self._seen[controller.name] = inputs
            started = time.perf_counter()
            failed = False
            try:
                with metrics.controller_scope(controller.name):
                    after = controller.reconcile()
            except ReadOnlyViolation:
                raise  # a programming error: retrying would hide it
            except NotLeaderError as error:
                # This replica may no longer act (its Lease was not renewed in time): the rest
                # of the pass would only be refused too.
                log.warning(
                    "pass stopped: this replica is not leading",
                    extra=fields(controller=controller.name, error=str(error)),
                )
                self._due[controller.name] = now + RETRY_AFTER
                self._deadlines[controller.name] = now + RETRY_AFTER
                break
            except Exception:
                log.exception(
                    "Reconciler error",
                    extra=fields(controller=controller.name, requeue=duration(RETRY_AFTER)),
                )
                after = RETRY_AFTER
                failed = True
            metrics.record_reconcile(
                controller.name,
                time.perf_counter() - started,
                failed=failed,
                requeue_after=after is not None,
            )
            if after is None:
                self._due.pop(controller.name, None)
            else:
                self._due[controller.name] = now + after
            deadline = next_deadline(after)
            if deadline is None:
                self._deadlines.pop(controller.name, None)
            else:
                self._deadlines[controller.name] = now + deadline
        return min(self._due.values(), default=None)

    def next_deadline(self) -> datetime | None:
        """The earliest instant any controller has something due by time alone, polls left
        out: while nothing changes in the cluster, nothing happens before then."""
        return min(self._deadlines.values(), default=None)
