"""End to end: `reme bench lme run` on two items in raw mode, resuming, and reproducing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import click
import pytest
import reme_lme.runner
from click.testing import CliRunner, Result

from reme_core.bench import PluginPin, RunResult
from reme_core.bench import manifest as manifest_module
from reme_core.bench import participants as participants_module


def invoke(cli: click.Group, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_args(data: Path, out: Path, *more: str) -> list[str]:
    return ["bench", "lme", "run", str(data), "--config", "bm25", "--limit", "2",
            "--workers", "1", "--no-progress", "--out", str(out), *more]  # fmt: skip


def test_smoke_run_in_raw_mode(cli: click.Group, data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(cli, *run_args(data, out))
    assert result.exit_code == 0, result.output
    assert "| overall |" in result.output
    saved = RunResult.read(out)
    assert [i["id"] for i in saved.items] == ["q_dog", "q_trips"]
    dog, trips = saved.items
    assert dog["error"] is None and dog["sessions_after_question"] == 1  # late_3, kept
    # Found by its text alone (it names the breed asked for; late_3 also says Rex is a beagle):
    # the workspace names sessions by opaque file ids, so "dog" in answer_dog_1 is not indexed.
    assert dog["top_sessions"][0] == "answer_dog_1"
    assert dog["metrics"]["session_recall_any@1"] == 1.0
    # Turns are ranked over a corpus of turns: the evidence turn, its session's last, comes
    # first, ahead of the session's unrelated first turn (a session note lists both in order).
    assert dog["top_turns"][0] == "answer_dog_1_3"
    assert "answer_dog_1_1" not in dog["top_turns"][:2]
    assert dog["metrics"]["turn_recall_all@1"] == 1.0
    assert trips["metrics"]["session_recall_all@3"] == 1.0
    assert saved.categories["multi-session"]["n"] == 1
    assert set(saved.overall) >= {"session_ndcg_any@50", "turn_recall_any@30", "n"}
    assert saved.notes["turn_ranking"] == "turn corpus"
    manifest = saved.manifest
    assert manifest.config_name == "bm25" and manifest.config["components"]["embedding"] is None
    assert manifest.datasets[0].path == str(data.resolve())
    assert manifest.command == run_args(data, out)
    assert (out / "result.md").read_text().startswith("## longmemeval: bm25")


def test_a_rerun_resumes_and_a_different_setup_is_refused(
    cli: click.Group, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    assert invoke(cli, *run_args(data, out)).exit_code == 0

    def must_not_run(*_: object, **__: object) -> dict:
        raise AssertionError("a finished item ran again")

    monkeypatch.setattr(reme_lme.runner, "score_item", must_not_run)
    again = invoke(cli, *run_args(data, out))
    assert again.exit_code == 0, again.output
    other = invoke(cli, *run_args(data, out, "--set", "search.limit=3"))
    assert other.exit_code == 1
    assert "holds a run with another setup" in other.output
    assert "config search.limit: 10 -> 3" in other.output


def test_reproduce_checks_the_plugin_versions(
    cli: click.Group, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = {"reme-lme": "0.1.0"}
    real = manifest_module.plugin_pins

    def pins(plugins):  # type: ignore[no-untyped-def]
        # Registered directly, reme-lme has no distribution here: fake its installed version.
        return [*real(plugins), PluginPin(distribution="reme-lme", version=version["reme-lme"])]

    monkeypatch.setattr(manifest_module, "plugin_pins", pins)
    # Registered directly, reme-lme fires its hooks under no distribution: count it as taking
    # part, as it does when installed, so its version change is a difference, not a note.
    taking_part = participants_module.participants
    monkeypatch.setattr(
        participants_module,
        "participants",
        lambda *args, **kwargs: taking_part(*args, **kwargs) | {"reme-lme"},
    )
    out = tmp_path / "run"
    assert invoke(cli, *run_args(data, out)).exit_code == 0
    recorded = out / "result.json"

    same = invoke(cli, "bench", "reproduce", str(recorded))
    assert same.exit_code == 0, same.output
    assert "manifest matches" in same.output and "reproduced:" in same.output
    assert RunResult.read(tmp_path / "run-reproduce").overall == RunResult.read(recorded).overall

    version["reme-lme"] = "0.2.0"
    changed = invoke(cli, "bench", "reproduce", str(recorded), "--dry-run")
    assert changed.exit_code == 1
    assert "differs: plugin reme-lme: 0.1.0 -> 0.2.0" in changed.output


def test_qa_answers_and_judges_through_the_cache(
    cli: click.Group, data: Path, tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"search": "dog breed"}, {"answer": "Rex is a beagle."}, "Yes."]))
    llm = f"components.llm={{name: scripted, settings: {{path: {script}}}}}"
    args = ["--ids", "q_dog", "--qa", "--set", llm, "--cache-dir", str(tmp_path / "cache")]
    first = invoke(cli, *run_args(data, tmp_path / "a", *args))
    assert first.exit_code == 0, first.output
    (row,) = RunResult.read(tmp_path / "a").items
    assert row["answer"] == "Rex is a beagle." and row["searches"] == ["dog breed"]
    assert row["correct"] is True and row["metrics"]["qa_accuracy"] == 1.0
    assert row["usage"]["calls"] == 3 and row["usage"]["cache_hits"] == 0

    script.write_text("[]")  # nothing left to answer with: only the cache can
    second = invoke(cli, *run_args(data, tmp_path / "b", *args))
    assert second.exit_code == 0, second.output
    (again,) = RunResult.read(tmp_path / "b").items
    assert again["answer"] == row["answer"] and again["correct"] is True
    assert again["usage"]["calls"] == 0 and again["usage"]["cache_hits"] == 3


def test_memory_mode_without_a_model_scores_the_excerpt_notes(
    cli: click.Group, data: Path, tmp_path: Path
) -> None:
    args = run_args(data, tmp_path / "m", "--mode", "memory")
    args[args.index("bm25")] = "memory"  # auto_memory_lme + search_v2
    result = invoke(cli, *args)
    assert result.exit_code == 0, result.output
    dog, trips = RunResult.read(tmp_path / "m").items
    # late_3 (after the question, kept as upstream keeps it) also names Rex the beagle.
    assert dog["error"] is None and dog["metrics"]["session_recall_any@3"] == 1.0
    assert trips["metrics"]["session_recall_all@3"] == 1.0


def test_configs_lists_the_named_configs(cli: click.Group) -> None:
    result = invoke(cli, "bench", "lme", "configs")
    names = [line.split()[0] for line in result.output.splitlines()]
    assert {"bm25", "hybrid", "default", "search_v2", "hybrid_v2", "memory"} <= set(names)


def test_unknown_config_and_ids_are_errors(cli: click.Group, data: Path, tmp_path: Path) -> None:
    args = run_args(data, tmp_path / "x")
    args[args.index("bm25")] = "nope"
    result = invoke(cli, *args)
    assert result.exit_code == 2 and "unknown benchmark config 'nope'" in result.output
    result = invoke(cli, *run_args(data, tmp_path / "y", "--ids", "q_dog,q_missing"))
    assert result.exit_code == 1 and "ids not in the data: q_missing" in result.output


def test_compare_shares_one_vector_cache_between_configs(
    cli: click.Group, data: Path, tmp_path: Path
) -> None:
    vectors = [
        "--set",
        "components.embedding.name=hash",
        "--set",
        "components.file_store.name=local",
    ]
    out = tmp_path / "cmp"
    args = ["bench", "lme", "compare", str(data), "--configs", "default,hybrid_v2", "--limit", "2",
            "--workers", "1", "--no-progress", "--out", str(out), *vectors]  # fmt: skip
    result = invoke(cli, *args)
    assert result.exit_code == 0, result.output
    cache = out / "vectors.sqlite3"
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    assert rows > 0  # the first config embedded; the second found every chunk there
    default = RunResult.read(out / "default")
    assert default.items[0]["metrics"]["session_recall_any@1"] == 1.0
    assert "--vector-cache" in RunResult.read(out / "hybrid_v2").manifest.command
