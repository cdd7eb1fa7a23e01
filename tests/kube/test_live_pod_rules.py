"""The pod rules nodewright checks at load time are the real API server's: every manifest
:mod:`tests.api.pod_rule_cases` lists as refused, a real API server refuses at that field with
those words, and every one listed as accepted, it accepts (server-side dry run: nothing is
stored)."""

from __future__ import annotations

import pytest

from tests.api.pod_rule_cases import ACCEPTED, REFUSED, REFUSED_SEVERAL
from tests.kube.live import LIVE
from tests.kube.test_live_dra_rules import dry_run

pytestmark = LIVE


@pytest.mark.parametrize(("manifest", "field", "words"), REFUSED)
def test_the_api_server_refuses_the_same(manifest: str, field: str, words: str) -> None:
    done = dry_run(manifest)
    assert done.returncode != 0, done.stdout
    assert f"{field}: " in done.stderr, done.stderr
    assert words in done.stderr, done.stderr


@pytest.mark.parametrize(("manifest", "problems"), REFUSED_SEVERAL)
def test_the_api_server_finds_the_same_problems(
    manifest: str, problems: tuple[tuple[str, str], ...]
) -> None:
    done = dry_run(manifest)
    assert done.returncode != 0, done.stdout
    # one problem follows the object's name; several are listed one a line after "* "
    reported = [line.removeprefix("* ") for line in done.stderr.splitlines() if ": " in line]
    if len(reported) > 1:
        reported = [line for line in reported if not line.startswith("The ")]
    for field, words in problems:
        found = next((r for r in reported if f"{field}: " in r and words in r), None)
        assert found is not None, (field, words, done.stderr)
        reported.remove(found)
    assert reported == [], done.stderr


@pytest.mark.parametrize("manifest", ACCEPTED)
def test_the_api_server_accepts_the_same(manifest: str) -> None:
    done = dry_run(manifest)
    assert done.returncode == 0, done.stderr
