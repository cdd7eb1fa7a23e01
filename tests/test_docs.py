"""The plugin docs stay true: the hook reference is generated from the specs, every hook has a
test named after it, the tutorial's code is the tested example's code, and the snippets run."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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


def test_tutorial_python_is_the_example_code() -> None:
    sources = {p: p.read_text() for p in EXAMPLE.rglob("*.py")}
    blocks = fenced_blocks(PLUGIN_DOCS / "writing-a-provider.md", "python")
    assert len(blocks) >= 8
    for block in blocks:
        assert any(block.strip("\n") in source for source in sources.values()), (
            f"this tutorial snippet is not in docs/plugins/example/:\n{block}"
        )


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


@pytest.mark.slow
def test_example_distribution_is_found_through_its_entry_point(tmp_path: Path) -> None:
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    dist_info = tmp_path / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    group = "nodewright.providers"
    entries = project["entry-points"][group]
    (dist_info / "entry_points.txt").write_text(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items())
    )
    (dist_info / "RECORD").write_text("")
    script = (
        "import json; from nodewright.plugin.host import PluginHost; "
        "print(json.dumps(PluginHost.load(only=['toy']).describe()))"
    )
    path = os.pathsep.join([str(tmp_path), str(EXAMPLE), os.environ.get("PYTHONPATH", "")])
    completed = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        check=True,
        timeout=60,
    )
    (row,) = json.loads(completed.stdout)
    assert (row["name"], row["distribution"], row["version"], row["status"]) == (
        "toy",
        "nodewright-toy",
        "0.1.0",
        "ok",
    )
    assert row["node_classes"] == "ToyNodeClass (toy.nodewright.dev)"


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
