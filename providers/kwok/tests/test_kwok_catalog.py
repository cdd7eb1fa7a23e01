from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nodewright.plugin import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    OS_LABEL,
    ZONE_LABEL,
    InsufficientCapacityError,
    LaunchResult,
    Reservation,
    resources,
)
from nodewright.testing import launched_instance
from nodewright_kwok.catalog import CatalogFileError, default_catalog, load_catalog
from nodewright_kwok.labels import RESERVATION_ID_LABEL
from nodewright_kwok.provider import KWOKProvider
from providers.kwok.tests.kwok_helpers import launch_request, node_class

GIB = 2**30


def test_default_catalog_has_karpenters_144_generic_types() -> None:
    catalog = default_catalog()
    expected = {
        f"{family}-{cpu}x-{arch}-{os}"
        for cpu, family, os, arch in itertools.product(
            (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256),
            "csm",
            ("linux", "windows"),
            ("amd64", "arm64"),
        )
    }
    assert len(catalog) == 144
    assert {it.name for it in catalog.instance_types} == expected


def test_a_default_type_has_karpenters_shape_labels_and_prices() -> None:
    it = default_catalog().get("s-4x-arm64-linux")
    assert it is not None
    assert it.capacity == resources(cpu=4, memory="16Gi", pods=64, ephemeral_storage="20Gi")
    assert it.allocatable() == resources(
        cpu="3900m", memory=f"{16 * 1024 - 10}Mi", pods=64, ephemeral_storage="20Gi"
    )
    assert it.requirements.labels() == {
        INSTANCE_TYPE_LABEL: "s-4x-arm64-linux",
        ARCH_LABEL: "arm64",
        OS_LABEL: "linux",
        "karpenter.kwok.sh/instance-size": "4",
        "karpenter.kwok.sh/instance-family": "s",
        "karpenter.kwok.sh/instance-cpu": "4",
        "karpenter.kwok.sh/instance-memory": "16Gi",
    }
    assert it.requirements[ZONE_LABEL].values == {f"test-zone-{z}" for z in "abcd"}
    assert it.requirements[CAPACITY_TYPE_LABEL].values == {"spot", "on-demand"}
    on_demand = 0.025 * 4 + 0.001 * 16 * GIB / 1e9
    prices = {(o.zone, o.capacity_type): o.price for o in it.offerings}
    assert len(prices) == 8
    for zone in "abcd":
        assert prices[(f"test-zone-{zone}", "on-demand")] == pytest.approx(on_demand)
        assert prices[(f"test-zone-{zone}", "spot")] == pytest.approx(0.7 * on_demand)
    assert all(o.available for o in it.offerings)


def test_default_prices_match_karpenters_generated_file() -> None:
    # kwok/cloudprovider/instance_types.json lists c-1x-amd64-linux at these prices.
    it = default_catalog().get("c-1x-amd64-linux")
    assert it is not None
    prices = {o.capacity_type: o.price for o in it.offerings}
    assert prices["on-demand"] == pytest.approx(0.027147483648)
    assert prices["spot"] == pytest.approx(0.0190032385536)


@pytest.mark.parametrize(
    ("name", "pods", "memory_label"),
    [
        ("c-1x-amd64-linux", 16, "2Gi"),
        ("c-48x-amd64-linux", 768, "96Gi"),
        ("c-64x-amd64-linux", 1024, "128Gi"),
        ("m-256x-arm64-windows", 1024, "2Ti"),
    ],
)
def test_pods_are_16_per_cpu_up_to_1024(name: str, pods: int, memory_label: str) -> None:
    it = default_catalog().get(name)
    assert it is not None
    assert it.capacity["pods"] == pods * 1000
    assert it.requirements.labels()["karpenter.kwok.sh/instance-memory"] == memory_label


# -- user files --------------------------------------------------------------------------------

