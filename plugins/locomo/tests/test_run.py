"""End to end: `reme bench locomo run|compare` keyword-only on the tiny fixtures, resuming, and
reproducing."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
import reme_locomo.runner
from click.testing import CliRunner, Result
from conftest import LOCOMO, REALTALK

from reme_core.bench import RunResult


def invoke(cli: click.Group, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_args(data: Path, out: Path, *more: str) -> list[str]:
    return ["bench", "locomo", "run", str(data), "--config", "bm25", "--k", "1,2,5",
            "--workers", "1", "--no-progress", "--out", str(out), *more]  # fmt: skip


def test_a_locomo_run_scores_turn_recall_beside_the_floor(cli: click.Group, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(cli, *run_args(LOCOMO, out))
    assert result.exit_code == 0, result.output
    assert "| overall |" in result.output
    saved = RunResult.read(out)
    rows = {i["id"]: i for i in saved.items}
    assert list(rows) == [f"conv-t1/q{n}" for n in range(1, 6)]
    dog = rows["conv-t1/q1"]
    # Keyword search stems "adopt" to match "adopted"; the floor does not stem, so it ranks only
    # by "ana" (in all her turns, the shortest first) and misses at k=1.
    assert dog["top_turns"][0] == "D1:1" and dog["metrics"]["recall@1"] == 1.0
    assert dog["metrics"]["bm25_recall@1"] == 0.0
    hobby = rows["conv-t1/q2"]
    assert hobby["evidence"] == ["D1:2", "D2:1"]
    assert hobby["metrics"]["recall@2"] == 1.0 and hobby["metrics"]["bm25_recall@2"] == 1.0
    photo = rows["conv-t1/q3"]  # found by its caption
    assert photo["top_turns"][0] == "D1:3" and photo["bm25_top_turns"][0] == "D1:3"
    assert rows["conv-t1/q5"]["metrics"] == {}  # no evidence: no figures
    assert saved.overall["n"] == 4
    assert set(saved.categories) == {"single-hop", "multi-hop", "adversarial"}
    assert set(saved.overall) == {
        "recall@1", "recall@2", "recall@5", "bm25_recall@1", "bm25_recall@2", "bm25_recall@5", "n",
    }  # fmt: skip
    assert saved.notes["no_evidence"] == 1 and saved.notes["ks"] == [1, 2, 5]
    manifest = saved.manifest
    assert manifest.config_name == "bm25" and manifest.config["components"]["embedding"] is None
    assert [d.path for d in manifest.datasets] == [str(LOCOMO.resolve())]
    assert manifest.command == run_args(LOCOMO, out)
    assert (out / "result.md").read_text().startswith("## locomo: bm25")


def test_a_realtalk_folder_runs_and_missing_evidence_is_not_counted(
    cli: click.Group, tmp_path: Path
) -> None:
    out = tmp_path / "rt"
    result = invoke(cli, *run_args(REALTALK, out))
    assert result.exit_code == 0, result.output
    saved = RunResult.read(out)
    assert saved.benchmark == "realtalk"
    rows = {i["id"]: i for i in saved.items}
    marathon = rows["Chat_9_Cleo_Dan/q2"]
    assert marathon["missing_evidence"] == ["D1:3"]
    assert marathon["metrics"]["recall@1"] == 1.0  # D2:2 is all the evidence there is
    assert rows["Chat_9_Cleo_Dan/q3"]["top_turns"][0] == "D1:4"  # a photo-only turn, by caption
    assert saved.notes["missing_evidence"] == 1


def test_a_rerun_resumes_and_a_different_setup_is_refused(
    cli: click.Group, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    assert invoke(cli, *run_args(LOCOMO, out)).exit_code == 0

    def must_not_run(*_: object, **__: object) -> dict:
        raise AssertionError("a finished conversation ran again")

    monkeypatch.setattr(reme_locomo.runner, "score_conversation", must_not_run)
    again = invoke(cli, *run_args(LOCOMO, out))
    assert again.exit_code == 0, again.output
    other = invoke(cli, *run_args(LOCOMO, out, "--set", "search.limit=3"))
    assert other.exit_code == 1
    assert "holds a run with another setup" in other.output


def test_bad_input_is_refused_and_leaves_nothing(cli: click.Group, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    result = invoke(cli, *run_args(bad, tmp_path / "out"))
    assert result.exit_code == 1 and "neither LoCoMo" in result.output
    assert not (tmp_path / "out").exists()
    unknown = invoke(cli, *run_args(LOCOMO, tmp_path / "out2", "--ids", "conv-nope"))
    assert unknown.exit_code == 1 and "conv-nope" in unknown.output
    config = invoke(cli, *run_args(LOCOMO, tmp_path / "o3", "--config", "nope"))
    assert config.exit_code != 0 and "unknown benchmark config 'nope'" in config.output
    assert "bm25, default, vector" in config.output


def test_compare_writes_the_floor_beside_each_config(cli: click.Group, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    kw = "components.embedding=null"
    args = ["bench", "locomo", "compare", str(LOCOMO), "--configs", "bm25", "--k", "1,5",
            "--workers", "1", "--no-progress", "--out", str(out), "--set", kw]  # fmt: skip
    result = invoke(cli, *args)
    assert result.exit_code == 0, result.output
    text = (out / "compare.md").read_text()
    assert "| BM25 floor |" in text and "### turn recall@1 per category" in text
    recorded = RunResult.read(out / "bm25").manifest.command
    assert recorded[:8] == ["bench", "locomo", "run", str(LOCOMO), "--config", "bm25", "--out",
                            str(out / "bm25")]  # fmt: skip
    assert recorded[-2:] == ["--set", kw] and "--vector-cache" in recorded


def test_reproduce_reruns_and_a_changed_dataset_is_named(cli: click.Group, tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_bytes(LOCOMO.read_bytes())
    out = tmp_path / "run"
    assert invoke(cli, *run_args(data, out)).exit_code == 0
    recorded = out / "result.json"
    same = invoke(cli, "bench", "reproduce", str(recorded))
    assert same.exit_code == 0, same.output
    assert "manifest matches" in same.output and "reproduced:" in same.output
    assert RunResult.read(tmp_path / "run-reproduce").overall == RunResult.read(recorded).overall
    data.write_text(data.read_text().replace("greyhound", "whippet"))
    changed = invoke(cli, "bench", "reproduce", str(recorded), "--dry-run")
    assert changed.exit_code == 1, changed.output
    assert "differs:" in changed.output and "locomo.json" in changed.output


def test_configs_lists_the_named_configs(cli: click.Group) -> None:
    result = invoke(cli, "bench", "locomo", "configs")
    assert {line.split()[0] for line in result.output.splitlines()} == {"bm25", "default", "vector"}
