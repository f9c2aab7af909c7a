"""Raw ingestion, hits mapped back to sessions and turns, and the search_v2 step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reme_lme.anchors import SpanResolver
from reme_lme.data import load_items
from reme_lme.ingest import file_id, ingest_raw
from reme_lme.ranking import rank
from reme_lme.search_v2 import SearchV2Settings, SearchV2Step

from reme_core.pipelines.run import PipelineRun
from reme_core.plugins import Plugins
from reme_core.runtime import Reme

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# As the named configs: keyword search over the notes; transcripts are read, not indexed.
KEYWORD_ONLY = [
    "components.embedding=null",
    "components.file_store=null",
    "index.exclude=['.reme/**', 'sessions/**']",
]
# Where the fixture's sessions land: named by their opaque file ids, never by their upstream ids.
TRIP1 = f"sessions/{file_id('answer_trip_1')}.jsonl"
TRIP3 = f"sessions/{file_id('answer_trip_3')}.jsonl"
CHAT2 = f"sessions/{file_id('chat_2')}.jsonl"
TRIP3_NOTE = f"daily/2023-05-15/{file_id('answer_trip_3')}.md"


@pytest.fixture
def trips(tmp_path: Path, plugins: Plugins):  # type: ignore[no-untyped-def]
    item = load_items(FIXTURES / "longmemeval_s_tiny.json")[1]
    ingested = ingest_raw(tmp_path, item.sessions()[0])
    with Reme.open(tmp_path, overrides=KEYWORD_ONLY, env={}, plugins=plugins) as reme:
        reme.index()
        yield reme, ingested


def test_raw_ingestion_writes_a_transcript_and_an_anchored_note(tmp_path: Path) -> None:
    item = load_items(FIXTURES / "longmemeval_s_tiny.json")[1]
    ingested = ingest_raw(tmp_path, item.sessions()[0])
    transcript = (tmp_path / TRIP3).read_text().splitlines()
    assert len(transcript) == 4 and '"role": "assistant"' in transcript[1]
    assert all(set(json.loads(line)) == {"role", "content"} for line in transcript)  # no label
    note = (tmp_path / TRIP3_NOTE).read_text()
    assert f"[[{TRIP3}#L3]] Thanks, that helped on my trip to Japan" in note
    assert "Roll your clothes" not in note  # user turns only
    assert ingested.turn_id(TRIP3, 3) == "answer_trip_3_3"


def test_hits_rank_sessions_and_turns(tmp_path: Path) -> None:
    item = load_items(FIXTURES / "longmemeval_s_tiny.json")[1]
    ingested = ingest_raw(tmp_path, item.sessions()[0])
    note = TRIP3_NOTE
    lines = (tmp_path / note).read_text().splitlines()
    second = next(n for n, line in enumerate(lines, 1) if "#L3]]" in line)
    hits = [
        # a note chunk starting below the anchor of turn 3: stands for turn 3
        {"path": note, "start_line": second + 1, "end_line": second + 1},
        {"path": CHAT2, "start_line": 1, "end_line": 2},
        {"path": note, "start_line": 1, "end_line": len(lines)},  # turns 1 and 3, once each
        {"path": "daily/elsewhere.md", "start_line": 1, "end_line": 3},  # anchors nowhere
    ]
    sessions, turns = rank(hits, SpanResolver.for_folder(tmp_path), ingested)
    assert sessions == ["answer_trip_3", "chat_2"]
    assert turns == ["answer_trip_3_3", "chat_2_1", "chat_2_2", "answer_trip_3_1"]


def test_search_v2_groups_ranges_by_transcript_in_line_order(trips) -> None:  # type: ignore[no-untyped-def]
    reme, _ = trips
    step = SearchV2Step(SearchV2Settings(), reme.context)
    run = PipelineRun(reme=reme, name="search", llm=None)
    out = step.run(run, {"query": "trip Japan Portugal packing", "limit": 5})
    paths = [h.path for h in out["search"].hits]
    assert set(paths) <= {TRIP1, TRIP3}
    trip3 = [h for h in out["search"].hits if h.path == TRIP3]
    # user turns 1 and 3 with their replies (context_after=1): adjacent, so one range 1-4
    assert [(h.start_line, h.end_line) for h in trip3] == [(1, 4)]
    assert trip3[0].text.startswith("user: Any tips for packing light?")
    assert "assistant: Glad to hear it!" in trip3[0].text
    assert out["search"].linked == []  # link expansion off
    assert [g["path"] for g in out["groups"]] == list(dict.fromkeys(paths))


def test_search_v2_skips_what_it_returned_for_the_same_question(trips) -> None:  # type: ignore[no-untyped-def]
    reme, _ = trips
    step = SearchV2Step(SearchV2Settings(context_after=0), reme.context)
    run = PipelineRun(reme=reme, name="search", llm=None)
    first = step.run(run, {"query": "Portugal", "limit": 1, "seen_key": "q_trips"})
    assert [(h.path, h.start_line, h.end_line) for h in first["search"].hits] == [(TRIP1, 1, 1)]
    again = step.run(run, {"query": "Portugal", "limit": 1, "seen_key": "q_trips"})
    assert all(h.path != TRIP1 for h in again["search"].hits)
    assert again["skipped_lines"] == 1
    other = step.run(run, {"query": "Portugal", "limit": 1, "seen_key": "another question"})
    assert other["search"].hits[0].path == TRIP1
