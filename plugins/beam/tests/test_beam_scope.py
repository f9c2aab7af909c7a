"""Every named config indexes each BEAM message once: the raw notes, not the transcripts too."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

import pytest
from beam_testing import TINY
from reme_beam.cli import CONFIG_DIR, config_dirs
from reme_beam.data import load_conversation
from reme_beam.hitmap import HitMap
from reme_beam.ingest import ingest
from reme_beam.sessions import build_sessions

from reme_core.bench import resolve_config
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.settings import Settings
from reme_core.workspace import init_workspace

NAMED = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))


def open_workspace(root: Path, config: str, plugins: Plugins) -> Reme:
    settings = resolve_config(config, config_dirs=config_dirs()).settings
    # The index scope is the config's (index.exclude, chunkers); vectors and the search step play
    # no part in it, so they are left out here (neither the bundled model nor reme-lme is
    # needed to check what gets indexed).
    components = settings.components.model_copy(update={"embedding": None, "file_store": None})
    init_workspace(root)
    update = {"workspace": root, "components": components, "pipelines": Settings().pipelines}
    return Reme(settings.model_copy(update=update), plugins)


def test_the_named_configs_are_the_ones_checked() -> None:
    assert {"bm25", "bm25_v2", "hybrid", "default", "search_v2"} <= set(NAMED)


@pytest.mark.parametrize("config", NAMED)
def test_no_named_config_indexes_the_transcripts(
    config: str, tmp_path: Path, beam_plugins: Plugins
) -> None:
    reme = open_workspace(tmp_path, config, beam_plugins)
    try:
        assert not reme.indexer.in_scope("sessions/beam-b001.jsonl")
        assert reme.indexer.in_scope("daily/2024-03-15/session.md")
    finally:
        reme.close()


def test_bm25_indexes_every_message_once_and_whole(tmp_path: Path, beam_plugins: Plugins) -> None:
    conversation = load_conversation(TINY / "1", item_id="1")
    sessions = build_sessions(conversation, "batch")
    # A message longer than a chunk (and than auto_memory's default 600 quoted characters).
    last = sessions[0].messages[-1]
    long = " ".join(f"step{i} of the migration plan" for i in range(120)) + " zebracrossing"
    stamp = dt.datetime.fromisoformat(last["timestamp"]) + dt.timedelta(seconds=1)
    sessions[0].messages.append(
        {"id": "900", "role": "assistant", "content": long, "timestamp": stamp.isoformat()}
    )
    reme = open_workspace(tmp_path, "bm25", beam_plugins)
    try:
        ingest(reme, sessions, "raw")
        chunks = reme.catalog.chunks(sorted(reme.catalog.all_chunk_ids()))
    finally:
        reme.close()
    hitmap = HitMap.build(tmp_path)
    files_showing: dict[str, set[str]] = defaultdict(set)
    for chunk in chunks.values():
        assert not chunk.path.startswith("sessions/")
        for ident in hitmap.ids(chunk.path, chunk.start_line, chunk.end_line):
            files_showing[ident].add(chunk.path)
    messages = [m for s in sessions for m in s.messages]
    assert len(messages) > 4
    # Every message is indexed, in exactly one file ...
    assert {str(m["id"]) for m in messages} == set(files_showing)
    assert all(len(paths) == 1 for paths in files_showing.values())
    # ... with all of its words (raw notes quote turns whole), so nothing is lost by leaving the
    # transcripts out.
    indexed = "\n".join(c.text for c in chunks.values())
    assert len(long) > 3000 and "zebracrossing" in indexed
    assert sum("900" in hitmap.ids(c.path, c.start_line, c.end_line) for c in chunks.values()) > 1
