"""``nodewright tune`` as a user sees it: the ranked table, the Pareto front, the winner and
what it saves, the winning NodePool as YAML that applies and reproduces what tune measured."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from nodewright.commands import main
from tests.tune.conftest import INFLATE, ROOT, SCALE_UP_AND_DOWN, SPACE, Tune

KWOK_NODE_CLASS = """\
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: default
"""


def test_variants_are_ranked_cheapest_first_and_the_winner_says_what_it_saves(
    tune: Tune,
) -> None:
    run = tune(SPACE, "--jobs", "1")

    assert run.exit_code == 0, run.stderr
    variants = run.report["variants"]
    assert len(variants) == 13  # the baseline and 2 x 3 x 2 combinations
    costs = [v["dollarHours"] for v in variants]
    assert costs == sorted(costs)
    rows = run.table()
    assert rows[0][:3] == ["RANK", "VARIANT", "COST"]
    assert [row[1] for row in rows[1:]] == [str(v["index"]) for v in variants]
    assert [float(row[2]) for row in rows[1:]] == pytest.approx(costs, abs=1e-4)
    # Spot nodes are not consolidated onto spot (the gate is off), so the cheapest run is the
    # on-demand pool consolidating at once after the scale-down.
    winner = run.variant(run.report["winner"])
    assert winner["settings"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "0s",
        "capacity-type": ["on-demand"],
    }
    assert winner["disruptions"] == 1
    baseline = run.variant(0)
    assert baseline["settings"] == {}
    assert f"Winner: variant {winner['index']} (consolidationPolicy=WhenEmptyOrUnderutilized" in (
        run.stdout
    )
    saved = baseline["dollarHours"] - winner["dollarHours"]
    assert saved > 0
    assert run.report["savings"]["dollarHours"] == pytest.approx(saved, abs=1e-6)
    assert f"saves ${saved:.4f} ({saved / baseline['dollarHours']:.1%})" in run.stdout
    # The front: the winner (cheapest, one disruption) and the cheapest with none.
    front = [run.variant(i) for i in run.report["front"]]
    assert winner in front
    assert {v["disruptions"] for v in front} == {0, 1}
    assert all(v["front"] for v in front)


def test_the_winning_yaml_applies_and_reproduces_the_run_tune_measured(
    tune: Tune, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tune(SPACE, "--jobs", "1")
    winner = run.variant(run.report["winner"])
    printed = run.stdout.split("The winning settings, to apply:\n", 1)[1]
    assert printed.strip() == run.winner_file.read_text().strip()
    assert "consolidateAfter: 0s" in printed
    assert "status" not in printed
    assert "uid" not in printed

    applied = tmp_path / "applied"
    applied.mkdir()
    shutil.copy(INFLATE / "inflate.yaml", applied / "inflate.yaml")
    shutil.copy(run.winner_file, applied / "nodepool.yaml")
    (applied / "nodeclass.yaml").write_text(KWOK_NODE_CLASS)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCALE_UP_AND_DOWN)
    report_file = tmp_path / "simulated.json"
    try:
        code = main(
            ["simulate", str(applied), "--scenario", str(scenario), "--json", str(report_file)]
        )
    finally:
        logging.getLogger("nodewright").handlers.clear()
    capsys.readouterr()
    assert code == 0
    simulated = json.loads(report_file.read_text())
    assert simulated["dollarHours"] == pytest.approx(winner["dollarHoursOfRun"], abs=1e-6)
    assert simulated["simulatedSeconds"] == winner["simulatedSeconds"]
    assert simulated["totalPricePerHour"] == pytest.approx(winner["pricePerHourAtEnd"])


def test_a_variant_breaking_a_constraint_is_ranked_after_those_meeting_them(tune: Tune) -> None:
    space = SPACE + "constraints:\n  maxDisruptionsPerHour: 0\n"
    run = tune(space, "--jobs", "1")

    assert run.exit_code == 0
    variants = run.report["variants"]
    feasible = [v["feasible"] for v in variants]
    assert feasible == sorted(feasible, reverse=True)  # all that meet them come first
    assert all(v["disruptions"] == 0 for v in variants if v["feasible"])
    broken = [v for v in variants if not v["feasible"]]
    assert broken
    assert all(v["violations"] == ["1 disruptions in one hour > 0"] for v in broken)
    rows = {row[1]: " ".join(row) for row in run.table()[1:]}
    assert "1 disruptions in one hour > 0" in rows[str(broken[0]["index"])]
    assert run.variant(run.report["winner"])["disruptions"] == 0


def test_no_variant_meeting_the_constraints_is_said_and_exits_1(tune: Tune) -> None:
    # Every pod waits for its node at least a second.
    run = tune(SPACE + "constraints:\n  maxPodPending: 0s\n", "--jobs", "1")

    assert run.exit_code == 1
    assert "No variant meets the constraints" in run.stdout
    assert run.report["winner"] is None
    assert not run.winner_file.exists()
    assert all(
        v["violations"][0].startswith("a pod pending 1s > 0s") for v in run.report["variants"]
    )


def test_a_pool_that_cannot_fit_the_pods_leaves_them_pending_and_loses(tune: Tune) -> None:
    space = """\
