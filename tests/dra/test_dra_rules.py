"""What a real API server refuses of the DRA kinds, ``nodewright simulate`` refuses at load
time, naming the field; what it accepts loads."""

from __future__ import annotations

import pytest

from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_text
from tests.api.refusals import refusals
from tests.dra.rule_cases import ACCEPTED, REFUSED, REFUSED_OFFLINE


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
