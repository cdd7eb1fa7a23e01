"""The docs and examples name no path of their authors' machine: a reader's machine has no
``/work/shared/...`` or ``/home/someone/...``. A ``/tmp`` path is named only where the
project's own scripts use it (the lock ``.ci/cluster-suite`` takes, say)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What a reader reads: the READMEs, docs/, examples/ and the chart's notes.
READ = ("README.md", "docs", "examples", "providers/*/README.md", "charts")
#: Where the project's own scripts live: a /tmp path they use may be documented.
SCRIPTS = (".ci", "bin", "scripts")
#: An absolute path into a home, a workspace or a temporary folder (not ``${TMPDIR:-/tmp}``).
MACHINE_PATH = re.compile(
    r"(?<![\w.$}:-])/(?:work|tmp|root|home|Users|private/var)/[^\s`'\")\]>,;]*"
)
TEXT = {".md", ".yaml", ".yml", ".json", ".txt", ".tpl", ".sh", ""}


def _files(patterns: tuple[str, ...]) -> list[Path]:
    found: list[Path] = []
    for pattern in patterns:
        for path in ROOT.glob(pattern):
            found += [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    return [p for p in found if p.suffix in TEXT]


def machine_paths(text: str, allowed: set[str]) -> list[str]:
    """The authors' machine paths in ``text``: every one but a /tmp path in ``allowed``."""
    return [
        path
        for path in MACHINE_PATH.findall(text)
        if not (path.startswith("/tmp/") and path.rstrip(".") in allowed)
    ]


def test_docs_and_examples_name_no_path_of_the_authors_machine() -> None:
    used = "\n".join(p.read_text(errors="replace") for p in _files(SCRIPTS))
    allowed = {path.rstrip(".") for path in MACHINE_PATH.findall(used)}
    found = {
        f"{path.relative_to(ROOT)}: {hit}"
        for path in _files(READ)
        for hit in machine_paths(path.read_text(errors="replace"), allowed)
    }
    assert sorted(found) == []


def test_the_check_finds_a_workspace_a_home_and_a_stray_temporary_path() -> None:
    text = (
        "see `/work/shared/reference/azure.md`, (/home/ana/notes.txt) and /tmp/x/report.json; "
        "the lock is /tmp/realk8s.lock, the folder ${TMPDIR:-/tmp}/realk8s, the URL "
        "https://example.com/tmp/page and the API path /apis/karpenter.sh/v1"
    )
    assert machine_paths(text, {"/tmp/realk8s.lock"}) == [
        "/work/shared/reference/azure.md",
        "/home/ana/notes.txt",
        "/tmp/x/report.json",
    ]
