"""One line per event in ``$HERMES_HOME/logs/reme.log``, written directly.

``hermes -z`` switches the logging module off for the whole run (``logging.disable``), so a line
sent through it would vanish; the provider appends to its own file as well, and a failure to
write the log is never the agent's problem.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

logger = logging.getLogger("reme_hermes")
LOG_FILE = Path("logs") / "reme.log"


class EventLog:
    def __init__(self, hermes_home: Path):
        self.path = hermes_home / LOG_FILE

    def line(self, message: str, problem: bool = False) -> None:
        message = " ".join(message.split())  # one line, whatever the error text held
        (logger.warning if problem else logger.info)("reme: %s", message)
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(f"{stamp} {'WARNING' if problem else 'INFO'} {message}\n")
        except OSError:
            pass
