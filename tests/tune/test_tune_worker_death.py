"""A local worker process that dies while it holds a variant (killed, or exiting on its own):
the tune does not hang, that variant is reported as failed with how its worker ended, and
every other variant runs, on a worker started in the dead one's place. An exception in a
variant's run fails that variant in the same way.

The variant that kills its worker is made here: its pickled form, which the worker loads
when it is handed the variant, kills the process that loads it (``SIGKILL`` to itself, or
``os._exit``). The command itself runs as a user runs it, ``--jobs 2``.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from nodewright.simulation.tune.job import Variant
from nodewright.simulation.tune.local import run_processes
from nodewright.simulation.tune.worker import VariantResult, run_variant
from tests.tune.conftest import SPACE, Tune
from tests.tune.test_tune_parallel import measured

#: The variant whose worker dies.
DOOMED = 5


class KilledWithSigkill(Variant):
    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return signal.raise_signal, (signal.SIGKILL,)


class ExitsWithStatus7(Variant):
    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return os._exit, (7,)


def _dooming(monkeypatch: pytest.MonkeyPatch, doom: type[Variant]) -> None:
    """Hand variant DOOMED to its worker as ``doom``, every other variant as it is."""

    def run(payload: bytes, variants: Sequence[Variant], *rest: Any) -> bool:
        swapped = [doom(v.index, v.settings) if v.index == DOOMED else v for v in variants]
        return run_processes(payload, swapped, *rest)

    monkeypatch.setattr("nodewright.commands.tune.run_processes", run)


@pytest.mark.parametrize(
    ("doom", "how"),
    [
        (KilledWithSigkill, "its worker process was killed by SIGKILL before the run finished"),
        (ExitsWithStatus7, "its worker process exited with status 7 before the run finished"),
    ],
)
def test_a_variant_whose_worker_dies_fails_and_the_others_run(
    tune: Tune, monkeypatch: pytest.MonkeyPatch, doom: type[Variant], how: str
) -> None:
    alone = tune(SPACE, "--jobs", "1")
    _dooming(monkeypatch, doom)

    run = tune(SPACE, "--jobs", "2")

    assert run.exit_code == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert run.report["variantsFinished"] == 13
    assert run.variant(DOOMED)["error"] == how

    # Every other variant ran, with what it measures in one process (ranked one place higher
    # where the failed variant no longer comes before it).
    def others(report: dict[str, Any]) -> list[dict[str, Any]]:
        return [{**v, "rank": 0} for v in measured(report) if v["index"] != DOOMED]

    assert others(run.report) == others(alone.report)
    assert len({v["ranOn"] for v in run.report["variants"] if v["ranOn"]}) == 3
    # The table ranks it last, saying why; the progress lines count it.
    last = run.table()[-1]
    assert last[1] == str(DOOMED)
    assert " ".join(last[2:9]) == " ".join(["-"] * 7)
    assert f"failed: {how}" in run.stdout
    assert f"variant {DOOMED} finished" in run.stderr
    assert len([line for line in run.stderr.splitlines() if line.startswith("variant ")]) == 13
    assert run.report["winner"] == alone.report["winner"]


def test_an_exception_in_a_variants_run_fails_that_variant_only(
    tune: Tune, monkeypatch: pytest.MonkeyPatch
) -> None:
    def faulty(payload: bytes, variant: Variant) -> VariantResult:
        if variant.index == DOOMED:
            raise RuntimeError("a fault in the simulation\nand its second line")
        return run_variant(payload, variant)

    monkeypatch.setattr("nodewright.simulation.tune.local.run_variant", faulty)

    run = tune(SPACE, "--jobs", "1")

    assert run.exit_code == 0, run.stderr
    assert run.report["variantsFinished"] == 13
    assert run.variant(DOOMED)["error"] == "its run raised RuntimeError: a fault in the simulation"
    assert "failed: its run raised RuntimeError: a fault in the simulation" in run.stdout
    assert [v["index"] for v in run.report["variants"] if v["error"]] == [DOOMED]
