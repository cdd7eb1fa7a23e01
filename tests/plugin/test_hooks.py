"""Every hook, called through the host: what reaches the plugin, what comes back, and what
happens when a plugin misbehaves. Each hook has a test named after it (tests/test_docs.py
checks)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from nodewright.api.labels import CAPACITY_TYPE_LABEL, ZONE_LABEL
from nodewright.clock import SIMULATION_EPOCH, SimulatedClock
from nodewright.plugin import (
    Instance,
    InstanceNotFoundError,
    InstanceType,
    InsufficientCapacityError,
    LaunchError,
    NodeClassKind,
    Offering,
    PluginConflictError,
    PluginContractError,
    ProviderContext,
    ProviderInfo,
    RepairPolicy,
    Reservation,
    TemporaryProviderError,
    hookimpl,
)
from nodewright.plugin.host import PluginHost
from nodewright.testing import (
    FakeProvider,
    fake_instance_type,
    fake_node_class,
    launch_request,
    make_node_claim,
)
from nodewright.testing.conformance import UnavailableCluster
from nodewright.testing.fake_provider import FakeNodeClass
from tests.plugin.conftest import DistributionMaker
from tests.plugin.samples import OtherProvider

BAD_PROVIDER = """
from nodewright.plugin import hookimpl
from nodewright.testing import FakeProvider


class BadProvider(FakeProvider):
{body}


plugin = BadProvider("bad")
"""


def bad_provider(distribution: DistributionMaker, body: str) -> PluginHost:
    """A FakeProvider from distribution nodewright-bad 0.9 with some hooks replaced."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    distribution(
        "nodewright-bad",
        "0.9",
        entry_points={"bad": "bad_plugin:plugin"},
        modules={"bad_plugin": BAD_PROVIDER.format(body=indented)},
    )
    host = PluginHost.load(only=["bad"])
    assert host.errors == []
    return host


def launched(host: PluginHost, name: str = "claim-1") -> Instance:
    node_class = fake_node_class()
    return host.launch(launch_request(host, make_node_claim(name, node_class), node_class))


def fake_host(*providers: FakeProvider) -> PluginHost:
    plugins = {p.name: p for p in providers} if providers else {"fake": FakeProvider()}
    host = PluginHost.load(entry_points=False, plugins=plugins)
    assert host.errors == []
    return host


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


# -- catalog ---------------------------------------------------------------------------------


def test_hook_nodewright_instance_types_are_merged_with_nodewright_offerings() -> None:
    fake = FakeProvider(
        instance_types=[
            fake_instance_type(
                "only-spot",
                offerings=[Offering("zone-a", "spot", 0.5), Offering("zone-b", "spot", 0.6)],
            )
        ]
    )
    host = fake_host(fake)
    (instance_type,) = host.instance_types(fake_node_class())
    # The instance_types hook returned no offerings; the offerings hook supplied them, and
    # the host derived the zone and capacity-type requirements from them.
    assert fake.calls_to("instance_types")
    assert [o.zone for o in instance_type.offerings] == ["zone-a", "zone-b"]
    assert instance_type.requirements[ZONE_LABEL].values == {"zone-a", "zone-b"}
    assert instance_type.requirements[CAPACITY_TYPE_LABEL].values == {"spot"}


def test_hook_nodewright_offerings_may_leave_types_out() -> None:
    class Partial(FakeProvider):
        @hookimpl
        def nodewright_instance_types(self, node_class: object) -> list[InstanceType]:
            return list(self.instance_types)  # offerings included

        # pluggy passes a hookimpl only the arguments it names: none here
        @hookimpl
        def nodewright_offerings(self) -> dict[str, list[Offering]]:  # type: ignore[override]
            return {"small-instance-type": [Offering("zone-x", "on-demand", 9.0)]}

    host = fake_host(Partial())
    by_name = {t.name: t for t in host.instance_types(fake_node_class())}
    assert [o.zone for o in by_name["small-instance-type"].offerings] == ["zone-x"]
    assert len(by_name["default-instance-type"].offerings) == 5


