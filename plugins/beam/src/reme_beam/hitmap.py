"""Which BEAM messages a search hit shows: the bridge from chunks back to ``source_chat_ids``.

A hit is a chunk of a file with a 1-based line range. In a saved transcript
(``sessions/<id>.jsonl``) each line is one message carrying its BEAM id, so a range names its
messages exactly. In a note, messages are named by anchors (``[[sessions/<id>.jsonl#L12]]``) on
an excerpt, fact or timeline line; the quote block under such a line (``  > ...``) shows the same
messages, so a chunk that starts inside a quote still counts for them. A note line with neither
(a summary paragraph, a digest written by dream without anchors) names no message: the metric
credits only what a hit verifiably shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

ANCHOR = re.compile(r"\[\[sessions/([^\]#|]+)\.jsonl#L(\d+)(?:\|[^\]]*)?\]\]")
NOTE_SUFFIXES = (".md",)


class HitMap:
    """Per file, the message ids each line shows."""

    def __init__(self) -> None:
        self.transcripts: dict[str, dict[int, str]] = {}
        """``sessions/<id>.jsonl`` -> line -> message id."""
        self.lines: dict[str, list[tuple[str, ...]]] = {}
        """Workspace path -> ids per line (index 0 = line 1), in the order the line names them."""

    @classmethod
    def build(cls, root: Path) -> HitMap:
        """Read every transcript, then every note, of the workspace at ``root``."""
        hitmap = cls()
        sessions = root / "sessions"
        for path in sorted(sessions.glob("*.jsonl")) if sessions.is_dir() else []:
            hitmap.add_transcript(path.relative_to(root).as_posix(), path.read_text("utf-8"))
        for path in sorted(root.rglob("*.md")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith("."):
                continue
            hitmap.add_note(rel, path.read_text("utf-8"))
        return hitmap

    def add_transcript(self, rel: str, text: str) -> None:
        by_line: dict[int, str] = {}
        rows: list[tuple[str, ...]] = []
        for number, raw in enumerate(_lines(text), start=1):
            ident = _line_id(raw)
            if ident is not None:
                by_line[number] = ident
            rows.append(() if ident is None else (ident,))
        self.transcripts[rel] = by_line
        self.lines[rel] = rows

    def add_note(self, rel: str, text: str) -> None:
        rows: list[tuple[str, ...]] = []
        carried: tuple[str, ...] = ()
        for raw in _lines(text):
            found = tuple(dict.fromkeys(self._anchor_ids(raw)))
            if found:
                carried = found
                rows.append(found)
            elif raw.lstrip().startswith(">"):
                rows.append(carried)  # the quote of the anchored line above
            else:
                carried = ()
                rows.append(())
        self.lines[rel] = rows

    def ids(self, path: str, start_line: int, end_line: int) -> tuple[str, ...]:
        """Message ids shown by lines ``start_line..end_line`` (1-based, inclusive) of ``path``,
        each once, in the order the lines show them (the order a reader meets them)."""
        rows = self.lines.get(path)
        if not rows:
            return ()
        first, last = max(start_line, 1), min(end_line, len(rows))
        out: dict[str, None] = {}
        for row in rows[first - 1 : last]:
            out.update(dict.fromkeys(row))
        return tuple(out)

    def hit_ids(self, hits: Iterable[object]) -> list[tuple[str, ...]]:
        """Ids per hit, in rank order (hits have ``path``, ``start_line``, ``end_line``)."""
        return [self.ids(h.path, h.start_line, h.end_line) for h in hits]  # type: ignore[attr-defined]

    def _anchor_ids(self, line: str) -> Iterable[str]:
        for match in ANCHOR.finditer(line):
            ident = self.transcripts.get(f"sessions/{match.group(1)}.jsonl", {}).get(
                int(match.group(2))
            )
            if ident is not None:
                yield ident


def _lines(text: str) -> list[str]:
    # Numbered as the chunkers number them: only "\n" ends a line (str.splitlines would also
    # split on U+2028 and others, which JSON written with ensure_ascii=False keeps raw).
    return [line.removesuffix("\r") for line in text.removeprefix("\ufeff").split("\n")]


def _line_id(raw: str) -> str | None:
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("id") is None:
        return None
    return str(obj["id"])
