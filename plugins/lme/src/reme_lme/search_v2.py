"""The ``search_v2`` step: session-aware search results.

The workspace's search runs as usual (same params and filters as ``search``) but without link
expansion, over ``candidates`` chunks. Each chunk is mapped to the transcript lines it stands for
(a transcript chunk: its lines; a note chunk: the transcript lines it anchors to, see
``anchors``). Chunks of one transcript are merged into line ranges, sorted in line order, and
returned as one group at the rank of its best chunk; ``limit`` counts groups. A chunk that maps
to no transcript is kept as it is, as a group of its own.

``seen_key`` (a param, e.g. the question id) makes the step remember the transcript lines it
returned under that key (in ``.reme/search_v2/``): a later call with the same key leaves those
lines out, so an agent searching several times for one question gets new material each time.

Adds ``search`` (a ``SearchResponse``: one hit per range, text = the transcript lines rendered
``role: content``), ``groups`` and ``skipped_lines``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from reme_core.api import ComponentSettings, SearchHit, SearchResponse
from reme_lme.anchors import Span, SpanResolver
from reme_plugins.step_search import SearchStep

STATE_FOLDER = "search_v2"


class SearchV2Settings(ComponentSettings):
    candidates: int = Field(100, ge=1, le=200)
    """Chunks searched before grouping (at least ``limit``)."""
    merge_gap: int = Field(1, ge=0)
    """Ranges of one transcript this many lines apart or closer merge (1: adjacent lines)."""
    context_after: int = Field(1, ge=0)
    """Lines after each anchored line included too (1: the reply to an anchored user turn)."""
    max_line_chars: int = Field(2000, ge=100)
    """A longer transcript line is cut in the returned text."""


@dataclass
class _Group:
    rank: int
    score: float
    transcript: str | None
    spans: list[Span] = field(default_factory=list)
    hit: SearchHit | None = None
    """The original hit, for a chunk that maps to no transcript."""
    sources: list[str] = field(default_factory=list)


class SearchV2Step(SearchStep):
    name: ClassVar[str] = "search_v2"
    Settings = SearchV2Settings
    settings: SearchV2Settings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        reme = run.reme
        limit = int(state.get("limit") or reme.settings.search.limit)
        inner = {**state, "expand": False, "limit": max(limit, self.settings.candidates)}
        response: SearchResponse = super().run(run, inner)["search"]
        resolver = SpanResolver.for_folder(reme.root)
        groups = self._group(response.hits, resolver)
        seen_path = _seen_path(reme.state_dir, state.get("seen_key"))
        seen = _load_seen(seen_path)
        skipped = 0
        hits: list[SearchHit] = []
        kept: list[dict[str, Any]] = []
        for group in groups:
            if len(kept) >= limit:
                break
            if group.hit is not None:  # maps to no transcript: passed on as it is
                hits.append(group.hit)
                kept.append({"path": group.hit.path, "score": group.score, "ranges": []})
                continue
            assert group.transcript is not None
            ranges, dropped = _unseen(
                _merge(group.spans, self.settings.merge_gap), seen.get(group.transcript, set())
            )
            skipped += dropped
            if not ranges:
                continue
            lines = _read_lines(reme.root / group.transcript)
            for start, end in ranges:
                hits.append(self._hit(group, start, end, lines))
                seen.setdefault(group.transcript, set()).update(range(start, end + 1))
            kept.append(
                {
                    "path": group.transcript,
                    "score": group.score,
                    "ranges": [list(r) for r in ranges],
                    "sources": group.sources,
                }
            )
        if seen_path is not None:
            _save_seen(seen_path, seen)
        out = response.model_copy(update={"hits": hits, "linked": []})
        return {"search": out, "groups": kept, "skipped_lines": skipped}

    def _group(self, hits: Iterable[SearchHit], resolver: SpanResolver) -> list[_Group]:
        by_transcript: dict[str, _Group] = {}
        groups: list[_Group] = []
        for rank, hit in enumerate(hits):
            spans = resolver.spans(hit.path, hit.start_line, hit.end_line)
            if not spans:
                groups.append(_Group(rank, hit.score, None, hit=hit))
                continue
            for span in spans:
                if span.transcript != hit.path:  # an anchor: add the reply after it
                    span = Span(span.transcript, span.start, span.end + self.settings.context_after)
                group = by_transcript.get(span.transcript)
                if group is None:
                    group = by_transcript[span.transcript] = _Group(
                        rank, hit.score, span.transcript
                    )
                    groups.append(group)
                group.spans.append(span)
                if hit.path not in group.sources:
                    group.sources.append(hit.path)
        return groups

    def _hit(self, group: _Group, start: int, end: int, lines: list[str]) -> SearchHit:
        end = min(end, max(len(lines), start))
        text = "\n".join(
            _render(line, self.settings.max_line_chars) for line in lines[start - 1 : end]
        )
        return SearchHit(
            chunk_id=f"{group.transcript}#L{start}-L{end}",
            path=group.transcript or "",
            start_line=start,
            end_line=end,
            score=group.score,
            text=text,
            heading=f"lines {start}-{end}",
        )


def _merge(spans: list[Span], gap: int) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for span in sorted(spans):
        if ranges and span.start <= ranges[-1][1] + gap:
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], span.end))
        else:
            ranges.append((span.start, span.end))
    return ranges


def _unseen(ranges: list[tuple[int, int]], seen: set[int]) -> tuple[list[tuple[int, int]], int]:
    """The parts of ``ranges`` not in ``seen``, and how many lines were left out."""
    out: list[tuple[int, int]] = []
    dropped = 0
    for start, end in ranges:
        run_start = None
        for line in range(start, end + 2):
            fresh = line <= end and line not in seen
            if line <= end and not fresh:
                dropped += 1
            if fresh and run_start is None:
                run_start = line
            elif not fresh and run_start is not None:
                out.append((run_start, line - 1))
                run_start = None
    return out, dropped


def _render(raw: str, limit: int) -> str:
    try:
        obj = json.loads(raw)
    except ValueError:
        return raw[:limit]
    if not isinstance(obj, dict):
        return raw[:limit]
    text = f"{obj.get('role', '')}: {obj.get('content', '')}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _seen_path(state_dir: Path, key: Any) -> Path | None:
    if key is None or key == "":
        return None
    digest = hashlib.sha256(str(key).encode("utf-8")).hexdigest()[:32]
    return state_dir / STATE_FOLDER / f"{digest}.json"


def _load_seen(path: Path | None) -> dict[str, set[int]]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): {int(n) for n in v} for k, v in data.items() if isinstance(v, list)}


def _save_seen(path: Path, seen: dict[str, set[int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({k: sorted(v) for k, v in seen.items()}), encoding="utf-8")
    tmp.replace(path)
