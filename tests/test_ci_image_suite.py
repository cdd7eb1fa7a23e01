""".ci/image-suite as CI sees it: where the image cannot be built and run, it fails, naming
why, instead of passing without having run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "image-suite"


def test_without_the_base_image_tools_the_suite_fails_saying_so(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT)],
        env={
            **os.environ,
            "NODEWRIGHT_OCI": str(tmp_path / "absent"),
            "IMAGE_SUITE_LOCK": str(tmp_path / "lock"),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout.startswith("image suite: FAILED, the image was not built and run: ")
    assert str(tmp_path / "absent") in done.stdout
