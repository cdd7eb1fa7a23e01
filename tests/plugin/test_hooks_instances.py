"""The instance hooks, called through the host: launch, get, list, delete and drift, and what
happens when a plugin returns garbage or raises."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nodewright.plugin import (
    InstanceNotFoundError,
    InsufficientCapacityError,
    LaunchError,
    PluginContractError,
)
from nodewright.testing import FakeProvider, fake_node_class, launch_request, make_node_claim
from tests.plugin.conftest import DistributionMaker
from tests.plugin.hook_hosts import bad_provider, fake_host, launched

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
