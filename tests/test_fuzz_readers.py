"""Fuzzing every other reader of user input in the suite: mutated scenarios, dumps,
scheduler configurations, KWOK catalog files, kubeconfigs and command-line options through
``simulate`` exit 0 or 2, print no traceback, name the file (or the option) on every error
line, and stay within 30 s of CPU and 400 MiB of memory growth each.

The generators and the property are ``bench/fuzz_readers.py``'s; here a few seeded inputs per
reader (the same on every run), without the values at the documented limits, whose cost
docs/simulate.md states; and scenarios and dumps run with limits on what a run does (nodes
launched, units of work) low enough that they stop there. The long run is in bench/README.md.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given

from nodewright.simulation.limits import BY_NAME, DEFAULT
from tests.bench_modules import load_bench
from tests.fuzz import fuzz_settings

fuzzing = load_bench("fuzz_readers")

#: Inputs per reader: a few seconds each (a kubeconfig that reaches for its server, a few
#: seconds of retries).
EXAMPLES = {"kubeconfig": 4}
DEFAULT_EXAMPLES = 10


@pytest.mark.parametrize("reader", fuzzing.READERS)
def test_mutated_inputs_of_every_reader_keep_the_property(reader: str) -> None:
    @fuzz_settings(EXAMPLES.get(reader, DEFAULT_EXAMPLES))
    @given(fuzzing.reader_inputs(reader))
    def check(case: Any) -> None:
        outcome = fuzzing.check_reader_input(case)
        assert outcome.violations == [], (case, outcome.stderr[:2000])

    check()


@pytest.mark.parametrize("reader", ["scenario", "dump"])
def test_mutated_runs_stopped_at_the_run_limits_keep_the_property(
    reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Limits on what a run does (nodes launched, units of work) these small inputs reach,
    # so a run stops in every state a step can leave it in: the scenarios' manifests
    # (examples/inflate) settle in 1,000 units, a step's first passes go beyond.
    low = replace(DEFAULT, launched_nodes=1, work=1_500)
    monkeypatch.setitem(BY_NAME, DEFAULT.name, low)
    stopped: list[str] = []

    @fuzz_settings(DEFAULT_EXAMPLES)
    @given(fuzzing.reader_inputs(reader))
    def check(case: Any) -> None:
        outcome = fuzzing.check_reader_input(case)
        assert outcome.violations == [], (case, outcome.stderr[:2000])
        errors = [line for line in outcome.stderr.splitlines() if line.startswith("error:")]
        if any("refused: the run has" in line for line in errors):
            assert outcome.exit_code == 2
            assert len(errors) == 1, errors
            stopped.append(errors[0])

    check()
    if reader == "scenario":  # mutated dumps are mostly refused as they are read
        assert stopped, "no input reached a run limit"
