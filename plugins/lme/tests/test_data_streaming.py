"""The streaming loader and the per-question split cache: same items as ``json.load``, one split
per dataset file, an interrupted or malformed split never trusted, and a run over the cache
scoring exactly as the in-memory items do."""

from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path
from typing import Any

import click
import pytest
import reme_lme.data
from click.testing import CliRunner
from reme_lme.cli import _as_args
from reme_lme.data import (
    INDEX_FILE,
    Item,
    default_cache_root,
    iter_raw,
    load_items,
    split_items,
)
from reme_lme.runner import CONFIG_DIR
from reme_lme.worker import Options, score_item

from reme_core.bench import RunResult, dataset_file, resolve_config

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TINY = FIXTURES / "longmemeval_s_tiny.json"


def write(path: Path, data: Any) -> Path:
    text = data if isinstance(data, str) else json.dumps(data)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def fixture_items() -> list[dict[str, Any]]:
    return json.loads(TINY.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["longmemeval_s_tiny.json", "longmemeval_oracle_tiny.json"])
def test_streaming_yields_what_json_load_reads(name: str, tmp_path: Path) -> None:
    plain = FIXTURES / name
    expected = json.loads(plain.read_text(encoding="utf-8"))
    packed = write(tmp_path / f"{name}.gz", plain.read_text(encoding="utf-8"))
    assert list(iter_raw(plain)) == expected
    assert list(iter_raw(packed)) == expected
    validated = [Item.model_validate({**raw, "answer": str(raw["answer"])}) for raw in expected]
    assert load_items(plain) == validated
    assert load_items(packed) == validated