parameters:
  - field: spec.template.spec.requirements[karpenter.kwok.sh/instance-size]
    values: [["1"], ["16"]]
constraints:
  maxPodPending: 2m
"""
    run = tune(space, "--jobs", "1")

    assert run.exit_code == 0
    # One CPU is too small for a pod asking for one (the node keeps some for itself).
    impossible = next(
        v for v in run.report["variants"] if v["settings"].get("instance-size") == ["1"]
    )
    assert impossible["podsPendingAtEnd"] == 3  # of the 3 left after the scale-down
    assert impossible["violations"] == ["3 pod(s) never scheduled"]
    assert impossible["rank"] == 3
    assert run.table()[3][-4:] == ["3", "pod(s)", "never", "scheduled"]


def test_a_sample_is_drawn_with_the_seed(tune: Tune) -> None:
    first = tune(SPACE, "--jobs", "1", "--sample", "4", "--seed", "7")
    again = tune(SPACE, "--jobs", "1", "--sample", "4", "--seed", "7")
    other = tune(SPACE, "--jobs", "1", "--sample", "4", "--seed", "8")

    def chosen(run: object) -> list[dict[str, object]]:
        report = run.report  # type: ignore[attr-defined]
        return sorted((v["settings"] for v in report["variants"] if v["index"]), key=json.dumps)

    assert first.report["variantsAsked"] == 5  # the baseline and the 4 drawn
    assert chosen(first) == chosen(again)
    assert chosen(first) != chosen(other)
    assert first.report["variants"] == again.report["variants"] or all(
        a["dollarHours"] == b["dollarHours"]
        for a, b in zip(first.report["variants"], again.report["variants"], strict=True)
    )


def test_a_snapshot_is_tuned_with_its_current_cost_shown(tune: Tune) -> None:
    space = """\
parameters:
  - field: spec.disruption.consolidationPolicy
    values: [WhenEmpty, WhenEmptyOrUnderutilized]
  - field: spec.template.spec.requirements[karpenter.sh/capacity-type]
    values: [[on-demand], [spot, on-demand]]
"""
    dump = ROOT / "examples" / "what-if" / "cluster-dump.yaml"
    run = tune(
        space,
        "--jobs",
        "1",
        "--from-dump",
        str(dump),
        "--feature-gates",
        "SpotToSpotConsolidation=true",
        inputs=(),
        scenario=None,
    )

    assert run.exit_code == 0, run.stderr
    now = {v["currentPricePerHour"] for v in run.report["variants"]}
    assert len(now) == 1
    (current,) = now
    assert f"the snapshot's nodes cost ${current:.4f}/h before the run" in run.stdout
    winner = run.variant(run.report["winner"])
    assert winner["settings"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "capacity-type": ["spot", "on-demand"],
    }
    assert winner["pricePerHourAtEnd"] < run.variant(0)["pricePerHourAtEnd"] < current
    # What to apply is the dump's NodePool without what the API server keeps.
    yaml_text = run.winner_file.read_text()
    assert "name: default" in yaml_text
    for server_side in ("uid:", "resourceVersion", "managedFields", "nodepool-hash", "status:"):
        assert server_side not in yaml_text


def test_the_help_shows_an_example_that_runs_a_space_file_and_the_exit_statuses(
    tune: Tune, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    shown = capsys.readouterr().out
    assert "exit status: 0 a winner found; 1 every variant ran and none meets" in shown
    assert "2 bad input (nothing ran); 3 the Ray cluster" in shown
    example = shown.split("example (from a checkout", 1)[1].split("\n\n", 1)[0]
    assert "--from-dump examples/what-if/cluster-dump.yaml" in example
    assert "--space examples/what-if/space.yaml" in example
    assert (ROOT / "examples" / "what-if" / "space.yaml").is_file()
    # The space file it shows is one tune takes as it stands.
    space = shown.split("what a winner must meet\n", 1)[1].split("\n\n", 1)[0]
    dump = ROOT / "examples" / "what-if" / "cluster-dump.yaml"
    run = tune(
        "\n".join(line[2:] for line in space.splitlines()) + "\n",
        "--jobs",
        "1",
        "--from-dump",
        str(dump),
        inputs=(),
        scenario=None,
    )

    assert run.exit_code == 0, run.stderr
    assert run.report["variantsFinished"] == 13
