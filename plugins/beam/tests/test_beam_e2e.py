"""End to end on the tiny fixture: the runner, raw mode, keyword-only search; QA with a fake model."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import reme_beam.cli as cli
from beam_testing import KEYWORD_ONLY, TINY
from click.testing import CliRunner
from reme_beam.cli import run_benchmark

from reme_core.bench import RunResult
from reme_core.bench.vector_cache import harvest, seed
from reme_core.cli import RemeGroup, attach_plugin_commands
from reme_core.errors import ConfigError
from reme_core.plugins import Plugins

SETS = [arg for override in KEYWORD_ONLY for arg in ("--set", override)]


def test_raw_keyword_only_run_on_two_items(tmp_path: Path, beam_plugins: Plugins) -> None:
    out = tmp_path / "run"
    root = RemeGroup("reme")  # the plugin's commands nest under `bench`, as in `reme`
    attach_plugin_commands(root, beam_plugins)
    args = ["bench", "beam", "run", str(TINY), "--out", str(out), "--limit", "2", "--workers", "1"]
    args += ["--k", "10,50"]  # message budgets: recall@10msg and recall@50msg
    done = CliRunner().invoke(root, [*args, "--no-progress", *SETS], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    result = RunResult.read(out)
    assert [i["id"] for i in result.items][:2] == ["1/abstention:0", "1/event_ordering:0"]
    assert len(result.items) == 7 and result.failed == []
    assert result.usage.calls == 0  # raw mode: no model anywhere
    assert result.notes["no_evidence"] == 1 and "abstention" not in result.categories
    # The tiny corpus shows fewer than 50 messages, so every evidence message is found: the
    # hit -> message mapping covers transcripts and notes.
    assert all(i["metrics"]["recall@50msg"] == 1.0 for i in result.items if i["evidence"])
    extraction = next(i for i in result.items if i["qid"] == "information_extraction:0")
    assert set(extraction["metrics"]) == {
        f"{name}@{k}msg" for name in ("recall", "any", "shown", "hits") for k in (10, 50)
    } | {f"bm25_{name}@{k}msg" for name in ("recall", "any") for k in (10, 50)}
    # The floor ranks single messages in the same run; its means sit beside reme's.
    assert extraction["bm25_top_ids"][0] == "2" and extraction["metrics"]["bm25_recall@10msg"] == 1
    assert "bm25_recall@10msg" in result.overall
    assert extraction["metrics"]["recall@10msg"] == 1.0 and extraction["evidence_ranks"] == {"2": 1}
    # The row keeps every hit read within the largest budget: enough to recompute its figures.
    assert len(extraction["top_hits"]) == extraction["metrics"]["hits@50msg"]
    assert result.categories["knowledge_update"]["n"] == 2
    manifest = result.manifest
    assert manifest.overrides == KEYWORD_ONLY and len(manifest.datasets) == 4
    assert manifest.command == [*args, "--no-progress", *SETS]  # what `reproduce` reruns
    assert "| recall@10msg | recall@50msg |" in (out / "result.md").read_text()
    assert "### evidence recall within k messages shown" in (out / "result.md").read_text()
    conversations = json.loads((out / "conversations.json").read_text())
    assert [c["sessions"] for c in conversations] == [2, 2]
    assert conversations[0]["ingest"]["notes"][0].startswith("daily/2024-03-15/")

    # Resumable: a rerun into the same folder scores nothing again.
    def refuse(*_: object, **__: object) -> dict:
        raise AssertionError("a finished conversation was scored again")

    cli.score_conversation = refuse  # type: ignore[assignment]
    try:
        again = run_benchmark(TINY, None, out, overrides=KEYWORD_ONLY, workers=1, no_progress=True)
    finally:
        cli.score_conversation = __import__("reme_beam.worker").worker.score_conversation
    assert again.overall == result.overall


def test_qa_with_a_cached_model(tmp_path: Path, beam_plugins: Plugins) -> None:
    options = {
        "overrides": [*KEYWORD_ONLY, "components.llm.name=fake"],
        "ids": ["1"],
        "qa": True,
        "workers": 1,
        "no_progress": True,
        "llm_cache": str(tmp_path / "cache"),
    }
    first = run_benchmark(TINY, None, tmp_path / "a", **options)
    assert first.usage.calls > 0 and first.usage.cache_hits == 0
    assert first.categories["abstention"]["judge"] == 1.0  # judged, though not retrieved
    ordering = next(i for i in first.items if i["category"] == "event_ordering")
    # The fake answers the three reference items in order and says YES to every pair.
    assert ordering["metrics"]["ordering"] == 1.0 and ordering["answer"].count("\n") == 2
    assert first.manifest.config["components"]["llm"]["name"] == "cached"
    second = run_benchmark(TINY, None, tmp_path / "b", **options)
    assert second.usage.calls == 0 and second.usage.cache_hits == first.usage.calls
    assert second.overall == first.overall


def test_memory_mode_writes_notes_with_the_model(tmp_path: Path, beam_plugins: Plugins) -> None:
    overrides = [*KEYWORD_ONLY, "components.llm.name=fake"]
    result = run_benchmark(
        TINY,
        None,
        tmp_path,
        mode="memory",
        overrides=overrides,
        ids=["2"],
        workers=1,
        no_progress=True,
        no_llm_cache=True,
    )
    ingest = result.notes["conversations"][0]["ingest"]
    assert ingest["mode"] == "memory" and ingest["usage"]["calls"] == 2  # one per session
    assert result.usage.calls == 2 and result.manifest.config["components"]["llm"]["name"] == "fake"
    note = next(n for n in ingest["notes"] if n.startswith("daily/2024-01-10/"))
    assert note.endswith(".md")
    assert result.overall["recall@50msg"] == 1.0


def test_vectors_run_and_are_shared_between_runs(tmp_path: Path, beam_plugins: Plugins) -> None:
    overrides = ["components.embedding.name=hash", "components.file_store.name=local"]
    shared = tmp_path / "vectors.sqlite3"
    options = {"overrides": overrides, "ids": ["2"], "workers": 1, "no_progress": True}
    first = run_benchmark(TINY, None, tmp_path / "a", vector_cache=shared, **options)
    assert first.notes["conversations"][0]["search_steps"] == ["search"]
    assert first.overall["recall@50msg"] == 1.0
    kept = harvest(tmp_path / "nothing", shared)  # no workspace there: adds nothing
    assert kept == 0
    with sqlite3.connect(shared) as db:
        rows = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    assert rows > 0
    fresh = tmp_path / "ws"
    assert seed(fresh, shared) == rows  # a new workspace starts with every vector
    second = run_benchmark(TINY, None, tmp_path / "b", vector_cache=shared, **options)
    assert second.overall == first.overall
    assert harvest(fresh, shared) == rows  # nothing new


def test_refusals_before_any_item_runs(tmp_path: Path, beam_plugins: Plugins) -> None:
    with pytest.raises(ConfigError, match="reme-lme"):
        run_benchmark(TINY, "search_v2", tmp_path / "v2", overrides=KEYWORD_ONLY, no_progress=True)
    with pytest.raises(ConfigError, match="needs a model"):
        run_benchmark(TINY, None, tmp_path / "m", mode="memory", overrides=KEYWORD_ONLY)
    with pytest.raises(ConfigError, match="unknown benchmark config 'nope'"):
        run_benchmark(TINY, "nope", tmp_path / "n")
    assert not (tmp_path / "v2").exists() and not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("flag", "progress"), [("--no-progress", False), ("--quiet", False), (None, True)]
)
def test_no_progress_turns_the_progress_lines_off(
    flag: str | None, progress: bool, tmp_path: Path, beam_plugins: Plugins
) -> None:
    root = RemeGroup("reme")
    attach_plugin_commands(root, beam_plugins)
    args = ["bench", "beam", "run", str(TINY), "--out", str(tmp_path), "--ids", "1"]
    args += ["--workers", "1", *SETS, *([flag] if flag else [])]
    done = CliRunner().invoke(root, args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    # Off a terminal, progress is one plain line per tenth on stderr ("beam default: 1/1 (0 s)").
    assert ("beam default: 1/1" in done.stderr) is progress
    usage = CliRunner().invoke(root, ["bench", "beam", "run", "--help"]).output
    assert "--no-progress" in usage and "--quiet" not in usage  # the old name is hidden
