"""Loopback ports for servers the tests start (a Ray head, the container's probes)."""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """``count`` different ports nothing listens on (each probe held until all are chosen)."""
    probes = []
    try:
        for _ in range(count):
            probe = socket.socket()
            probes.append(probe)
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def free_port() -> int:
    """A port nothing listens on."""
    (port,) = free_ports(1)
    return port
