"""The turn a session image came from: the text said with it, and a link back to that turn.

auto_memory keeps an image pasted into a Claude Code or Codex session as
``resource/sessions/<session_id>/<turn>-<n>.<ext>`` and names it in the saved turn
(``[image: [[resource/...]]]`` in ``sessions/<session_id>.jsonl``). Finding that line gives the
image's note the words around it (what a note without a vision model is indexed by, besides the
file name and EXIF) and a link to the turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

_SESSION_IMAGE = re.compile(r"resource/sessions/([A-Za-z0-9][A-Za-z0-9_.\-]{0,127})/[^/]+")
_MARKERS = re.compile(r"\[image(?: omitted)?: [^\n]*\]")
MAX_CONTEXT_CHARS = 1500


@dataclass(frozen=True)
class TurnContext:
    link: str
    """``[[sessions/<id>.jsonl#L<n>]]``."""
    role: str
    text: str
    """What the turn said besides its images (may be empty)."""


def turn_context(root: Path, rel: str) -> TurnContext | None:
    """The saved turn naming image ``rel``, or None (not a session image, transcript gone)."""
    match = _SESSION_IMAGE.fullmatch(rel)
    if match is None or ".." in match.group(1):
        return None
    source = f"sessions/{match.group(1)}.jsonl"
    transcript = root / source
    if not transcript.is_file():
        return None
    needle = json.dumps(f"[[{rel}]]")[1:-1]  # as it appears inside the line's JSON string
    with open(transcript, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if needle not in line:
                continue
            try:
                turn = json.loads(line)
            except ValueError:
                continue
            if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
                continue
            text = _MARKERS.sub("", turn["content"]).strip()[:MAX_CONTEXT_CHARS]
            return TurnContext(f"[[{source}#L{number}]]", str(turn.get("role") or ""), text)
    return None
