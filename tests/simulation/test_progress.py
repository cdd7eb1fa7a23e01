"""The status line of a long simulation: drawn on a terminal only, log lines printed above it."""

from __future__ import annotations

import io
import logging

from nodewright.simulation.progress import ProgressAwareHandler, ProgressLine
from nodewright.testing.manifests import KWOK_NODE_CLASS, deployment, node_pool
from tests.conftest import Simulate
from tests.controllers.kwok_world import KWOKWorld, four_cpu_pool


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_shows_time_pods_nodes_and_price() -> None:
    world = KWOKWorld()
    world.apply(KWOK_NODE_CLASS, four_cpu_pool(), deployment("web", 5))
    world.settle()
    screen = _Terminal()
    line = ProgressLine(world.sim, screen)
    line.update()
    text = screen.getvalue()
    assert text.startswith("\r\x1b[K")
    assert "pods 5 bound, 0 pending" in text
    assert f"nodes {len(world.nodes())}" in text
    assert "$0.0000/h" not in text  # the launched nodes' prices are summed
    assert "simulated 00:0" in text


def test_log_lines_are_printed_above_the_line() -> None:
    world = KWOKWorld()
    screen = _Terminal()
    line = ProgressLine(world.sim, screen)
    line.update()
    handler = ProgressAwareHandler(screen, line)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.emit(logging.LogRecord("x", logging.INFO, "", 0, "hello", None, None))
    drawn = screen.getvalue()
    status = line.text()
    # the line is cleared, the log line written, then the line drawn again
    assert drawn.endswith("\r\x1b[Khello\n" + status)
    line.finish()
    assert screen.getvalue().endswith("\r\x1b[K")


def test_no_line_when_the_output_is_not_a_terminal(simulate: Simulate) -> None:
    result = simulate(KWOK_NODE_CLASS + node_pool() + deployment("web", 3))
    assert result.exit_code == 0
    assert "3 pod(s) bound" in result.stdout
    assert "\x1b[K" not in result.stdout
    assert "\x1b[K" not in result.stderr
