"""The synthetic benchmark workspace: deterministic, well-formed, with findable planted facts."""

from __future__ import annotations

import datetime as dt
import importlib.util
import re
import statistics
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "synthetic.py"
WIKILINK = re.compile(r"\[\[([^\]|#]+)(?:#[^\]|]*)?(?:\|[^\]]*)?\]\]")
WORD = re.compile(r"[\w'-]+")


def _load() -> ModuleType:
    # benchmarks/ is not a package; register before executing so dataclasses can find the module.
    spec = importlib.util.spec_from_file_location("reme_bench_synthetic", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


synthetic = _load()


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _frontmatter(text: str) -> tuple[dict, str]:
    assert text.startswith("---\n")
    head, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("synthetic") / "ws"
    facts = synthetic.generate_workspace(root, 600, seed=7)
    return root, facts


@pytest.fixture(scope="module")
def notes(workspace: tuple[Path, list]) -> dict[str, str]:
    root, _ = workspace
    return {p.relative_to(root).as_posix(): p.read_text("utf-8") for p in root.rglob("*.md")}


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    first = synthetic.generate_workspace(tmp_path / "a", 120, seed=3)
    second = synthetic.generate_workspace(tmp_path / "b", 120, seed=3)
    assert first == second
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    synthetic.generate_workspace(tmp_path / "c", 120, seed=4)
    assert _files(tmp_path / "a") != _files(tmp_path / "c")


def test_writes_the_requested_number_of_notes_in_the_layout(notes: dict[str, str]) -> None:
    assert len(notes) == 600
    folders = {path.rsplit("/", 1)[0] for path in notes}
    assert {"digest/wiki", "digest/personal", "resource"} <= folders
    daily = [f for f in folders if f.startswith("daily/")]
    assert len(daily) > 20
    for folder in daily:
        dt.date.fromisoformat(folder.removeprefix("daily/"))


def test_frontmatter_parses_and_has_the_expected_fields(notes: dict[str, str]) -> None:
    statuses = []
    for path, text in notes.items():
        meta, _ = _frontmatter(text)
        assert isinstance(meta["name"], str) and meta["name"], path
        assert isinstance(meta["description"], str) and meta["description"], path
        assert meta["tags"] and all(isinstance(t, str) for t in meta["tags"]), path
        assert isinstance(meta["date"], dt.date), path
        if path.startswith("daily/"):
            assert path.startswith(f"daily/{meta['date'].isoformat()}/")
        statuses.append(meta["status"])
    assert set(statuses) == {"active", "archived"}
    assert 0.01 < statuses.count("archived") / len(statuses) < 0.1
    assert any("/" in t for text in notes.values() for t in _frontmatter(text)[0]["tags"])


def test_bodies_have_headed_sections_and_varied_length(notes: dict[str, str]) -> None:
    lengths = []
    for text in notes.values():
        _, body = _frontmatter(text)
        assert body.count("\n## ") >= 1
        lengths.append(len(WORD.findall(body)))
    assert 200 < statistics.median(lengths) < 1200
    assert max(lengths) > 2 * min(lengths)


def test_wikilinks_mostly_resolve_and_some_dangle(notes: dict[str, str]) -> None:
    stems = {path.rsplit("/", 1)[-1][:-3] for path in notes}
    paths = {path[:-3] for path in notes}
    resolved = dangling = 0
    for text in notes.values():
        for target in WIKILINK.findall(text):
            if target in stems or target in paths:
                resolved += 1
            else:
                dangling += 1
    assert resolved > 300
    assert 0 < dangling < resolved / 4


def test_planted_facts_appear_exactly_once_in_the_named_active_note(
    workspace: tuple[Path, list], notes: dict[str, str]
) -> None:
    _, facts = workspace
    assert len(facts) == 30  # one per 20 notes
    assert len({f.answer_path for f in facts}) == len(facts)
    for fact in facts:
        holders = [path for path, text in notes.items() if fact.answer_text in text]
        assert holders == [fact.answer_path]
        assert notes[fact.answer_path].count(fact.answer_text) == 1
        assert fact.answer and fact.answer in fact.answer_text
        meta, _ = _frontmatter(notes[fact.answer_path])
        assert meta["status"] == "active"


def test_facts_are_varied_and_queries_paraphrase_them(workspace: tuple[Path, list]) -> None:
    _, facts = workspace
    assert len({f.kind for f in facts}) >= 5
    for fact in facts:
        query_words = {w.lower() for w in WORD.findall(fact.query)}
        fact_words = {w.lower() for w in WORD.findall(fact.answer_text)}
        assert query_words & fact_words, fact.query
        assert query_words - fact_words, fact.query
        assert fact.answer not in fact.query
        assert fact.query.endswith("?")


def test_small_workspaces_still_get_the_minimum_number_of_facts(tmp_path: Path) -> None:
    facts = synthetic.generate_workspace(tmp_path / "ws", 40, seed=1)
    assert len(facts) == 10
    few = synthetic.generate_workspace(tmp_path / "tiny", 3, seed=1)
    assert 1 <= len(few) <= 3


def test_refuses_a_non_empty_folder_and_bad_counts(tmp_path: Path) -> None:
    (tmp_path / "keep.md").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        synthetic.generate_workspace(tmp_path, 10)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.md"]
    with pytest.raises(ValueError, match="at least 1"):
        synthetic.generate_workspace(tmp_path / "new", 0)


def test_cli_writes_notes_and_planted_json(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "out"
    assert synthetic.main([str(out), "--notes", "50", "--seed", "5"]) == 0
    assert len(list(out.rglob("*.md"))) == 50
    facts = synthetic.load_planted(out)
    assert facts == synthetic.generate_workspace(tmp_path / "again", 50, seed=5)
    assert "50 notes" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        synthetic.main([str(out), "--notes", "5"])
