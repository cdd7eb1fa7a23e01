"""The probe and metrics endpoints stay available when clients misbehave: a connection that
says nothing is closed after the timeout, and connections beyond the limit are refused instead
of each taking a thread."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from nodewright.service import http
from nodewright.service.http import Endpoints, probe
from nodewright.settings.run import RunSettings


@pytest.fixture
def endpoints() -> Iterator[Endpoints]:
    served = Endpoints(timeout=0.5)
    yield served
    served.close()


def _healthz(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
        body: bytes = answer.read()
        return body


def _threads_serving() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("Thread-"))


def test_idle_half_open_connections_are_closed_after_the_timeout(endpoints: Endpoints) -> None:
    port = endpoints.serve("127.0.0.1", 0, {"/healthz": probe(lambda: (True, "ok"))})
    before = _threads_serving()
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
    try:
        assert _healthz(port) == b"ok\n"  # served beside the idle connections
        deadline = time.monotonic() + 5
        for connection in idle:
            connection.settimeout(max(0.1, deadline - time.monotonic()))
            assert connection.recv(1) == b"", "the server kept an idle connection open"
        while _threads_serving() > before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _threads_serving() <= before
    finally:
        for connection in idle:
            connection.close()


def test_connections_beyond_the_limit_are_refused_not_queued(
    endpoints: Endpoints, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http, "MAX_CONNECTIONS", 5)
    port = endpoints.serve("127.0.0.1", 0, {"/healthz": probe(lambda: (True, "ok"))})
    before = _threads_serving()  # threads earlier tests left behind are not this server's
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    try:
        time.sleep(0.2)
        assert _threads_serving() - before <= 5
        # Once the idle ones time out, the port answers again.
        time.sleep(0.8)
        assert _healthz(port) == b"ok\n"
    finally:
        for connection in idle:
            connection.close()


def test_ipv6_addresses_are_served(endpoints: Endpoints) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    try:
        port = endpoints.serve("::1", 0, {"/healthz": probe(lambda: (True, "ok"))})
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with urllib.request.urlopen(f"http://[::1]:{port}/healthz", timeout=5) as answer:
        assert answer.read() == b"ok\n"


def test_the_default_bind_address_is_loopback() -> None:
    """Outside the chart, a run listens only on this machine; the chart chooses the pod's
    interfaces explicitly."""
    assert RunSettings.model_fields["bind_address"].default == "127.0.0.1"
