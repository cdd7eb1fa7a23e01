"""Log lines as Karpenter v1 writes them: its messages and keys in JSON, with zap's level names
and the controller that logged; the same records as readable text in ``nodewright simulate``."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest

from nodewright import metrics
from nodewright.logfields import duration, fields, ref, shortened
from nodewright.service import logs
from tests.conftest import Simulate
from tests.metrics.test_dashboards import MANIFESTS, SCENARIO


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    logs.configure("debug", "json", stream=stream)
    yield stream
    logging.getLogger("nodewright").handlers.clear()


def _entries(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_controllers_line_has_karpenters_structure(json_lines: io.StringIO) -> None:
    log = logging.getLogger("nodewright.provisioner")
    with metrics.controller_scope("provisioner"):
        log.info(
            "found provisionable pod(s)",
            extra=fields(Pods="default/a, default/b", duration=duration(0.036578541)),
        )
        log.warning("slow", extra=fields(NodeClaim=ref("default-x")))
    log.error("outside any controller")
    found, slow, outside = _entries(json_lines)
    assert list(found) == [
        "level",
        "time",
        "logger",
        "message",
        "controller",
        "Pods",
        "duration",
    ]
    assert found["level"] == "INFO"
    assert found["logger"] == "controller"
    assert found["message"] == "found provisionable pod(s)"
    assert found["controller"] == "provisioner"
    assert found["Pods"] == "default/a, default/b"
    assert found["duration"] == "36.578541ms"
    assert isinstance(found["time"], str)
    assert found["time"].endswith("Z")
    assert slow["level"] == "WARN"
    assert slow["NodeClaim"] == {"name": "default-x"}
    assert outside["level"] == "ERROR"
    assert "controller" not in outside


def test_keys_are_masked_like_messages(json_lines: io.StringIO) -> None:
    logging.getLogger("nodewright.x").info("calling", extra=fields(error="token=abc123"))
    (entry,) = _entries(json_lines)
    assert "abc123" not in json.dumps(entry)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0s"),
        (0.000000512, "512ns"),
        (0.0000015, "1.5µs"),
        (0.036578541, "36.578541ms"),
        (1.5, "1.5s"),
        (90, "1m30s"),
        (timedelta(hours=2), "2h0m0s"),
        (timedelta(hours=1, seconds=0.25), "1h0m0.25s"),
    ],
)
def test_durations_read_as_gos(value: float | timedelta, text: str) -> None:
    assert duration(value) == text


def test_long_lists_are_shortened_as_karpenter_does() -> None:
    assert shortened(["a", "b"]) == "a, b"
    assert shortened(map(str, range(8))) == "0, 1, 2, 3, 4 and 3 other(s)"


def test_simulate_prints_the_same_records_readably(simulate: Simulate) -> None:
    result = simulate(MANIFESTS, SCENARIO)
    lines = result.stdout.splitlines()

    def line(message: str) -> str:
        return next(x for x in lines if f"\t{message}\t" in x)

    found = line("found provisionable pod(s)")
    assert "\tINFO\tprovisioner\t" in found
    assert 'Pods="default/web-' in found
    assert "other(s)" in found
    assert "duration=" not in found, "wall-clock time would make runs differ"
    created = line("created nodeclaim")
    assert "NodePool=default NodeClaim=default-" in created
    assert 'requests={"cpu":' in created
    assert "instance-types=" in created
    launched = line("launched nodeclaim")
    for key in ("provider-id=kwok://", "instance-type=", "zone=", "capacity-type=on-demand"):
        assert key in launched
    assert "Node=" in line("registered nodeclaim")
    disrupting = line("disrupting node(s)")
    assert "decision=" in disrupting
    assert "disrupted-node-count=1" in disrupting
