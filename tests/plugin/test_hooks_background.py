"""The background-work and node-repair hooks, called through the host: when each plugin's
reconcile runs, and the repair policies a provider declares."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nodewright.clock import SIMULATION_EPOCH
from nodewright.plugin import PluginContractError, RepairPolicy
from nodewright.plugin.host import PluginHost
from nodewright.testing import FakeProvider, fake_node_class, launch_request, make_node_claim
from tests.plugin.conftest import DistributionMaker
from tests.plugin.hook_hosts import bad_provider, fake_host
from tests.plugin.samples import OtherProvider

# -- background work -------------------------------------------------------------------------


def test_hook_nodewright_reconcile_runs_each_plugin_when_it_is_due() -> None:
    fast, slow = FakeProvider(), OtherProvider()
    fast.reconcile_period = timedelta(seconds=2)
    slow.reconcile_period = timedelta(minutes=1)
    host = fake_host(fast, slow)
    now = SIMULATION_EPOCH
    assert host.reconcile(now) == timedelta(seconds=2)
    assert host.reconcile(now + timedelta(seconds=1)) == timedelta(seconds=1)
    assert host.reconcile(now + timedelta(seconds=2)) == timedelta(seconds=2)
    assert len(fast.calls_to("reconcile")) == 2
    assert len(slow.calls_to("reconcile")) == 1
    assert slow.calls_to("reconcile")[0]["now"] == now


def test_hook_nodewright_reconcile_failures_are_logged_not_raised() -> None:
    fake = FakeProvider()
    fake.next_error("reconcile", RuntimeError("queue unreachable"))
    host = fake_host(fake)
    assert host.reconcile(SIMULATION_EPOCH) == timedelta(seconds=10)
    (error,) = host.recent_errors
    assert (
        str(error) == "plugin 'fake': nodewright_reconcile raised RuntimeError: queue unreachable"
    )
    assert host.reconcile(SIMULATION_EPOCH + timedelta(seconds=10)) == timedelta(seconds=10)
    assert len(fake.calls_to("reconcile")) == 2


def test_hook_nodewright_reconcile_runs_again_right_after_a_launch() -> None:
    """A launch makes the owner's background work due at once (it registers new nodes)."""
    from datetime import UTC, datetime, timedelta

    from nodewright.testing import FakeProvider

    provider = FakeProvider()
    provider.reconcile_period = timedelta(minutes=10)
    host = PluginHost.load(entry_points=False, plugins={"fake": provider})
    now = datetime(2026, 1, 1, tzinfo=UTC)
    host.reconcile(now)
    assert host.reconcile(now + timedelta(seconds=1)) == timedelta(minutes=10) - timedelta(
        seconds=1
    )
    node_class = fake_node_class()
    host.launch(launch_request(host, make_node_claim("a", node_class), node_class))
    before = len(provider.calls_to("nodewright_reconcile"))
    host.reconcile(now + timedelta(seconds=2))
    assert len(provider.calls_to("nodewright_reconcile")) == before + 1


# -- node repair -----------------------------------------------------------------------------


def test_hook_nodewright_repair_policies_is_empty_for_a_provider_without_it() -> None:
    assert fake_host().repair_policies("fake") == ()


def test_hook_nodewright_repair_policies_returns_the_providers_policies_once(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
calls = 0

@hookimpl
def nodewright_repair_policies(self):
    from datetime import timedelta
    from nodewright.plugin import RepairPolicy
    type(self).calls += 1
    return [RepairPolicy("Ready", "False", timedelta(minutes=10))]
""",
    )
    policies = host.repair_policies("bad")
    assert policies == (RepairPolicy("Ready", "False", timedelta(minutes=10)),)
    assert host.repair_policies("bad") == policies
    plugin = host.providers[0].plugin
    assert type(plugin).calls == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ("True", "returned bool True, not a sequence of RepairPolicy"),
        ('[RepairPolicy("", "False", timedelta(0))]', "without a condition type"),
        (
            '[RepairPolicy("Ready", "false", timedelta(0))]',
            "with status 'false', not one of True, False, Unknown",
        ),
        ('[RepairPolicy("Ready", "False", 600)]', "with toleration int 600, not a timedelta"),
        ('[RepairPolicy("Ready", "False", timedelta(minutes=-1))]', "not a timedelta >= 0"),
    ],
)
def test_hook_nodewright_repair_policies_returning_garbage_is_a_contract_error(
    distribution: DistributionMaker, returned: str, message: str
) -> None:
    host = bad_provider(
        distribution,
        f"""
@hookimpl
def nodewright_repair_policies(self):
    from datetime import timedelta
    from nodewright.plugin import RepairPolicy
    return {returned}
""",
    )
    with pytest.raises(PluginContractError, match=message) as error:
        host.repair_policies("bad")
    assert "nodewright-bad" in str(error.value)
