"""Stopping a long-running command (``reme watch``) cleanly."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def stop_on_interrupt_or_term() -> None:
    """Make Ctrl-C and SIGTERM raise KeyboardInterrupt in the main thread, so the command stops
    as after Ctrl-C and exits 0. A shell starts a background job of a non-interactive script
    (and ``nohup`` its command) with SIGINT ignored, and the ignore is inherited: without this,
    Ctrl-C (or ``kill -INT``) would never reach it."""
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set there (a test calling the command in-process)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