KARPENTER_FORMAT = [
    {
        "name": "m5.large",
        "architecture": "amd64",
        "operatingSystems": ["linux"],
        "resources": {"cpu": "2", "memory": "8Gi", "ephemeral-storage": "20Gi"},
        "offerings": [
            {
                "Price": 0.096,
                "Available": True,
                "Requirements": [
                    {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                    {"key": ZONE_LABEL, "operator": "In", "values": ["us-east-1a"]},
                ],
            }
        ],
    }
]


def test_a_karpenter_instance_types_json_file_replaces_the_catalog(
    tmp_path: Path, make_provider: Callable[..., KWOKProvider]
) -> None:
    path = tmp_path / "types.json"
    path.write_text(json.dumps(KARPENTER_FORMAT))
    provider = make_provider(instance_types_file=str(path))
    assert [it.name for it in provider.catalog.instance_types] == ["m5.large"]
    it = provider.catalog.instance_types[0]
    # pods default to 110; AWS-style names give size and family
    assert it.capacity["pods"] == 110_000
    labels = it.requirements.labels()
    assert labels["karpenter.kwok.sh/instance-size"] == "large"
    assert labels["karpenter.kwok.sh/instance-family"] == "m5"
    assert labels["karpenter.kwok.sh/instance-cpu"] == "2"
    assert labels["karpenter.kwok.sh/instance-memory"] == "8Gi"
    (offering,) = it.offerings
    assert (offering.zone, offering.capacity_type, offering.price) == (
        "us-east-1a",
        "on-demand",
        0.096,
    )


def test_a_yaml_file_with_the_short_offering_form(tmp_path: Path) -> None:
    path = tmp_path / "types.yaml"
    path.write_text(
        """
- name: gpu-16x
  architecture: arm64
  operatingSystems: [linux]
  resources: {cpu: 16, memory: 64Gi, pods: 200, nvidia.com/gpu: 1}
  offerings:
    - {zone: zone-1, capacityType: spot, price: 1.5, available: false}
    - {zone: zone-1, capacityType: on-demand, price: 3}
"""
    )
    (it,) = load_catalog(path).instance_types
    assert it.capacity["nvidia.com/gpu"] == 1000
    assert it.capacity["pods"] == 200_000
    assert it.requirements.labels()["karpenter.kwok.sh/instance-family"] == "gpu"
    assert it.requirements.labels()["karpenter.kwok.sh/instance-size"] == "16"
    assert [(o.capacity_type, o.price, o.available) for o in it.offerings] == [
        ("spot", 1.5, False),
        ("on-demand", 3.0, True),
    ]


def test_a_reserved_offering_names_its_capacity_reservation(tmp_path: Path) -> None:
    path = tmp_path / "types.yaml"
    path.write_text(
        """
- name: m5.xlarge
  resources: {cpu: 4, memory: 16Gi}
  offerings:
    - {zone: zone-1, capacityType: reserved, price: 0.00001,
       reservationID: cr-0123, reservationCapacity: 3}
    - {zone: zone-1, capacityType: on-demand, price: 0.192}
"""
    )
    (it,) = load_catalog(path).instance_types
    reserved, on_demand = it.offerings
    assert reserved.reservation == Reservation("cr-0123", RESERVATION_ID_LABEL, 3)
    assert reserved.labels == {RESERVATION_ID_LABEL: "cr-0123"}
    assert on_demand.reservation is None
    assert it.requirements[CAPACITY_TYPE_LABEL].values == {"reserved", "on-demand"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}", "expected a non-empty list"),
        ("[: not yaml", "malformed JSON: Expecting value"),
        ('[{"name": "x", "resources": {"cpu": "1"}, "offerings": []}]', "resources.memory"),
        ('[{"name": "x", "cpus": 1}]', "unknown field 'cpus'"),
        (
            '[{"name": "x", "resources": {"cpu": "lots", "memory": "1Gi"}, "offerings": []}]',
            "resources.cpu",
        ),
        (
            '[{"name": "x", "resources": {"cpu": 1, "memory": "1Gi"},'
            ' "offerings": [{"zone": "a", "capacityType": "cheap", "price": 1}]}]',
            "offering #0: capacity type 'cheap'",
        ),
        (
            '[{"name": "x", "resources": {"cpu": 1, "memory": "1Gi"},'
            ' "offerings": [{"capacityType": "spot", "price": 1}]}]',
            "offering #0: no zone",
        ),
        (
            '[{"name": "x", "resources": {"cpu": 1, "memory": "1Gi"},'
            ' "offerings": [{"zone": "a", "capacityType": "reserved", "price": 0}]}]',
            "offering #0: a reserved offering needs 'reservationID' and 'reservationCapacity'",
        ),
        (
            '[{"name": "x", "resources": {"cpu": 1, "memory": "1Gi"},'
            ' "offerings": [{"zone": "a", "capacityType": "spot", "price": 1,'
            ' "reservationID": "r-1", "reservationCapacity": 1}]}]',
            "offering #0: 'reservationID' and 'reservationCapacity' belong on a reserved",
        ),
        (
            '[{"name": "x", "resources": {"cpu": 1, "memory": "1Gi"},'
            ' "offerings": [{"zone": "a", "capacityType": "reserved", "price": 0,'
            ' "reservationID": "r-1", "reservationCapacity": -1}]}]',
            "offering #0: 'reservationCapacity' must be a whole number",
        ),
    ],
)
def test_a_bad_file_is_an_error_naming_the_file_and_entry(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CatalogFileError) as raised:
        load_catalog(path)
    assert str(path) in str(raised.value)
    assert message in str(raised.value)


