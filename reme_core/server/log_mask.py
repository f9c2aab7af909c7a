"""Tokens never reach a log line: uvicorn's access log would otherwise print every login URL
(``GET /?token=reme_...``), and logs end up in terminals, files and bug reports.

``TokenMask`` rewrites a record's message, arguments and traceback text before any handler
formats it: anything in the reme token format, the value of any ``...token=`` parameter, and a
``Bearer`` credential. ``install`` puts it on uvicorn's and reme's loggers and on their handlers
(a filter on a logger does not see records its child loggers propagate; one on a handler does).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
_PATTERNS = (
    # reme's own secrets: "reme_" + token_urlsafe(32); the length keeps "reme_studio_2333" out.
    (re.compile(r"(?<![A-Za-z0-9_-])reme_[A-Za-z0-9_-]{20,}"), "reme_" + MASK),
    # ?token=..., &csrf_token=..., token=... anywhere (a query string, a form body echoed).
    (re.compile(r"(?i)(\b[a-z0-9_]*token=)[^&\s\"'#;]+"), r"\g<1>" + MASK),
    (re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{16,}"), r"\g<1>" + MASK),
)
ACCESS_LOGGER = "uvicorn.access"
LOGGERS = ("uvicorn", "uvicorn.error", ACCESS_LOGGER, "reme", "reme_core")
"""Loggers whose records and handlers get the mask (besides the root logger's handlers)."""


def mask(text: str) -> str:
    """``text`` with every token in it replaced by ``***``."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class TokenMask(logging.Filter):
    """Masks tokens in a record; never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        # Arguments one by one first: uvicorn's access formatter unpacks its five arguments, so
        # they must stay five. The format string is never masked on its own ("token=%s" would
        # lose its placeholder); when a token is left in the merged message, the record is
        # given that message, masked, instead.
        if isinstance(record.args, Mapping):
            record.args = {key: _masked(value) for key, value in record.args.items()}
        elif isinstance(record.args, tuple):
            record.args = tuple(_masked(value) for value in record.args)
        try:
            message = record.getMessage()
        except Exception:  # a broken format is the handler's to report, unchanged
            message = None
        if message is not None and (record.name != ACCESS_LOGGER or not record.args):
            masked = mask(message)
            if masked != message:
                record.msg, record.args = masked, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask(record.exc_text)
        if record.stack_info:
            record.stack_info = mask(record.stack_info)
        return True


def _masked(value: Any) -> Any:
    if value is None or isinstance(value, int | float):
        return value  # keeps %d and %f working
    if isinstance(value, str):
        return mask(value)
    try:
        text = str(value)
    except Exception:  # a broken __str__ is the formatter's to report, not ours
        return value
    masked = mask(text)
    return masked if masked != text else value


_FILTER = TokenMask()


def install(names: Iterable[str] = LOGGERS) -> None:
    """Put the mask on ``names`` and their handlers, the root logger's handlers and Python's
    last-resort handler (where reme's records go when nothing is configured). Idempotent; call
    it after uvicorn configured logging, which replaces its loggers' handlers."""
    root = logging.getLogger()
    targets: list[logging.Filterer] = [root, *root.handlers]
    for name in names:
        logger = logging.getLogger(name)
        targets += [logger, *logger.handlers]
    if logging.lastResort is not None:
        targets.append(logging.lastResort)
    for target in targets:
        if not any(isinstance(f, TokenMask) for f in target.filters):
            target.addFilter(_FILTER)
