"""The DRA rules nodewright checks at load time are the real API server's: every object
:mod:`tests.dra.rule_cases` lists as refused, a real API server refuses at that field with those
words, and every one listed as accepted, it accepts (server-side dry run: nothing is stored)."""

from __future__ import annotations

import subprocess

import pytest

from tests.dra.rule_cases import ACCEPTED, REFUSED
from tests.kube.live import KUBECONFIG, LIVE

pytestmark = LIVE


def dry_run(manifest: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", KUBECONFIG, "apply", "--dry-run=server", "-f", "-"],
        input=manifest,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(("manifest", "field", "words"), REFUSED)
def test_the_api_server_refuses_the_same(manifest: str, field: str, words: str) -> None:
    done = dry_run(manifest)
    assert done.returncode != 0, done.stdout
    assert f"{field}:" in done.stderr, done.stderr
    assert words in done.stderr, done.stderr


@pytest.mark.parametrize("manifest", ACCEPTED)
def test_the_api_server_accepts_the_same(manifest: str) -> None:
    done = dry_run(manifest)
    assert done.returncode == 0, done.stderr
