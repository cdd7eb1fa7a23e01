"""Keep every Python module under ``LIMIT`` lines, so each room holds one concept.

    uv run --frozen python scripts/module_size.py            # check
    uv run --frozen python scripts/module_size.py --lower    # after a split: shrink the list

Run by ``bin/check`` over every Python file git knows (tracked or new, not ignored). Modules
already over the limit are listed in ``scripts/module_size_allowlist.txt`` with their size;
that list may only shrink: a listed module may not grow, its entry must follow it down as it
shrinks, and it must leave the list once the module is under the limit. Nothing new joins it.
``--lower`` makes those two edits itself (lowers entries, drops entries of modules now within the
limit or gone) and then checks; it never raises an entry or adds one.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

LIMIT = 600
ROOT = Path(__file__).resolve().parent.parent
ALLOWLIST = ROOT / "scripts" / "module_size_allowlist.txt"


def read_allowlist(text: str) -> dict[str, int]:
    """Parse ``<lines> <path>`` entries; ``#`` starts a comment."""
    allowed: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2 or not fields[0].isdigit():
            raise ValueError(f"{ALLOWLIST.name} line {number}: expected '<lines> <path>'")
        allowed[fields[1]] = int(fields[0])
    return allowed


def problems(sizes: Mapping[str, int], allowed: Mapping[str, int], limit: int = LIMIT) -> list[str]:
    """What is wrong, each message saying what to do about it."""
    listed = ALLOWLIST.relative_to(ROOT)
    found: list[str] = []
    for path, lines in sorted(sizes.items()):
        allowance = allowed.get(path)
        if allowance is None:
            if lines > limit:
                found.append(
                    f"{path}: {lines} lines, over the {limit}-line module limit. Split it into"
                    " modules of one concept each (docs/architecture.md says where things go)."
                    f" Do not add it to {listed}: that list only shrinks."
                )
        elif lines <= limit:
            found.append(
                f"{path}: {lines} lines, now within the {limit}-line limit. Remove its entry"
                f" from {listed} so it stays there."
            )
        elif lines > allowance:
            found.append(
                f"{path}: {lines} lines, more than the {allowance} it is allowed in {listed}."
                f" Bring it back to {allowance} lines or fewer (better: split it below"
                f" {limit}); do not raise the entry."
            )
        elif lines < allowance:
            found.append(
                f"{path}: {lines} lines, fewer than its entry {allowance} in {listed}."
                f" Lower the entry to '{lines} {path}' so it cannot grow back."
            )
    for path in sorted(set(allowed) - set(sizes)):
        found.append(f"{path}: listed in {listed} but no longer exists. Remove its entry.")
    return found


def lowered(text: str, sizes: Mapping[str, int], limit: int = LIMIT) -> str:
    """The allow-list ``text`` with each entry lowered to its module's size, and the entries of
    modules within ``limit`` or gone left out. Comments stay; no entry is raised."""
    kept: list[str] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            kept.append(raw)
            continue
        allowance, path = line.split()
        lines = sizes.get(path)
        if lines is None or lines <= limit:
            continue
        kept.append(raw.replace(allowance, str(min(lines, int(allowance))), 1))
    return "".join(f"{line}\n" for line in kept)


def module_sizes(root: Path) -> dict[str, int]:
    """Line counts of the Python files git knows under ``root`` (tracked or new)."""
    listing = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.py"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    sizes: dict[str, int] = {}
    for path in listing:
        file = root / path
        if file.is_file():
            sizes[path] = len(file.read_bytes().splitlines())
    return sizes


def main(argv: list[str]) -> int:
    sizes = module_sizes(ROOT)
    text = ALLOWLIST.read_text()
    if argv == ["--lower"]:
        read_allowlist(text)  # refuse to rewrite a list it cannot read
        text = lowered(text, sizes)
        ALLOWLIST.write_text(text)
    elif argv:
        print("usage: module_size.py [--lower]", file=sys.stderr)
        return 2
    found = problems(sizes, read_allowlist(text))
    for message in found:
        print(message, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