def test_hook_nodewright_offerings_with_an_unknown_capacity_type_is_a_contract_error() -> None:
    class Reserved(FakeProvider):
        @hookimpl
        def nodewright_offerings(self) -> dict[str, list[Offering]]:  # type: ignore[override]
            return {"small-instance-type": [Offering("zone-x", "preemptible", 1.0)]}

    host = fake_host(Reserved())
    with pytest.raises(PluginContractError) as caught:
        host.instance_types(fake_node_class())
    assert str(caught.value) == (
        "plugin 'fake': nodewright_offerings returned an offering of 'small-instance-type' in "
        "'zone-x' that has capacity type 'preemptible', not one of reserved, spot, on-demand"
    )


@pytest.mark.parametrize(
    ("offering", "problem"),
    [
        (
            Offering("zone-x", "on-demand", 1.0, reservation=Reservation("cr-1", "r/id", 1)),
            "names reservation 'cr-1' but is not of capacity type reserved",
        ),
        (
            Offering("zone-x", "reserved", 0.0, reservation=Reservation("cr-1", "r/id", -2)),
            "has reservation 'cr-1' with capacity -2, not a count",
        ),
        (
            Offering("zone-x", "reserved", 0.0, reservation=Reservation("", "r/id", 1)),
            "has a reservation without an id",
        ),
    ],
)
def test_hook_nodewright_offerings_with_a_bad_reservation_is_a_contract_error(
    offering: Offering, problem: str
) -> None:
    class Reserved(FakeProvider):
        @hookimpl
        def nodewright_offerings(self) -> dict[str, list[Offering]]:  # type: ignore[override]
            return {"small-instance-type": [offering]}

    host = fake_host(Reserved())
    with pytest.raises(PluginContractError) as caught:
        host.instance_types(fake_node_class())
    assert str(caught.value) == (
        "plugin 'fake': nodewright_offerings returned an offering of 'small-instance-type' in "
        f"'zone-x' that {problem}"
    )


def test_hook_nodewright_offerings_reservations_reach_the_catalog() -> None:
    class Reserved(FakeProvider):
        @hookimpl
        def nodewright_offerings(self) -> dict[str, list[Offering]]:  # type: ignore[override]
            reservation = Reservation("cr-1", "example.com/reservation-id", 3)
            return {
                "small-instance-type": [
                    Offering("zone-x", "reserved", 0.0001, True, {}, reservation)
                ]
            }

    by_name = {t.name: t for t in fake_host(Reserved()).instance_types(fake_node_class())}
    (offering,) = by_name["small-instance-type"].offerings
    assert offering.reservation == Reservation("cr-1", "example.com/reservation-id", 3)
    assert offering.labels == {"example.com/reservation-id": "cr-1"}


def test_hook_nodewright_instance_types_returning_the_wrong_type_names_plugin_and_distribution(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_instance_types(self, node_class):
    return "m5.large"
""",
    )
    with pytest.raises(PluginContractError) as caught:
        host.instance_types(fake_node_class())
    assert str(caught.value) == (
        "plugin 'bad' (distribution nodewright-bad): nodewright_instance_types returned "
        "str 'm5.large', not a sequence of InstanceType"
    )


def test_hook_nodewright_instance_types_temporary_errors_pass_through() -> None:
    fake = FakeProvider()
    error = TemporaryProviderError("throttled", delay=timedelta(seconds=30))
    fake.next_error("instance_types", error)
    host = fake_host(fake)
    with pytest.raises(TemporaryProviderError) as caught:
        host.instance_types(fake_node_class())
    assert caught.value is error


# -- instances -------------------------------------------------------------------------------


def test_hook_nodewright_launch_returns_the_cheapest_fitting_instance() -> None:
    fake = FakeProvider()
    host = fake_host(fake)
    instance = launched(host)
    assert instance.instance_type == "small-instance-type"
    assert fake.launch_calls[0].node_claim.name == "claim-1"


def test_hook_nodewright_launch_returning_the_wrong_type_names_plugin_and_distribution(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_launch(self, request):
    return {"providerID": "bad:///1"}
""",
    )
    with pytest.raises(PluginContractError) as caught:
        launched(host)
    assert str(caught.value) == (
        "plugin 'bad' (distribution nodewright-bad): nodewright_launch returned "
        "dict {'providerID': 'bad:///1'}, not Instance"
    )


