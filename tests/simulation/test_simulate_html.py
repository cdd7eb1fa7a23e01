"""``simulate --html FILE``: one self-contained page (no script, nothing fetched from the
network) with the timeline charts as inline SVG, the node tables and the events, which fits
the window when headless Chromium renders it (installed with apt when missing)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from nodewright.commands import main
from tests.simulation.browser import ParsedPage, assert_shown_whole, browser_or_skip

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "inflate"
SVG_NAMESPACE = "http://www.w3.org/2000/svg"


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
    page = ParsedPage()
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
    first, *moves = nodes_path.split()
    levels = [float(first.split(",")[1])] + [float(m[1:]) for m in moves if m.startswith("V")]
    assert len(levels) == 3
    assert levels[0] == levels[2] > levels[1]  # SVG's y grows downwards
    # hovering over the step says when and how many
    assert "<title>0:01:01 to 0:03:21: 1 node</title>" in text
    assert "<title>0:01:01 to 0:03:21: $0.3041/h</title>" in text
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


def test_headless_chromium_shows_the_page_whole_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = _scale_down_page(tmp_path, capsys)
    assert_shown_whole(browser_or_skip(tmp_path), page, tmp_path / "shot.png")


def test_the_layout_check_finds_what_a_person_would_see_broken(tmp_path: Path) -> None:
    """The check the page tests rely on fails on each fault it looks for."""
    browser = browser_or_skip(tmp_path)
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><body><main>"
        '<p id="clipped" style="width: 80px; overflow: hidden; white-space: nowrap">'
        "a sentence far too long for its box</p>"
        '<table><tr><td class="name" style="white-space: normal; max-width: 40px">'
        "<span>web-7c5ddbdf54-x2k9p web-7c5ddbdf54-q8r4t</span></td></tr></table>"
        '<div class="scroll" style="width: 200px; overflow-x: auto"><table><tr>'
        '<td style="white-space: nowrap">' + "wide " * 80 + "</td></tr></table></div>"
        '<figure id="chart-x"><svg viewBox="0 0 100 50" width="100" height="50">'
        '<text x="95" y="20">$0.0000</text></svg></figure>'
        "</main></body></html>"
    )
    layout = browser.layout(page, 800)
    assert layout.overflowing == ["p#clipped: a sentence far too long for its box"]
    assert len(layout.wrapped) == 1
    assert layout.outside_charts == ["chart-x: $0.0000"]
    assert len(layout.scrolling) == 1
    assert len(layout.problems()) == 4
