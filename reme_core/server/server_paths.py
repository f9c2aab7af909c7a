"""Where the server keeps its files is an admin's business, not a read or write token's.

``status`` carries the workspace root, index and store paths, and error messages that quote
them (``[Errno 13] Permission denied: '/srv/ws/digest/x.md'``). For a caller below admin, paths
inside the workspace become workspace-relative and any other absolute path is hidden.
"""

from __future__ import annotations

import re
from typing import Any

_ABSOLUTE = re.compile(r"(?<![\w.:/])/(?:[^\s'\"<>:,;()\[\]]+)")
"""A POSIX absolute path inside a message (``[Errno 13] Permission denied: '/srv/x'``)."""

HIDDEN = "<server path>"


def hide_server_paths(value: Any, root: str) -> Any:
    """``value`` (JSON-ready data) with ``root``'s paths made relative and other absolute paths
    replaced by ``<server path>``."""
    root = root.rstrip("/\\")
    if isinstance(value, str):
        if root:
            value = value.replace(root + "/", "").replace(root, ".")
        return _ABSOLUTE.sub(HIDDEN, value)
    if isinstance(value, dict):
        return {k: hide_server_paths(v, root) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [hide_server_paths(v, root) for v in value]
    return value