def test_hook_nodewright_launch_may_report_offerings_found_without_capacity(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_launch(self, request):
    from datetime import timedelta
    from nodewright.plugin import LaunchResult
    return LaunchResult(
        FakeProvider.nodewright_launch(self, request),
        (("small-instance-type", "test-zone-a", "spot"),),
        timedelta(minutes=5),
    )
""",
    )
    node_class = fake_node_class()
    request = launch_request(host, make_node_claim("claim-1", node_class), node_class)
    result = host.launch_result(request)
    assert result.unavailable_offerings == (("small-instance-type", "test-zone-a", "spot"),)
    assert result.unavailable_ttl == timedelta(minutes=5)
    assert result.instance.node_claim == "claim-1"


def test_hook_nodewright_launch_reporting_a_malformed_offering_is_a_contract_error(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_launch(self, request):
    from nodewright.plugin import LaunchResult
    return LaunchResult(FakeProvider.nodewright_launch(self, request), (("small", "zone-a"),))
""",
    )
    with pytest.raises(PluginContractError) as caught:
        launched(host)
    assert "returned unavailable offering tuple ('small', 'zone-a'), not an" in str(caught.value)


def test_hook_nodewright_launch_with_annotations_that_are_not_strings_is_a_contract_error() -> None:
    fake = FakeProvider()
    fake.launch_annotations = {"example.com/hash": 42}  # type: ignore[dict-item]
    with pytest.raises(PluginContractError) as caught:
        launched(fake_host(fake))
    assert "nodewright_launch returned annotations" in str(caught.value)
    assert "not a str-to-str mapping" in str(caught.value)


def test_hook_nodewright_launch_raising_unexpectedly_names_plugin_and_distribution(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_launch(self, request):
    return request.instance_types[99]
""",
    )
    with pytest.raises(PluginContractError) as caught:
        launched(host)
    assert str(caught.value) == (
        "plugin 'bad' (distribution nodewright-bad): nodewright_launch raised "
        "IndexError: tuple index out of range"
    )
    assert isinstance(caught.value.__cause__, IndexError)


def test_hook_nodewright_launch_provider_errors_pass_through_unchanged() -> None:
    fake = FakeProvider()
    host = fake_host(fake)
    fake.insufficient_capacity = {
        (t, z, c)
        for t in ("small-instance-type", "default-instance-type", "arm-instance-type")
        for z in ("test-zone-1", "test-zone-2", "test-zone-3")
        for c in ("spot", "on-demand")
    }
    with pytest.raises(InsufficientCapacityError) as caught:
        launched(host)
    assert ("small-instance-type", "test-zone-1", "spot") in caught.value.offerings
    fake.insufficient_capacity.clear()
    fake.allowed_launches = 0
    with pytest.raises(LaunchError, match="allows 0 launches"):
        launched(host)


def test_hook_nodewright_get_finds_the_instance_or_raises_not_found() -> None:
    host = fake_host()
    instance = launched(host)
    assert host.get("fake", instance.provider_id) == instance
    with pytest.raises(InstanceNotFoundError):
        host.get("fake", "fake:///test-zone-1/nothing")


def test_hook_nodewright_list_returning_garbage_is_a_contract_error(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_list(self):
    return [None]
""",
    )
    with pytest.raises(PluginContractError, match="nodewright_list returned an item NoneType"):
        host.list_instances("bad")


def test_hook_nodewright_list_lists_launched_instances() -> None:
    host = fake_host()
    first, second = launched(host, "a"), launched(host, "b")
    assert {i.provider_id for i in host.list_instances("fake")} == {
        first.provider_id,
        second.provider_id,
    }


def test_hook_nodewright_delete_until_not_found() -> None:
    fake = FakeProvider()
    host = fake_host(fake)
    instance = launched(host)
    host.delete("fake", instance.provider_id)
    with pytest.raises(InstanceNotFoundError):
        host.delete("fake", instance.provider_id)
    assert fake.delete_calls == [instance.provider_id, instance.provider_id]


