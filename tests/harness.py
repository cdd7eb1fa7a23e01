"""The operator harness: the real operator over a simulated cluster and clock, with the
providers of a plugin host, for tests that drive the controllers directly instead of through
``nodewright simulate``. Controller, disruption and lifecycle tests build on it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from nodewright.api.core import Event, Node, Pod
from nodewright.api.karpenter import NodeClaim
from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_text
from nodewright.api.meta import KubeObject
from nodewright.clock import SimulatedClock
from nodewright.controllers.options import Options
from nodewright.plugin.host import PluginHost
from nodewright.simulation.kubelet import DEFAULT_REGISTRATION_DELAY
from nodewright.simulation.runner import Simulation


class OperatorHarness:
    """One simulation: its cluster, clock and operator, and what a test reads back."""

    def __init__(
        self,
        host: PluginHost,
        options: Options | None = None,
        provider_options: Mapping[str, Mapping[str, str]] | None = None,
        *,
        kinds: Iterable[type[KubeObject]] = (),
        node_registration_delay: timedelta | None = DEFAULT_REGISTRATION_DELAY,
        clock: SimulatedClock | None = None,
    ) -> None:
        self.sim = Simulation(
            host,
            options,
            provider_options,
            node_registration_delay=node_registration_delay,
            clock=clock,
        )
        self.cluster = self.sim.cluster
        self.clock = self.sim.clock
        self._registry = KindRegistry()
        for kind in kinds:
            self._registry.register(kind)

    @property
    def operator(self) -> Any:
        return self.sim.operator

    # -- driving ----------------------------------------------------------------------------------

    def apply(self, *manifests: str | KubeObject) -> None:
        """Apply manifest text (the provider's NodeClass kinds given as ``kinds``) and objects,
        in order, as ``kubectl apply`` would."""
        texts: list[str] = []
        for manifest in [*manifests, None]:
            if isinstance(manifest, str):
                texts.append(manifest)
                continue
            if texts:  # consecutive texts load as one file, so they may refer to each other
                self.sim.apply(load_text("\n---\n".join(texts), "test", self._registry))
                texts = []
            if manifest is not None:
                self.sim.apply([manifest])

    def create(self, obj: KubeObject) -> None:
        self.cluster.create(obj)

    def settle(self) -> None:
        self.sim.settle()

    def advance(self, duration: timedelta) -> None:
        self.sim.advance(duration)

    # -- reading ----------------------------------------------------------------------------------

    def nodes(self) -> list[Node]:
        return self.cluster.list(Node)

    def claims(self) -> list[NodeClaim]:
        return self.cluster.list(NodeClaim)

    def pods(self, app: str) -> list[Pod]:
        return self.cluster.list(Pod, labels={"app": app})

    def events(self, reason: str, kind: str | None = None) -> list[Event]:
        return [
            e
            for e in self.cluster.list(Event)
            if e.reason == reason and (kind is None or e.involved_object.kind == kind)
        ]

    def messages(self, reason: str, kind: str | None = None) -> list[str]:
        return [e.message for e in self.events(reason, kind)]
