"""What a real API server refuses of the DRA kinds, ``nodewright simulate`` refuses at load
time, naming the field; what it accepts loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_text
from nodewright.api.resource import API_VERSION
from nodewright.scheduling.dra.publish import node_slices
from nodewright_kwok.devices import parse_dynamic_resources
from tests.api.refusals import refusals
from tests.dra.rule_cases import ACCEPTED, REFUSED, REFUSED_OFFLINE

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra-shared"


@pytest.mark.parametrize(("manifest", "field", "words"), REFUSED + REFUSED_OFFLINE)
def test_refused_like_the_api_server(manifest: str, field: str, words: str) -> None:
    errors = refusals(manifest)
    assert any(e.field == field and words in e.message for e in errors), [
        (e.field, e.message) for e in errors
    ]


@pytest.mark.parametrize("manifest", ACCEPTED)
def test_accepted_like_the_api_server(manifest: str) -> None:
    (obj,) = load_text(manifest, "m.yaml", KindRegistry())
    assert obj.kind in ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice")


def test_the_slices_published_for_shared_and_partitioned_devices_are_accepted() -> None:
    # A partitioned GPU's counters go in a slice of their own, with no devices list at all:
    # the API server refuses even an empty one beside sharedCounters.
    catalog = yaml.safe_load((EXAMPLE / "catalog.yaml").read_text())
    published = [
        s
        for entry in catalog
        if "dynamicResources" in entry
        for s in node_slices("node-a", "uid-a", parse_dynamic_resources(entry["dynamicResources"]))
    ]
    assert [(s.spec.pool.name, bool(s.spec.shared_counters)) for s in published] == [
        ("node-a/accels", False),
        ("node-a/mig", True),
        ("node-a/mig", False),
    ]
    for s in published:
        text = yaml.safe_dump({"apiVersion": API_VERSION, "kind": "ResourceSlice", **s.to_dict()})
        (loaded,) = load_text(text, "m.yaml", KindRegistry())
        assert loaded.name == s.name
