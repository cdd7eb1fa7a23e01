"""A simulated cluster driven by the real operator and a KWOK provider, for controller tests.

:class:`KWOKWorld` keeps the fake cloud's ledger apart from the provider object, so a test
can throw the operator away (after a crash) and start a fresh one, with a fresh plugin host
and provider, on the same cluster and the same cloud.
"""

from __future__ import annotations

from collections.abc import Mapping

from nodewright.api.core import Pod
from nodewright.controllers.options import Options
from nodewright.operator import Operator
from nodewright.plugin.host import PluginHost
from nodewright.plugin.model import ProviderContext
from nodewright.testing.manifests import node_pool
from nodewright_kwok.ledger import Ledger
from nodewright_kwok.nodeclass import KWOKNodeClass
from nodewright_kwok.plugin import KWOKPlugin
from nodewright_kwok.provider import KWOKProvider
from tests.harness import OperatorHarness

#: The controller tests' NodePool requirements: on-demand Linux nodes of 4 CPUs.
FOUR_CPU_ON_DEMAND = (
    "[{key: kubernetes.io/os, operator: In, values: [linux]},"
    " {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]},"
    ' {key: karpenter.kwok.sh/instance-cpu, operator: In, values: ["4"]}]'
)


def four_cpu_pool(
    template_spec: str = "", *, name: str = "default", disruption: str | None = None
) -> str:
    """The controller tests' NodePool: 4-CPU on-demand Linux nodes, no weight."""
    return node_pool(
        name,
        weight=None,
        requirements=FOUR_CPU_ON_DEMAND,
        template_spec=template_spec,
        disruption=disruption,
    )


class KWOKWorld(OperatorHarness):
    """The operator harness with a KWOK provider whose cloud (its ledger) outlives operators."""

    def __init__(
        self, provider_options: Mapping[str, str] | None = None, options: Options | None = None
    ) -> None:
        self.ledger = Ledger()
        self.provider_options = dict(provider_options or {})
        self.provider = KWOKProvider(ledger=self.ledger)
        super().__init__(
            self._host(self.provider),
            options,
            {"kwok": self.provider_options},
            kinds=[KWOKNodeClass],
        )

    @staticmethod
    def _host(provider: KWOKProvider) -> PluginHost:
        host = PluginHost.load(entry_points=False, plugins={"kwok": KWOKPlugin(provider)})
        assert not host.errors, host.errors
        return host

    def restart(self) -> None:
        """Throw the operator, plugin host and provider away; start fresh ones on the same
        cluster and the same cloud, as a restarted process would."""
        self.provider = KWOKProvider(ledger=self.ledger)
        host = self._host(self.provider)
        host.configure(
            lambda _name: ProviderContext(
                cluster=self.cluster, clock=self.clock, options=dict(self.provider_options)
            )
        )
        self.sim.host = host
        self.sim.operator = Operator(self.cluster, host, self.clock, self.sim.options)

    def live_instances(self) -> list[str]:
        return [i.provider_id for i in self.ledger.instances()]


class Availability:
    """Counts the healthy pods of one app (Running, not deleting) from now on, replaying the
    cluster's watch history, so a test can assert a PDB was never broken in between."""

    def __init__(self, world: KWOKWorld, app: str) -> None:
        self._world = world
        self._app = app
        self._since = world.cluster.resource_version()
        self._start = {p.key: _healthy(p) for p in world.pods(app)}

    def fewest(self) -> int:
        """The fewest healthy pods at any moment since this watch began."""
        healthy = dict(self._start)
        fewest = sum(healthy.values())
        for event in self._world.cluster.watch(self._since):
            obj = event.object
            if not isinstance(obj, Pod) or obj.metadata.labels.get("app") != self._app:
                continue
            if event.type == "DELETED":
                healthy.pop(obj.key, None)
            else:
                healthy[obj.key] = _healthy(obj)
            fewest = min(fewest, sum(healthy.values()))
        return fewest


def _healthy(pod: Pod) -> bool:
    return pod.status.phase == "Running" and not pod.deleting
