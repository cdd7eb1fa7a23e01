"""The catalog hooks, called through the host: instance types merged with offerings, and what
happens when a plugin returns a malformed catalog."""

from __future__ import annotations

from datetime import timedelta

import pytest

from nodewright.api.labels import CAPACITY_TYPE_LABEL, ZONE_LABEL
from nodewright.plugin import (
    Device,
    DynamicResources,
    InstanceType,
    Offering,
    PluginContractError,
    Reservation,
    ResourceSliceTemplate,
    TemporaryProviderError,
    hookimpl,
)
from nodewright.testing import FakeProvider, fake_instance_type, fake_node_class, gpu_instance_type
from tests.plugin.conftest import DistributionMaker
from tests.plugin.hook_hosts import bad_provider, fake_host

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


def test_hook_nodewright_instance_types_with_devices_keeps_them() -> None:
    host = fake_host(FakeProvider(instance_types=[gpu_instance_type("gpu-type", 2)]))
    (instance_type,) = host.instance_types(fake_node_class())
    (template,) = instance_type.dynamic_resources.slices
    assert [d.name for d in template.devices] == ["gpu-type-gpu-0", "gpu-type-gpu-1"]


def test_hook_nodewright_instance_types_with_malformed_devices_names_the_problem() -> None:
    bad = DynamicResources((ResourceSliceTemplate("gpu.example.com", "p", (Device("GPU_0"),)),))
    broken = FakeProvider(instance_types=[fake_instance_type("gpu-type", devices=bad)])
    with pytest.raises(PluginContractError) as caught:
        fake_host(broken).instance_types(fake_node_class())
    assert str(caught.value).endswith(
        "nodewright_instance_types returned instance type 'gpu-type' whose device 'GPU_0' of "
        "gpu.example.com/p is not a DNS label (must consist of lower case letters, digits and "
        "'-', and start and end with a letter or digit, got 'GPU_0')"
    )
