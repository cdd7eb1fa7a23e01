"""``simulate --html FILE``: one self-contained page (no script, nothing fetched from the
network) with the timeline charts as inline SVG, the node tables and the events. When Debian's
chromium is installed, the page is also rendered headless."""

from __future__ import annotations

import logging
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nodewright.commands import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "inflate"
SVG_NAMESPACE = "http://www.w3.org/2000/svg"


class _Page(HTMLParser):
    """Tags, their attributes, and the text of each element with an id."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text_by_id: dict[str, str] = {}
        self._open: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if tag not in ("meta", "line", "path"):
            self._open.append(attributes.get("id"))
            if attributes.get("id"):
                self.text_by_id[attributes["id"]] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("meta", "line", "path") and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for open_id in self._open:
            if open_id:
                self.text_by_id[open_id] += data


def _scale_down_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    page = tmp_path / "run.html"
    argv = [
        "simulate",
        str(EXAMPLE / "manifests"),
        "--scenario",
        str(EXAMPLE / "scale-down.yaml"),
        "--html",
        str(page),
    ]
    try:
        assert main(argv) == 0
    finally:
        logging.getLogger("nodewright").handlers.clear()
    capsys.readouterr()
    return page


def test_the_page_has_the_charts_the_removed_node_and_the_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _scale_down_page(tmp_path, capsys).read_text()
    assert text.startswith("<!DOCTYPE html>")
    page = _Page()
    page.feed(text)
    tags = [tag for tag, _ in page.tags]
    assert "script" not in tags
    assert "link" not in tags
    assert "img" not in tags
    for _, attributes in page.tags:
        for name, value in attributes.items():
            assert "://" not in value or (name == "xmlns" and value == SVG_NAMESPACE), value
    charts = [a["id"] for tag, a in page.tags if tag == "figure"]
    assert charts == ["chart-nodes", "chart-price", "chart-pods-bound", "chart-pods-pending"]
    assert tags.count("svg") == 4
    assert tags.count("path") == 4
    # One node ran from 61 s to 201 s: the nodes chart rises once and falls once.
    (nodes_path,) = [
        a["d"] for tag, a in page.tags if tag == "path" and "2a6" in a.get("stroke", "")
    ]
    assert nodes_path.count("V8.0") == 2
    removed = page.text_by_id["removed-nodes"]
    assert "c-16x-amd64-linux" in removed
    assert "Empty (Emptiness/Delete)" in removed
    assert "Disrupting Node: Emptiness/Delete" in page.text_by_id["events"]
    assert page.text_by_id["dollar-hours"] == "$0.0118 spent on nodes"
    assert page.text_by_id["nodes"] == "None."


def test_an_html_path_that_cannot_be_written_is_refused_before_simulating(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-folder" / "run.html"
    assert main(["simulate", str(EXAMPLE / "manifests"), "--html", str(missing)]) == 2
    out = capsys.readouterr()
    assert out.err == f"error: --html {missing}: the folder {missing.parent} does not exist\n"
    assert out.out == ""


CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_headless_chromium_renders_the_page_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert CHROMIUM is not None
    page = _scale_down_page(tmp_path, capsys)
    shot = tmp_path / "shot.png"
    common = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-proxy-server",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [*common, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert 'id="chart-price"' in dom
    assert "Empty (Emptiness/Delete)" in dom
    subprocess.run(
        [*common, f"--screenshot={shot}", "--window-size=900,1400", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000
