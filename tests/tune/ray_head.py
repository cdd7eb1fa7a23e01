"""A Ray cluster of one node for the ``tune --ray`` tests: ``ray start --head`` on a loopback
port, as an administrator starts a cluster's head, stopped (every process it started) when the
test ends.

Ray's local mode is gone from the Ray this project installs, so the tests run a real head and
point ``--ray`` at its address. Everything stays on the loopback address (Ray's single-machine
setting), with token authentication off, every port chosen free and the session files in a
fresh directory, so that two suites running at once do not meet.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from tests.ports import free_ports
from tests.tune.interrupt import group_alive

#: How long the head may take to start on a busy machine.
START_TIMEOUT = 240.0

#: The environment of the head and of the tunes that use it: loopback only, no token.
RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # Ray's one-machine setting: 127.0.0.1 only
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
    # A worker process imports Ray and nodewright before it registers: minutes, not Ray's
    # default of one, on a machine the rest of the suite keeps busy.
    "RAY_worker_register_timeout_seconds": "600",
}


@dataclass(frozen=True)
class RayHead:
    address: str
    temp: Path

    def problems(self) -> str:
        """The warnings and errors of the head's node manager and workers, to show when a
        test fails."""
        lines: list[str] = []
        for log in sorted(self.temp.glob("session_*/logs/*")):
            if log.suffix in (".err", ".out", ".log") and log.is_file():
                found = [
                    line
                    for line in log.read_text(errors="replace").splitlines()
                    if " E " in line or " W " in line or " C " in line or "Error" in line
                ]
                lines.extend(f"{log.name}: {line}" for line in found[-10:])
        return "\n".join(lines[-60:])


@contextmanager
def ray_head(cpus: int = 2, env: dict[str, str] | None = None) -> Iterator[RayHead]:
    """Start a head (its processes and workers with ``env`` added to the environment); yield
    its address (``127.0.0.1:PORT``) and session files. A start that fails at once (a chosen
    port taken meanwhile by another process) is tried once more."""
    for attempt in (1, 2):
        # Short: Ray's socket paths live under it; a Unix socket path has at most 107 bytes.
        temp = Path(tempfile.mkdtemp(prefix="nwray-", dir="/tmp"))
        head, port = _start(cpus, temp, env or {})
        try:
            _wait_until_up(head, port, temp / "head.log")
        except HeadExited:
            _stop(head)
            shutil.rmtree(temp, ignore_errors=True)
            if attempt == 2:
                raise
            continue
        except BaseException:
            _stop(head)
            shutil.rmtree(temp, ignore_errors=True)
            raise
        try:
            yield RayHead(f"127.0.0.1:{port}", temp)
        finally:
            _stop(head)
            shutil.rmtree(temp, ignore_errors=True)
        return


class HeadExited(RuntimeError):
    pass


def _start(cpus: int, temp: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    port, client, node, objects, dashboard, agent, agent_grpc, metrics, env_agent = free_ports(9)
    command = [
        str(Path(sys.executable).with_name("ray")),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={port}",
        f"--num-cpus={cpus}",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={temp}",
        f"--ray-client-server-port={client}",
        f"--node-manager-port={node}",
        f"--object-manager-port={objects}",
        f"--dashboard-port={dashboard}",
        f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}",
        f"--runtime-env-agent-port={env_agent}",
    ]
    with (temp / "head.log").open("w") as out:
        head = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **RAY_ENV, **env},
            start_new_session=True,  # its processes are one group, stopped together
        )
    return head, port


def _wait_until_up(head: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Until the head says it started (its GCS answers before its node is ready)."""
    deadline = time.monotonic() + START_TIMEOUT
    while "Ray runtime started" not in log.read_text(errors="replace"):
        if head.poll() is not None:
            raise HeadExited(f"ray start exited {head.returncode}:\n{log.read_text()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"ray start not up in {START_TIMEOUT}s:\n{log.read_text()}")
        time.sleep(0.5)
    with socket.create_connection(("127.0.0.1", port), timeout=10):
        pass


def _stop(head: subprocess.Popen[bytes]) -> None:
    """SIGTERM to ``ray start --block`` stops what it started; whatever of its process group
    is left after that is killed."""
    head.send_signal(signal.SIGTERM)
    with suppress(subprocess.TimeoutExpired):
        head.wait(timeout=60)
    deadline = time.monotonic() + 30
    while group_alive(head.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    if group_alive(head.pid):
        os.killpg(head.pid, signal.SIGKILL)
    if head.poll() is None:
        head.wait()
