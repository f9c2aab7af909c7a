"""`reme watch` stops cleanly (exit 0) on Ctrl-C and on SIGTERM, also when started with SIGINT
ignored, as a shell starts a background job or `nohup` a command (issue 20, defect 13)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.workspace import init_workspace

READY = "watching "


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_watch_started_with_sigint_ignored_stops_with_0(tmp_path: Path, stop: int) -> None:
    root = tmp_path / "w"
    init_workspace(root)
    log = tmp_path / "watch.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from reme_core.cli import main; main()",
                "watch",
                "-w",
                str(root),
            ],
            env={**os.environ, **KEYWORD_ONLY_ENV},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_ignore_sigint,
        )
    try:
        deadline = time.monotonic() + 60
        while READY not in log.read_text(errors="replace"):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        process.send_signal(stop)
        assert process.wait(30) == 0, log.read_text()
        assert "Traceback" not in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
