"""The set-up hooks, called through the host: what a provider declares at load, the context
it is configured with, its NodeClasses' status, and the configuration problem and report
notes it owns."""

from __future__ import annotations

import pytest

from nodewright.api.labels import ZONE_LABEL
from nodewright.clock import SimulatedClock
from nodewright.plugin import (
    NodeClassKind,
    PluginContractError,
    ProviderContext,
    ProviderInfo,
    hookimpl,
)
from nodewright.plugin.host import PluginHost
from nodewright.testing import FakeProvider, fake_node_class
from nodewright.testing.conformance import UnavailableCluster
from nodewright.testing.fake_provider import FakeNodeClass
from tests.plugin.conftest import DistributionMaker
from tests.plugin.hook_hosts import bad_provider, fake_host
from tests.plugin.samples import OtherProvider

# -- identity and set-up ---------------------------------------------------------------------


def test_hook_nodewright_provider_info_is_asked_once_at_load() -> None:
    class Counting(FakeProvider):
        asked = 0

        @hookimpl
        def nodewright_provider_info(self) -> ProviderInfo:
            Counting.asked += 1
            return super().nodewright_provider_info()

    host = fake_host(Counting())
    host.provider_for("testing.nodewright.dev", "FakeNodeClass")
    host.node_class_kinds()
    assert Counting.asked == 1
    (entry,) = host.providers
    assert entry.info is not None
    assert entry.info.node_classes == (
        NodeClassKind("testing.nodewright.dev", "FakeNodeClass", FakeNodeClass),
    )


def test_hook_nodewright_provider_info_declares_label_domains_and_well_known_labels() -> None:
    host = fake_host(FakeProvider(), OtherProvider())
    assert host.restricted_label_domains() == {
        "karpenter.sh",
        "testing.nodewright.dev",
        "other.example.com",
    }
    assert "testing.nodewright.dev/size" in host.well_known_labels()
    assert ZONE_LABEL in host.well_known_labels()


def test_hook_nodewright_configure_gives_each_provider_its_own_context() -> None:
    fake, other = FakeProvider(), OtherProvider()
    host = fake_host(fake, other)
    clock = SimulatedClock()
    host.configure(
        lambda name: ProviderContext(
            cluster=UnavailableCluster(), clock=clock, options={"owner": name}
        )
    )
    assert fake.context is not None
    assert other.context is not None
    assert fake.context.options == {"owner": "fake"}
    assert other.context.options == {"owner": "other"}


# -- NodeClasses -----------------------------------------------------------------------------


def test_hook_nodewright_node_class_status_reports_readiness() -> None:
    fake = FakeProvider()
    host = fake_host(fake)
    node_class = fake_node_class(image_id="img-7")
    ready = host.node_class_status(node_class)
    assert ready.ready
    assert ready.status == {"imageID": "img-7"}
    fake.node_class_ready = False
    not_ready = host.node_class_status(node_class)
    assert (not_ready.ready, not_ready.reason) == (False, "NotReady")


def test_hook_nodewright_node_class_status_unimplemented_means_ready(
    distribution: DistributionMaker,
) -> None:
    from tests.plugin.samples import provider_source

    distribution(
        "nodewright-plain",
        entry_points={"plain": "plain_plugin"},
        modules={"plain_plugin": provider_source("plain")},
    )
    host = PluginHost.load(only=["plain"])
    (entry,) = host.providers
    assert entry.info is not None
    model = entry.info.node_classes[0].model
    assert host.node_class_status(model.model_validate({"metadata": {"name": "x"}})).ready


# -- configuration ---------------------------------------------------------------------------


def test_hook_nodewright_configuration_problem_is_none_for_a_provider_without_it() -> None:
    assert fake_host().configuration_problem("fake") is None


def test_hook_nodewright_configuration_problem_returns_the_owners_line(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_configuration_problem(self):
    return "no region: set --provider-option bad.region=<region>"
""",
    )
    assert host.configuration_problem("bad") == (
        "no region: set --provider-option bad.region=<region>"
    )


def test_hook_nodewright_configuration_problem_returning_garbage_is_a_contract_error(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_configuration_problem(self):
    return 42
""",
    )
    with pytest.raises(PluginContractError, match="nodewright_configuration_problem returned"):
        host.configuration_problem("bad")


def test_hook_nodewright_report_notes_is_empty_for_a_provider_without_it() -> None:
    assert fake_host().report_notes("fake") == []


def test_hook_nodewright_report_notes_returns_the_owners_lines(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_report_notes(self):
    return ["prices are modelled: approximate", ""]
""",
    )
    assert host.report_notes("bad") == ["prices are modelled: approximate"]


def test_hook_nodewright_report_notes_returning_garbage_is_a_contract_error(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_report_notes(self):
    return "one string, not lines"
""",
    )
    with pytest.raises(PluginContractError, match="nodewright_report_notes returned"):
        host.report_notes("bad")