def test_hook_nodewright_delete_returning_a_value_is_a_contract_error(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_delete(self, provider_id):
    return True
""",
    )
    with pytest.raises(PluginContractError, match="nodewright_delete returned bool, not None"):
        host.delete("bad", "bad:///1")


def test_get_list_and_delete_of_an_unknown_provider_name_the_loaded_ones() -> None:
    host = fake_host()
    with pytest.raises(Exception, match=r"no provider of this name is loaded \(loaded: fake\)"):
        host.get("aws", "aws:///us-east-1a/i-1")


# -- labels ----------------------------------------------------------------------------------


class TeamLabels:
    """A plugin that is not a provider: it only contributes labels."""

    def __init__(self, labels: dict[str, str] | None = None, error: Exception | None = None):
        self.labels = labels or {}
        self.error = error

    @hookimpl
    def nodewright_node_labels(self, instance: Instance) -> dict[str, str]:
        if self.error is not None:
            raise self.error
        return {**self.labels, "example.com/instance": instance.instance_type}


def label_host(**plugins: object) -> tuple[PluginHost, Instance]:
    host = PluginHost.load(entry_points=False, plugins={"fake": FakeProvider(), **plugins})
    assert host.errors == []
    return host, launched(host)


def test_hook_nodewright_node_labels_merges_every_plugin() -> None:
    host, instance = label_host(team=TeamLabels({"example.com/team": "a"}))
    fake = host.providers[0].plugin
    assert isinstance(fake, FakeProvider)
    fake.extra_node_labels = {"testing.nodewright.dev/size": "small"}
    node_claim = make_node_claim("claim-1", fake_node_class())
    assert host.node_labels(node_claim, instance) == {
        "testing.nodewright.dev/size": "small",
        "example.com/team": "a",
        "example.com/instance": "small-instance-type",
    }


def test_hook_nodewright_node_labels_conflict_names_both_plugins() -> None:
    host, instance = label_host(
        team=TeamLabels({"example.com/team": "a"}), other=TeamLabels({"example.com/team": "b"})
    )
    with pytest.raises(PluginConflictError) as caught:
        host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)
    assert str(caught.value) == (
        "plugin 'other': sets label example.com/team='b', but plugin 'team' sets it to 'a'"
    )


def test_hook_nodewright_node_labels_agreeing_plugins_are_fine() -> None:
    host, instance = label_host(team=TeamLabels({"a/b": "c"}), other=TeamLabels({"a/b": "c"}))
    assert host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)["a/b"] == "c"


def test_hook_nodewright_node_labels_one_raising_plugin_is_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host, instance = label_host(
        broken=TeamLabels(error=KeyError("team")), team=TeamLabels({"example.com/team": "a"})
    )
    with caplog.at_level(logging.WARNING, logger="nodewright.plugins"):
        labels = host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)
    assert labels["example.com/team"] == "a"
    (error,) = host.recent_errors
    assert str(error) == "plugin 'broken': nodewright_node_labels raised KeyError: 'team'"
    assert "plugin 'broken'" in caplog.text


def test_hook_nodewright_node_labels_in_a_foreign_restricted_domain_are_dropped() -> None:
    host, instance = label_host(
        sneaky=TeamLabels({"karpenter.sh/nodepool": "x", "sub.testing.nodewright.dev/y": "z"})
    )
    labels = host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)
    assert labels == {"example.com/instance": "small-instance-type"}
    assert len(host.recent_errors) == 2
    assert all("restricted domain" in str(e) for e in host.recent_errors)


def test_hook_nodewright_node_labels_a_provider_may_set_its_own_domain() -> None:
    host, instance = label_host()
    fake = host.providers[0].plugin
    assert isinstance(fake, FakeProvider)
    fake.extra_node_labels = {"testing.nodewright.dev/rack": "r1"}
    labels = host.node_labels(make_node_claim("claim-1", fake_node_class()), instance)
    assert labels == {"testing.nodewright.dev/rack": "r1"}
    assert host.recent_errors == []


# -- drift -----------------------------------------------------------------------------------


def test_hook_nodewright_is_drifted_reports_the_owners_reason() -> None:
    host = fake_host()
    node_claim = make_node_claim("claim-1", fake_node_class())
    node_claim.status.image_id = "fake-image-1"
    assert host.is_drifted(fake_node_class(image_id="fake-image-1"), node_claim) is None
    assert host.is_drifted(fake_node_class(image_id="fake-image-2"), node_claim) == "ImageDrift"


def test_hook_nodewright_is_drifted_returning_garbage_is_a_contract_error(
    distribution: DistributionMaker,
) -> None:
    host = bad_provider(
        distribution,
        """
@hookimpl
def nodewright_is_drifted(self):
    return True
""",
    )
    with pytest.raises(PluginContractError, match="nodewright_is_drifted returned True"):
        host.is_drifted(fake_node_class(), make_node_claim("c", fake_node_class()))


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

    from nodewright.plugin.host import PluginHost
    from nodewright.testing import FakeProvider, fake_node_class, launch_request, make_node_claim

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