def test_split_cache_holds_each_question_and_is_reused(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    refs = split_items(data, cache)
    digest = dataset_file(data).sha256
    folder = cache / digest[:16]
    assert [r.question_id for r in refs] == ["q_dog", "q_trips", "q_cat_abs"]
    assert [r.index for r in refs] == [0, 1, 2]
    assert all(Path(r.path).parent == folder / "items" for r in refs)
    assert [r.load() for r in refs] == load_items(data)
    index = json.loads((folder / INDEX_FILE).read_text(encoding="utf-8"))
    assert index["sha256"] == digest and index["question_ids"] == ["q_dog", "q_trips", "q_cat_abs"]
    # What travels to a worker is small and pickles.
    again = pickle.loads(pickle.dumps(refs[0]))
    assert again == refs[0] and again.load() == load_items(data)[0]

    def no_parse(*_: object, **__: object) -> None:
        raise AssertionError("the dataset was parsed again")

    monkeypatch.setattr(reme_lme.data, "_split", no_parse)
    monkeypatch.setattr(reme_lme.data, "iter_raw", no_parse)
    assert split_items(data, cache, sha256=digest) == refs
    assert split_items(data, cache) == refs  # hashing it here finds the same split


def test_an_interrupted_split_is_redone(data: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = split_items(data, cache)
    folder = Path(first[0].path).parent.parent
    # A split killed before its index was written: some question files, no index.
    (folder / INDEX_FILE).unlink()
    Path(first[1].path).unlink()
    stray = folder / "items" / "000001-q_trips.json.tmp"
    stray.write_text("{", encoding="utf-8")
    refs = split_items(data, cache)
    assert refs == first
    assert (folder / INDEX_FILE).is_file() and not stray.exists()
    assert [r.load() for r in refs] == load_items(data)


def test_a_split_cut_short_leaves_nothing_to_trust(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    real = reme_lme.data._write
    written: list[Path] = []

    def interrupted(path: Path, payload: bytes) -> None:
        if len(written) == 2:
            raise KeyboardInterrupt
        written.append(path)
        real(path, payload)

    monkeypatch.setattr(reme_lme.data, "_write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        split_items(data, cache)
    assert written and not any(p.exists() for p in written)
    monkeypatch.setattr(reme_lme.data, "_write", real)
    assert [r.question_id for r in split_items(data, cache)] == ["q_dog", "q_trips", "q_cat_abs"]


def test_a_stale_index_for_other_bytes_is_not_trusted(data: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    refs = split_items(data, cache)
    index_path = Path(refs[0].path).parent.parent / INDEX_FILE
    index = json.loads(index_path.read_text(encoding="utf-8"))
    index["sha256"] = "0" * 64
    index_path.write_text(json.dumps(index), encoding="utf-8")
    assert split_items(data, cache) == refs
    assert json.loads(index_path.read_text(encoding="utf-8"))["sha256"] == dataset_file(data).sha256


def test_a_split_of_another_format_is_redone(data: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    refs = split_items(data, cache)
    index_path = Path(refs[0].path).parent.parent / INDEX_FILE
    index = json.loads(index_path.read_text(encoding="utf-8"))
    current = index["format"]
    index["format"] = "0-oldschema"  # written by a reme-lme whose Item differed
    index_path.write_text(json.dumps(index), encoding="utf-8")
    Path(refs[0].path).write_text('{"question_id": "q_dog"}', encoding="utf-8")
    assert split_items(data, cache) == refs
    assert json.loads(index_path.read_text(encoding="utf-8"))["format"] == current
    assert refs[0].load() == load_items(data)[0]


def test_a_broken_cache_file_names_itself(data: Path, tmp_path: Path) -> None:
    ref = split_items(data, tmp_path / "cache")[0]
    Path(ref.path).write_text('{"question_id": "q_dog"', encoding="utf-8")
    with pytest.raises(ValueError, match="broken split-cache file") as caught:
        ref.load()
    assert str(caught.value).startswith(ref.path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"question_id": "q"}, "expected a JSON array of LongMemEval questions"),
        ("", "found an empty file"),
        ([1], "item 0 is int, not a question object"),
        ('[{"question_id": "q_dog"}, ', "not valid JSON after item 0"),
        ('[{"question_id": "q_dog"}] trailing', "not valid JSON after item 0"),
    ],
)
def test_malformed_files_name_the_file_and_where(
    content: Any, message: str, tmp_path: Path
) -> None:
    for name in ("bad.json", "bad.json.gz"):
        path = write(tmp_path / name, content)
        with pytest.raises(ValueError, match=message) as caught:
            list(iter_raw(path))
        assert str(path) in str(caught.value)


def test_an_item_missing_fields_names_its_index_and_question_id(tmp_path: Path) -> None:
    items = fixture_items()
    del items[1]["question"]
    path = write(tmp_path / "missing.json", items)
    with pytest.raises(ValueError) as caught:
        load_items(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: item 1 (question_id 'q_trips'): question: Field required")

    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="item 1 \\(question_id 'q_trips'\\)"):
        split_items(path, cache)
    assert not list(cache.rglob(INDEX_FILE)) and not list(cache.rglob("*.json"))


def test_a_truncated_gzip_is_an_error(tmp_path: Path) -> None:
    whole = write(tmp_path / "whole.json.gz", fixture_items()).read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"cut\.json\.gz: "):
        list(iter_raw(cut))


def test_the_cache_root_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_root() == tmp_path / "xdg" / "reme" / "lme"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_root() == tmp_path / "home" / ".cache" / "reme" / "lme"


def test_a_run_over_the_cache_scores_as_the_items_in_memory(
    cli: click.Group, data: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "data-cache"
    out = tmp_path / "run"
    args = ["bench", "lme", "run", str(data), "--config", "bm25", "--workers", "1",
            "--no-progress", "--out", str(out), "--data-cache", str(cache)]  # fmt: skip
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(list(cache.rglob(INDEX_FILE))) == 1
    saved = RunResult.read(out)
    assert saved.manifest.command == args

    # The old path: every Item in memory, scored directly.
    settings = resolve_config("bm25", config_dirs=[CONFIG_DIR]).settings
    options = Options(config=settings.model_dump(mode="json"))
    for row, item in zip(saved.items, load_items(data), strict=True):
        before = score_item(item, options)
        assert row["id"] == item.question_id
        assert row["metrics"] == before["metrics"] and row["skip"] == before["skip"]
        assert row["top_sessions"] == before["top_sessions"]
        assert row["top_turns"] == before["top_turns"]
    assert saved.overall["session_recall_any@1"] == 1.0


def test_a_malformed_file_stops_the_run_before_its_folder_is_claimed(
    cli: click.Group, tmp_path: Path
) -> None:
    items = fixture_items()
    del items[0]["haystack_sessions"]
    bad = write(tmp_path / "bad.json", items)
    out = tmp_path / "run"
    args = ["bench", "lme", "run", str(bad), "--config", "bm25", "--workers", "1",
            "--no-progress", "--out", str(out), "--data-cache", str(tmp_path / "c")]  # fmt: skip
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 1
    assert "item 0 (question_id 'q_dog'): haystack_sessions: Field required" in result.output
    assert not out.exists()


def test_compare_passes_the_data_cache_to_each_config_run() -> None:
    options = {
        "mode": "raw",
        "ks": "5",
        "memory_pipeline": "auto_memory",
        "dream": False,
        "qa": False,
        "no_progress": True,
        "limit": None,
        "workers": None,
        "cache_dir": None,
        "vector_cache": None,
        "data_cache": Path("/tmp/split"),
        "ids": (),
        "overrides": (),
    }
    args = _as_args(options)
    assert args[args.index("--data-cache") + 1] == "/tmp/split"
