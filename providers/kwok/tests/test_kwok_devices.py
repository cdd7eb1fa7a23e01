"""GPU instance types in a KWOK catalog file (``dynamicResources``): their devices are the
types' DRA templates, and the provider publishes them as the node's ResourceSlices when it
registers the node, as the node's DRA drivers would."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nodewright.api.resource import ResourceSlice
from nodewright.plugin import INSTANCE_TYPE_LABEL, Semver
from nodewright.testing import MemoryCluster, SimulatedClock, launched_instance
from nodewright_kwok.catalog import CatalogFileError, load_catalog
from nodewright_kwok.provider import KWOKProvider
from providers.kwok.tests.kwok_helpers import launch_request

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "dra" / "gpu-catalog.yaml"


def test_the_example_catalog_gives_its_gpu_types_devices() -> None:
    catalog = load_catalog(EXAMPLE)
    plain = catalog.get("c-4x-amd64-linux")
    four = catalog.get("g4-32x-amd64-linux")
    assert plain is not None
    assert four is not None
    assert not plain.dynamic_resources
    (template,) = four.dynamic_resources.slices
    assert (template.driver, template.pool) == ("gpu.example.com", "gpus")
    assert [d.name for d in template.devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert template.devices[0].attributes == {
        "model": "L4",
        "memoryGB": 24,
        "driverVersion": Semver.parse("550.54.15"),
    }
    assert template.devices[0].capacity == {"memory": "24Gi"}


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        (
            "{resourceSlices: [{driver: gpu.example.com, pool: p, devices: "
            "[{name: g, attributes: {m: {string: a, int: 1}}}]}]}",
            "attribute 'm' needs exactly one of int, bool, string, version",
        ),
        (
            "{resourceSlices: [{driver: gpu.example.com, pool: p, devices: [{name: G_0}]}]}",
            "device 'G_0' of gpu.example.com/p is not a DNS label",
        ),
        (
            "{resourceSlices: [{driver: gpu.example.com, pool: p, devices: [{name: g}]}], "
            "attributeBindings: [{attribute: x.io/root, devices: "
            "[{driver: gpu.example.com, pool: p, device: h}]}]}",
            "names device gpu.example.com/p/h, which none of its slices lists",
        ),
        ("{slices: []}", "unknown field 'slices'"),
    ],
)
def test_bad_devices_are_refused_naming_the_type(
    tmp_path: Path, devices: str, message: str
) -> None:
    path = tmp_path / "catalog.yaml"
    path.write_text(
        "- name: g\n  resources: {cpu: '1', memory: 1Gi}\n"
        "  offerings: [{zone: z, capacityType: on-demand, price: 1}]\n"
        f"  dynamicResources: {devices}\n"
    )
    with pytest.raises(CatalogFileError, match="instance type #0 \\('g'\\)") as raised:
        load_catalog(path)
    assert message in str(raised.value)


def test_a_registered_gpu_node_publishes_its_devices(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = make_provider(instance_types_file=str(EXAMPLE))
    request = launch_request(
        provider, "gpu-node", (INSTANCE_TYPE_LABEL, "In", ["g4-32x-amd64-linux"])
    )
    launched_instance(provider.launch(request))
    provider.reconcile(clock.now())
    (published,) = cluster.list(ResourceSlice)
    assert published.spec.node_name == "gpu-node"
    assert published.spec.driver == "gpu.example.com"
    assert published.spec.pool.name == "gpu-node/gpus"
    devices = published.spec.devices or []
    assert [d.name for d in devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert devices[0].attributes["driverVersion"].version_value == "550.54.15"
    (owner,) = published.metadata.owner_references
    assert (owner.kind, owner.name) == ("Node", "gpu-node")


def test_a_node_without_devices_publishes_nothing(
    make_provider: Callable[..., KWOKProvider], cluster: MemoryCluster, clock: SimulatedClock
) -> None:
    provider = make_provider(instance_types_file=str(EXAMPLE))
    request = launch_request(
        provider, "cpu-node", (INSTANCE_TYPE_LABEL, "In", ["c-4x-amd64-linux"])
    )
    launched_instance(provider.launch(request))
    provider.reconcile(clock.now())
    assert cluster.list(ResourceSlice) == []
