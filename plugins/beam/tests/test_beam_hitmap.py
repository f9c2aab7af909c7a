"""Search hits -> the BEAM message ids they show, in transcripts and in notes."""

from __future__ import annotations

import json
from pathlib import Path

from reme_beam.hitmap import HitMap

TRANSCRIPT = (
    "\n".join(json.dumps({"id": i, "role": "user", "content": f"turn {i}"}) for i in (10, 11, 12))
    + "\nnot json\n"
)

NOTE = """---
name: x
---
# Session

Summary paragraph, no anchor.

- **user** 09:00 [[sessions/s1.jsonl#L1]]
  > first quoted line
  > second quoted line
- A fact ([[sessions/s1.jsonl#L2]] [[sessions/s1.jsonl#L3]])
- A fact from an unknown line ([[sessions/s1.jsonl#L9]]) and another file [[sessions/zz.jsonl#L1]]
Plain line.
  > a quote under a plain line
"""


def build(tmp_path: Path) -> HitMap:
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "s1.jsonl").write_text(TRANSCRIPT, encoding="utf-8")
    (tmp_path / "daily" / "2024-01-01").mkdir(parents=True)
    (tmp_path / "daily" / "2024-01-01" / "n.md").write_text(NOTE, encoding="utf-8")
    (tmp_path / ".reme").mkdir()
    (tmp_path / ".reme" / "x.md").write_text("[[sessions/s1.jsonl#L1]]", encoding="utf-8")
    return HitMap.build(tmp_path)


def test_transcript_lines_are_their_messages(tmp_path: Path) -> None:
    hitmap = build(tmp_path)
    assert hitmap.ids("sessions/s1.jsonl", 1, 1) == ("10",)
    assert hitmap.ids("sessions/s1.jsonl", 2, 9) == ("11", "12")  # past the end: clipped
    assert hitmap.ids("sessions/s1.jsonl", 4, 4) == ()


def test_note_anchors_and_their_quotes(tmp_path: Path) -> None:
    hitmap = build(tmp_path)
    path = "daily/2024-01-01/n.md"
    assert hitmap.ids(path, 1, 7) == ()  # frontmatter, heading, summary
    assert hitmap.ids(path, 8, 8) == ("10",)
    assert hitmap.ids(path, 10, 10) == ("10",)  # a chunk starting inside the quote
    assert hitmap.ids(path, 11, 11) == ("11", "12")
    assert hitmap.ids(path, 12, 12) == ()  # anchors to no known message
    assert hitmap.ids(path, 13, 14) == ()  # a quote under a line without anchors
    # Each message once, in the order the lines show it (the order a reader meets them).
    assert hitmap.ids(path, 8, 14) == ("10", "11", "12")
    assert ".reme/x.md" not in hitmap.lines  # derived state is not searched, not mapped


def test_hit_ids_follow_rank_order(tmp_path: Path) -> None:
    class Hit:
        def __init__(self, path: str, start: int, end: int):
            self.path, self.start_line, self.end_line = path, start, end

    hitmap = build(tmp_path)
    hits = [Hit("sessions/s1.jsonl", 3, 3), Hit("unknown.md", 1, 5), Hit("sessions/s1.jsonl", 1, 2)]
    assert hitmap.hit_ids(hits) == [("12",), (), ("10", "11")]