def test_an_error_in_the_second_entry_names_it(tmp_path: Path) -> None:
    path = tmp_path / "types.json"
    broken = {**KARPENTER_FORMAT[0], "name": "broken", "offerings": "none"}
    path.write_text(json.dumps([KARPENTER_FORMAT[0], broken]))
    with pytest.raises(CatalogFileError, match=r"instance type #1 \('broken'\): 'offerings'"):
        load_catalog(path)


def test_duplicate_names_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "types.json"
    path.write_text(json.dumps(KARPENTER_FORMAT * 2))
    with pytest.raises(CatalogFileError, match="duplicate name"):
        load_catalog(path)


def test_a_missing_or_bad_file_fails_configure_naming_the_option(
    tmp_path: Path, make_provider: Callable[..., KWOKProvider]
) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ValueError, match=f"instance-types-file: {missing}: no such file"):
        make_provider(instance_types_file=str(missing))


# -- capacity reservations ---------------------------------------------------------------------

RESERVED_CATALOG = """
- name: m5.xlarge
  resources: {cpu: 4, memory: 16Gi}
  offerings:
    - {zone: zone-1, capacityType: reserved, price: 0.00001,
       reservationID: cr-0123, reservationCapacity: 2}
    - {zone: zone-1, capacityType: on-demand, price: 0.192}
"""


def _reservation(provider: KWOKProvider) -> tuple[bool, int]:
    types = provider.catalog.instance_types
    (offerings,) = provider.offerings(node_class(), types).values()
    (reserved,) = [o for o in offerings if o.reservation is not None]
    assert reserved.reservation is not None
    return reserved.available, reserved.reservation.capacity


def test_launches_into_a_reservation_use_it_up_and_deletes_give_it_back(
    tmp_path: Path, make_provider: Callable[..., KWOKProvider]
) -> None:
    path = tmp_path / "types.yaml"
    path.write_text(RESERVED_CATALOG)
    provider = make_provider(instance_types_file=str(path))
    assert _reservation(provider) == (True, 2)

    first = launched_instance(provider.launch(launch_request(provider, "a")))
    assert (first.capacity_type, first.labels[RESERVATION_ID_LABEL]) == ("reserved", "cr-0123")
    assert _reservation(provider) == (True, 1)
    provider.launch(launch_request(provider, "b"))
    assert _reservation(provider) == (False, 0)

    # The reservation is full: an unpinned launch buys on-demand, a pinned one fails.
    result = provider.launch(launch_request(provider, "c"))
    assert isinstance(result, LaunchResult), "the full reservation is reported with the launch"
    assert result.unavailable_offerings == (("m5.xlarge", "zone-1", "reserved"),)
    third = result.instance
    assert third.capacity_type == "on-demand"
    assert RESERVATION_ID_LABEL not in third.labels
    with pytest.raises(InsufficientCapacityError) as raised:
        provider.launch(launch_request(provider, "d", (CAPACITY_TYPE_LABEL, "In", ["reserved"])))
    # Named like an ICE, so the core stops offering it for a while.
    assert raised.value.offerings == (("m5.xlarge", "zone-1", "reserved"),)

    provider.delete(first.provider_id)
    assert _reservation(provider) == (True, 1)
