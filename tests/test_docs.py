"""The plugin docs stay true: the hook reference is generated from the specs, every hook has a
test named after it, the tutorial's code is the tested example's code, and the snippets run."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

from nodewright.plugin import errors
from nodewright.plugin.reference import hook_functions, render, signature
from nodewright.testing import ProviderConformance

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DOCS = ROOT / "docs" / "plugins"
EXAMPLE = PLUGIN_DOCS / "example"
REGENERATE = "python -m nodewright.plugin.reference > docs/plugins/hooks.md"
HOOKS = [f.__name__ for f in hook_functions()]


def fenced_blocks(path: Path, language: str) -> list[str]:
    text = path.read_text()
    return [m.group(1) for m in re.finditer(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)]


# -- the hook reference ----------------------------------------------------------------------


def test_hook_reference_is_generated_from_the_specs() -> None:
    committed = (PLUGIN_DOCS / "hooks.md").read_text()
    assert committed == render(), f"docs/plugins/hooks.md is stale; run: {REGENERATE}"


def test_hook_reference_has_a_heading_with_the_exact_signature_of_every_hook() -> None:
    headings = re.findall(r"^### `(.+)`$", (PLUGIN_DOCS / "hooks.md").read_text(), re.M)
    assert headings == [signature(f) for f in hook_functions()]
    assert "nodewright_launch(request: LaunchRequest) -> Instance | LaunchResult | None" in headings


def test_every_hook_has_a_test_named_after_it() -> None:
    names = {
        name
        for path in (ROOT / "tests").rglob("test_*.py")
        for name in re.findall(r"^\s*def (test_\w+)", path.read_text(), re.M)
    }
    untested = [hook for hook in HOOKS if not any(hook in name for name in names)]
    assert untested == [], f"hooks without a test named after them: {untested}"


def test_the_reference_command_prints_the_page() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "nodewright.plugin.reference"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert completed.stdout == render()


# -- the tutorial and its example ------------------------------------------------------------


def tutorial_snippets() -> dict[Path, list[str]]:
    """The tutorial's Python snippets, by the example file their first line names."""
    snippets: dict[Path, list[str]] = {}
    for block in fenced_blocks(PLUGIN_DOCS / "writing-a-provider.md", "python"):
        first, _, code = block.partition("\n")
        assert first.startswith("# "), f"this tutorial snippet does not name its file:\n{block}"
        snippets.setdefault(EXAMPLE / first.removeprefix("# "), []).append(code.strip("\n"))
    return snippets


def without_docstring(source: str) -> str:
    tree = ast.parse(source)
    if not (tree.body and ast.get_docstring(tree)):
        return source
    lines = source.splitlines(keepends=True)
    del lines[tree.body[0].lineno - 1 : tree.body[0].end_lineno]
    return "".join(lines)


def test_tutorial_python_is_the_example_code() -> None:
    """Each snippet is a piece of the example file it names, in the file's order, and the
    snippets of a file show all of it but its module docstring: no import is left out."""
    snippets = tutorial_snippets()
    files = [p for p in EXAMPLE.rglob("*.py") if without_docstring(p.read_text()).strip()]
    assert sorted(snippets) == sorted(files)
    for path, codes in snippets.items():
        rest, start = without_docstring(path.read_text()), 0
        for code in codes:
            at = rest.find(code, start)
            assert at >= 0, f"this snippet is not in {path.name} after the one before:\n{code}"
            rest, start = rest[:at] + rest[at + len(code) :], at
        assert rest.strip() == "", f"the tutorial does not show this part of {path.name}:\n{rest}"


def test_tutorial_yaml_is_the_example_manifests() -> None:
    (block,) = fenced_blocks(PLUGIN_DOCS / "writing-a-provider.md", "yaml")
    assert block == (EXAMPLE / "manifests" / "toy.yaml").read_text()


def test_tutorial_toml_is_the_example_pyproject() -> None:
    pyproject = (EXAMPLE / "pyproject.toml").read_text()
    for block in fenced_blocks(PLUGIN_DOCS / "writing-a-provider.md", "toml"):
        assert block.strip("\n") in pyproject


def test_tutorial_covers_every_hook_the_example_implements() -> None:
    tutorial = (PLUGIN_DOCS / "writing-a-provider.md").read_text()
    source = (EXAMPLE / "nodewright_toy" / "plugin.py").read_text()
    implemented = re.findall(r"def (nodewright_\w+)", source)
    assert set(implemented) <= set(HOOKS)
    for hook in implemented:
        assert f"def {hook}" in tutorial


# -- testing providers and errors ------------------------------------------------------------


def test_testing_providers_lists_every_conformance_test() -> None:
    page = (PLUGIN_DOCS / "testing-providers.md").read_text()
    documented = re.findall(r"^\| `(test_\w+)` \|", page, re.M)
    suite = [n for n, _ in inspect.getmembers(ProviderConformance) if n.startswith("test_")]
    assert sorted(documented) == sorted(suite)


def test_testing_providers_snippets_run() -> None:
    runnable = [
        block
        for block in fenced_blocks(PLUGIN_DOCS / "testing-providers.md", "python")
        if block.startswith("from ")
    ]
    assert runnable
    for block in runnable:
        exec(compile(block, "testing-providers.md", "exec"), {})


def test_errors_page_documents_every_error() -> None:
    page = (PLUGIN_DOCS / "errors.md").read_text()
    headings = set(re.findall(r"^### `(\w+)", page, re.M))
    public = {
        name
        for name, obj in vars(errors).items()
        if isinstance(obj, type)
        and issubclass(obj, Exception)
        and obj.__module__ == errors.__name__
    }
    assert public - {"ProviderError", "PluginError"} == headings


def test_plugin_docs_links_resolve() -> None:
    for page in PLUGIN_DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
