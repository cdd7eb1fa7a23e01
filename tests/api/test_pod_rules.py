"""What a real API server refuses of a pod's restart policy, ports, spreads and resources,
``nodewright simulate`` refuses at load time with the server's field and words; what it
accepts loads."""

from __future__ import annotations

import pytest

from nodewright.api.manifests.kinds import KindRegistry
from nodewright.api.manifests.loading import load_text
from tests.api.pod_rule_cases import ACCEPTED, REFUSED, REFUSED_SEVERAL
from tests.api.refusals import refusals


@pytest.mark.parametrize(("manifest", "field", "words"), REFUSED)
def test_refused_like_the_api_server(manifest: str, field: str, words: str) -> None:
    errors = refusals(manifest)
    assert len(errors) == 1, [(e.field, e.message) for e in errors]
    assert (errors[0].field, words in errors[0].message) == (field, True), errors[0].message


@pytest.mark.parametrize(("manifest", "problems"), REFUSED_SEVERAL)
def test_every_problem_the_api_server_finds_and_no_other(
    manifest: str, problems: tuple[tuple[str, str], ...]
) -> None:
    errors = refusals(manifest)
    unmatched = [(e.field, e.message) for e in errors]
    for field, words in problems:
        found = next((p for p in unmatched if p[0] == field and words in p[1]), None)
        assert found is not None, (field, words, unmatched)
        unmatched.remove(found)
    assert unmatched == []


@pytest.mark.parametrize("manifest", ACCEPTED)
def test_accepted_like_the_api_server(manifest: str) -> None:
    (obj,) = load_text(manifest, "m.yaml", KindRegistry())
    assert obj.kind in ("Pod", "Deployment", "StatefulSet", "Job", "PodDisruptionBudget")
