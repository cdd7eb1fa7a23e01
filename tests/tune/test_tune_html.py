"""``tune --html FILE``: one self-contained page (no script, nothing from the network) with
every variant as a point of cost against disruptions, the Pareto front drawn and marked, the
winner and what it saves, the ranked table and the winning YAML; it fits the window when
headless Chromium renders it (installed with apt when missing)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from nodewright.commands import main
from tests.simulation.browser import ParsedPage, assert_shown_whole, browser_or_skip
from tests.tune.conftest import INFLATE, SPACE, Tune, TuneRun

SVG_NAMESPACE = "http://www.w3.org/2000/svg"


def _page(tune: Tune, tmp_path: Path, space: str = SPACE) -> tuple[TuneRun, str, ParsedPage]:
    page_file = tmp_path / "tune.html"
    run = tune(space, "--jobs", "1", "--html", str(page_file))
    assert run.exit_code == 0, run.stderr
    text = page_file.read_text()
    page = ParsedPage()
    page.feed(text)
    return run, text, page


def _points(page: ParsedPage) -> list[dict[str, str]]:
    return [
        attributes
        for tag, attributes in page.tags
        if tag == "circle" and "variant" in attributes.get("class", "").split()
    ]


def _table_rows(text: str) -> list[list[str]]:
    """The ranked table's cells, row by row (header first)."""
    table = text[text.index('<table id="variants">') :]
    table = table[: table.index("</table>")]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", table):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)
        rows.append([unescape(re.sub(r"<[^>]+>", "", cell)) for cell in cells])
    return rows


def test_every_variant_is_a_point_of_cost_against_disruptions_with_the_front_marked(
    tune: Tune, tmp_path: Path
) -> None:
    run, text, page = _page(tune, tmp_path)

    assert text.startswith("<!DOCTYPE html>")
    tags = [tag for tag, _ in page.tags]
    assert "script" not in tags
    assert "link" not in tags
    assert "img" not in tags
    for _, attributes in page.tags:
        for name, value in attributes.items():
            assert "://" not in value or (name == "xmlns" and value == SVG_NAMESPACE), value
    report = run.report
    by_index = {v["index"]: v for v in report["variants"]}
    points = _points(page)
    members = [[int(i) for i in p["data-variants"].split()] for p in points]
    # Every variant is in exactly one point; variants that measured the same share it.
    assert sorted(i for group in members for i in group) == sorted(by_index)
    assert len(points) < len(by_index)
    for point, group in zip(points, members, strict=True):
        first = by_index[group[0]]
        assert {
            (round(by_index[i]["dollarHours"], 4), by_index[i]["disruptions"]) for i in group
        } == {(round(first["dollarHours"], 4), first["disruptions"])}
        classes = point["class"].split()
        assert ("front" in classes) == first["front"]
        assert ("winner" in classes) == (report["winner"] in group)
        assert ("baseline" in classes) == (0 in group)
        assert "infeasible" not in classes
    # Cheaper is further left, more disruptions higher up (SVG's y grows downwards).
    by_cost = sorted(zip(points, members, strict=True), key=lambda pm: float(pm[0]["cx"]))
    costs = [by_index[group[0]]["dollarHours"] for _, group in by_cost]
    assert costs == sorted(costs)
    heights = {
        by_index[g[0]]["disruptions"]: float(p["cy"]) for p, g in zip(points, members, strict=True)
    }
    assert heights[1] < heights[0]
    # The front is drawn as one line through its points, and labelled in the legend.
    assert tags.count("path") == 1
    assert "on the Pareto front" in page.text_by_id["legend"]
    # Hovering over the winner says what it measured and set.
    winner = by_index[report["winner"]]
    assert (
        f"variant {winner['index']} (rank 1): ${winner['dollarHours']:.4f}, 1 disruption(s), "
        f"{winner['nodesLaunched']} node(s) launched, longest wait 1s; "
        "consolidationPolicy=WhenEmptyOrUnderutilized, consolidateAfter=0s, "
        "capacity-type=on-demand</title>"
    ) in text
    assert f">winner: {winner['index']}</text>" in text
    # Variants that measured the same as the settings as given are one point, with their count.
    baseline = by_index[0]
    alike = [
        v
        for v in by_index.values()
        if (round(v["dollarHours"], 4), v["disruptions"])
        == (round(baseline["dollarHours"], 4), baseline["disruptions"])
    ]
    assert len(alike) > 1
    assert f">as given, \u00d7{len(alike)}</text>" in text
    # The headline says what the winner saves against the settings as given.
    saved = report["savings"]["dollarHours"]
    assert page.text_by_id["winner"].strip().startswith(f"Winner: variant {winner['index']}")
    assert f"saves ${saved:.4f} ({report['savings']['share']:.1%})" in page.text_by_id["winner"]
    # The table ranks them as --json does; no note column when no variant has a note.
    rows = _table_rows(text)
    assert rows[0][:3] == ["Rank", "Variant", "Cost $"]
    assert rows[0][-1] == "Settings"
    assert rows[1][-1] == (
        "consolidationPolicy=WhenEmptyOrUnderutilized, consolidateAfter=0s, capacity-type=on-demand"
    )
    assert "(as given)" in [row[-1] for row in rows]
    assert [row[1] for row in rows[1:]] == [str(v["index"]) for v in report["variants"]]
    assert [row[8] == "*" for row in rows[1:]] == [v["front"] for v in report["variants"]]
    # The YAML to apply is the --winner file's.
    assert page.text_by_id["winning-yaml"] == run.winner_file.read_text()


def test_a_variant_breaking_a_constraint_is_a_hollow_point_with_its_note(
    tune: Tune, tmp_path: Path
) -> None:
    run, text, page = _page(tune, tmp_path, SPACE + "constraints:\n  maxDisruptionsPerHour: 0\n")

    by_index = {v["index"]: v for v in run.report["variants"]}
    broken = {i for i, v in by_index.items() if not v["feasible"]}
    assert broken
    for point in _points(page):
        group = {int(i) for i in point["data-variants"].split()}
        hollow = "infeasible" in point["class"].split()
        assert hollow == (group <= broken)
        assert (point["fill"] == "#fff") == hollow
    assert "at most 0 disruption(s) in any hour" in page.text_by_id["constraints"]
    rows = _table_rows(text)
    assert rows[0][-1] == "Note"
    notes = {row[1]: row[-1] for row in rows[1:]}
    assert all(notes[str(i)] == "1 disruptions in one hour > 0" for i in broken)
    assert all(notes[str(i)] == "" for i in by_index if i not in broken)


def test_an_html_path_that_cannot_be_written_is_refused_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    missing = tmp_path / "no-such-folder" / "tune.html"
    code = main(["tune", str(INFLATE), "--space", str(space), "--html", str(missing)])
    out = capsys.readouterr()
    assert code == 2
    assert out.err == f"error: --html {missing}: the folder {missing.parent} does not exist\n"
    assert out.out == ""


def test_headless_chromium_shows_the_tune_page_whole_offline(tune: Tune, tmp_path: Path) -> None:
    _page(tune, tmp_path, SPACE + "constraints:\n  maxDisruptionsPerHour: 0\n")
    page = tmp_path / "tune.html"
    assert_shown_whole(browser_or_skip(tmp_path), page, tmp_path / "shot.png")
