""".ci/cluster-suite as CI sees it, on a stand-in for ../shared/tools/realk8s whose up.sh and
down.sh only record that they ran: the skip line without a control plane, the control plane
stopped when the script is terminated, and a clear failure when another user holds the lock."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "cluster-suite"


def _stand_in(folder: Path, up: str) -> Path:
    """A realk8s folder: up.sh runs ``up`` after writing 'up', down.sh writes 'down'."""
    folder.mkdir()
    record = folder / "record"
    (folder / "up.sh").write_text(f"#!/bin/sh\necho up >> {record}\n{up}\n", encoding="utf-8")
    (folder / "down.sh").write_text(f"#!/bin/sh\necho down >> {record}\n", encoding="utf-8")
    for name in ("up.sh", "down.sh"):
        (folder / name).chmod(0o755)
    return folder


def _environment(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "REALK8S_LOCK": str(tmp_path / "lock"),
        "REALK8S_HOME": str(tmp_path / "home"),
    }


def test_without_a_control_plane_the_suite_is_skipped_with_a_line_saying_so(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [str(SCRIPT), str(tmp_path / "absent")],
        env=_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("cluster suite skipped: no real control plane at ")
    assert str(tmp_path / "absent") in done.stdout


def test_sigterm_stops_the_control_plane_at_once(tmp_path: Path) -> None:
    folder = _stand_in(tmp_path / "realk8s", up="exec sleep 60")
    record = folder / "record"
    suite = subprocess.Popen(
        [str(SCRIPT), str(folder)],
        env=_environment(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while "up" not in (record.read_text() if record.exists() else ""):
            assert time.monotonic() < deadline, "up.sh never started"
            time.sleep(0.05)
        began = time.monotonic()
        suite.send_signal(signal.SIGTERM)
        output, _ = suite.communicate(timeout=30)
    finally:
        suite.kill()
    assert time.monotonic() - began < 10  # not after up.sh's minute
    assert suite.returncode == -signal.SIGTERM
    # down.sh before up.sh (nothing left from an earlier run), and after it when terminated
    assert record.read_text().split() == ["down", "up", "down"]
    assert "cluster suite took" in output


def test_a_held_lock_fails_with_a_line_naming_it(tmp_path: Path) -> None:
    folder = _stand_in(tmp_path / "realk8s", up="true")
    lock = tmp_path / "lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = subprocess.run(
            [str(SCRIPT), str(folder)],
            env={**_environment(tmp_path), "REALK8S_LOCK_WAIT": "1"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1
    assert f"waiting for {lock}" in done.stdout
    assert f"FAILED, {lock} still held after 1s" in done.stdout
    assert not (folder / "record").exists()  # the control plane was left alone


def test_started_under_flock_of_the_same_lock_it_does_not_wait_for_itself(tmp_path: Path) -> None:
    folder = _stand_in(tmp_path / "realk8s", up="exit 1")  # stop right after up.sh
    lock = tmp_path / "lock"
    done = subprocess.run(
        ["flock", str(lock), str(SCRIPT), str(folder)],
        env={**_environment(tmp_path), "REALK8S_LOCK_WAIT": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "waiting for" not in done.stdout
    assert (folder / "record").read_text().split() == ["down", "up", "down"]
    assert done.returncode == 1  # up.sh failed, as the stand-in was told to
