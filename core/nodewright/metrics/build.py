"""The labels of ``karpenter_build_info``: what was built, on what, from which commit.

Karpenter fills ``goversion`` and ``goarch`` from the Go runtime; nodewright keeps the label
names, so dashboards that show them keep working, and fills them from the Python runtime
(``python3.12.3``) and the machine, named as Go names it (``amd64``, ``arm64``). ``commit`` is
the short commit an installation from a repository records, else ``unknown``, as Karpenter
reports a binary built without version control information.
"""

from __future__ import annotations

import json
import platform
from importlib.metadata import PackageNotFoundError, distribution

#: Machine names as Go's GOARCH spells them.
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def build_labels() -> tuple[str, str, str, str]:
    """``version``, ``goversion``, ``goarch`` and ``commit``."""
    machine = platform.machine().lower()
    return (
        _version(),
        f"python{platform.python_version()}",
        _GOARCH.get(machine, machine or "unknown"),
        _commit(),
    )


def _version() -> str:
    try:
        return distribution("nodewright").version
    except PackageNotFoundError:
        return "unspecified"


def _commit() -> str:
    """The commit of a VCS installation (pip's ``direct_url.json``), shortened as Karpenter
    shortens it."""
    try:
        text = distribution("nodewright").read_text("direct_url.json")
    except PackageNotFoundError:
        return "unknown"
    try:
        info = json.loads(text or "{}")
    except ValueError:
        return "unknown"
    vcs = info.get("vcs_info") if isinstance(info, dict) else None
    commit = vcs.get("commit_id") if isinstance(vcs, dict) else None
    if not isinstance(commit, str) or not commit:
        return "unknown"
    return commit[:7] if len(commit) >= 40 else commit
