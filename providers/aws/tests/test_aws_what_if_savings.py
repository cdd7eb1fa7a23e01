"""The what-if of an EKS cluster, priced from the offline catalog, explains its money: the
saving splits into removing nodes, right-sizing at the same capacity type and moving to spot;
each new node says which existing nodes it replaces; every figure resting on a modelled price
(every spot price, and the on-demand prices of the types the catalog does not list) is
marked, in the text, the JSON report and the web page alike. The page is checked as a person
would see it, in headless Chromium."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nodewright.commands import main
from providers.aws.tests.eks_dump import ZONES, eks_dump
from tests.simulation.browser import browser_or_skip

#: The dump's nodes and what they cost on demand (us-east-1 list prices, not modelled).
LIST_PRICES = {"m5.xlarge": 0.192, "c5.xlarge": 0.17, "r5.xlarge": 0.252, "m5.large": 0.096}


@dataclass
class WhatIfRun:
    stdout: str
    report: dict[str, Any]
    page: Path

    @property
    def what_if(self) -> dict[str, Any]:
        return dict(self.report["whatIf"])


def _simulate(folder: Path, capacity_types: tuple[str, ...]) -> WhatIfRun:
    """Six Karpenter nodes (two of them in an EKS node group nodewright leaves alone), a
    fifth of the pods they could hold, ten minutes of consolidation."""
    folder.mkdir()
    dump = folder / "eks.json"
    dump.write_text(json.dumps(eks_dump(6, capacity_types, share=0.2, spread=False)))
    scenario = folder / "scenario.yaml"
    scenario.write_text("- advance: 10m\n")
    report, page = folder / "report.json", folder / "page.html"
    argv = [
        "simulate",
        "--from-dump",
        str(dump),
        "--provider-option",
        "aws.offline=us-east-1",
        "--scenario",
        str(scenario),
        "--json",
        str(report),
        "--html",
        str(page),
    ]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main(argv)
    finally:
        logging.getLogger("nodewright").handlers.clear()
    assert code == 0, out.getvalue()[-2000:]
    return WhatIfRun(out.getvalue(), json.loads(report.read_text()), page)


@pytest.fixture(scope="module")
def with_spot(tmp_path_factory: pytest.TempPathFactory) -> WhatIfRun:
    return _simulate(tmp_path_factory.mktemp("spot") / "run", ("spot", "on-demand"))


@pytest.fixture(scope="module")
def on_demand_only(tmp_path_factory: pytest.TempPathFactory) -> WhatIfRun:
    return _simulate(tmp_path_factory.mktemp("on-demand") / "run", ("on-demand",))


def test_the_saving_splits_into_removal_right_sizing_and_the_move_to_spot(
    with_spot: WhatIfRun, on_demand_only: WhatIfRun
) -> None:
    what_if = with_spot.what_if
    savings = what_if["savings"]
    assert savings["total"]["perHour"] == pytest.approx(what_if["savingsPerHour"], abs=1e-6)
    parts = ("removal", "rightSizing", "capacityType", "launched", "other")
    assert sum(savings[p]["perHour"] for p in parts) == pytest.approx(
        what_if["savingsPerHour"], abs=1e-6
    )
    removed = [c for c in what_if["changes"] if c["action"] == "removed"]
    replaced = [c for c in what_if["changes"] if c["action"] == "replaced"]
    assert removed
    assert replaced
    # what removal saves is the removed nodes' list price: no modelled price in it
    assert savings["removal"] == {
        "perHour": pytest.approx(sum(LIST_PRICES[c["instanceType"]] for c in removed)),
        "nodes": len(removed),
        "modelled": False,
    }
    assert savings["capacityType"]["moves"] == ["on-demand to spot"]
    assert savings["capacityType"]["perHour"] > 0
    assert savings["capacityType"]["modelled"] is True
    assert savings["total"]["modelled"] is True
    # limited to on-demand, the same cluster saves removal and right-sizing alone
    alone = on_demand_only.what_if
    assert alone["savings"]["capacityType"] == {
        "perHour": 0,
        "nodes": 0,
        "modelled": False,
        "moves": [],
    }
    assert alone["savingsPerHour"] < what_if["savingsPerHour"]
    assert alone["savings"]["removal"] == savings["removal"]


def test_each_new_node_says_which_existing_nodes_it_replaces(with_spot: WhatIfRun) -> None:
    what_if = with_spot.what_if
    added = {n["name"]: n for n in what_if["addedNodes"]}
    by_existing = {c["name"]: c["replacedBy"] for c in what_if["changes"]}
    for change in what_if["changes"]:
        if change["action"] == "removed":
            assert change["replacedBy"] == []
        for name in change["replacedBy"]:
            assert change["name"] in added[name]["replaces"]
    for node in added.values():
        assert node["replaces"]  # every new node took the place of existing ones
        for existing in node["replaces"]:
            assert node["name"] in by_existing[existing]
        # in the zones of the EC2NodeClass's subnets only
        assert node["zone"] in ZONES
    # the text's NEW NODE table says the same
    text = with_spot.stdout[with_spot.stdout.index("NEW NODE") :]
    for node in added.values():
        row = next(line for line in text.splitlines() if line.startswith(node["name"]))
        assert row.split("  ")[-1].strip().startswith(node["replaces"][0])


def test_every_figure_resting_on_a_modelled_price_is_marked(with_spot: WhatIfRun) -> None:
    what_if = with_spot.what_if
    for node in what_if["addedNodes"]:
        assert node["capacityType"] == "spot"
        assert node["priceModelled"] is True  # every offline spot price is modelled
    for node in what_if["currentNodes"]:
        assert node["priceModelled"] is False  # m5, c5, r5: list prices
        assert node["pricePerHour"] == pytest.approx(LIST_PRICES[node["instanceType"]])
    assert what_if["currentPriceModelled"] is False
    assert what_if["projectedPriceModelled"] is True
    # the run's own node table and total say so too
    assert re.search(r"\n\d+ node\(s\), \$\d+\.\d{4}/h\*, \d+ pod\(s\) bound", with_spot.stdout)
    text = with_spot.stdout[with_spot.stdout.index("What-if for") :]
    assert re.search(r"projected: \d+ node\(s\), \$\d+\.\d{4}/h\* \(saves \$\d+\.\d{4}/h\*", text)
    assert re.search(r"\$\d+\.\d{4}/h\*  moving \d+ node\(s\) from on-demand to spot", text)
    assert re.search(r" \$\d+\.\d{4}/h  removing \d+ node\(s\)", text)
    assert "* rests on a modelled price" in text
    for node in what_if["addedNodes"]:
        assert f"{node['pricePerHour']:.4f}*" in text


def _shot_name(run: WhatIfRun) -> Path:
    return run.page.with_suffix(".png")


def test_the_page_explains_the_saving_and_fits_the_window(with_spot: WhatIfRun) -> None:
    html = with_spot.page.read_text()
    what_if = with_spot.what_if
    saved = what_if["savingsPerHour"]
    assert f"Saves ${saved:,.2f}/h*" in html
    moved = what_if["savings"]["capacityType"]["nodes"]
    assert f"moving {moved} node(s) from on-demand to spot" in html
    assert "* rests on a modelled price" in html
    added = html.split('id="what-if-added"')[1].split("</table>")[0]
    for node in what_if["addedNodes"]:
        assert f"<span>{node['name']}</span>" in added
        assert f"{node['pricePerHour']:.4f}*" in added
    # the snapshot's nodes are existing ones, not launched at the start of the run
    removed = html.split('id="removed-nodes"')[1].split("</table>")[0]
    assert "<td>existing</td>" in removed
    assert ">0</td>" not in removed
    # no axis reads 0.0000, every chart has its unit and gridlines, and hover values
    charts = html.split("<h2>Timeline</h2>")[1].split("<h2>")[0]
    assert "0.0000" not in charts
    for unit in ("nodes", "$/h", "pods"):
        assert f">{unit}</text>" in charts
    assert charts.count('class="grid"') > 20
    assert "<title>0:00:00 to " in charts
    browser = browser_or_skip(with_spot.page.parent)
    for width in (1280, 1600):
        layout = browser.layout(with_spot.page, width)
        assert layout.problems() == [], f"at {width} px"
    # narrower, the wide tables scroll inside their box; nothing else overflows
    narrow = browser.layout(with_spot.page, 900)
    assert not narrow.overflowing
    assert not narrow.wrapped
    assert not narrow.outside_charts
    shot = _shot_name(with_spot)
    browser.screenshot(with_spot.page, shot, 1280, 1400)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
