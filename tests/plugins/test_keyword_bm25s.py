from __future__ import annotations

import hashlib
import itertools
import json
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import pytest
from pydantic import ValidationError

from reme_core.components import ComponentContext
from reme_core.errors import ConfigError, RemeError
from reme_core.plugins import Plugins
from reme_core.testing.keyword_index import KeywordIndexConformance, ids, make_chunks
from reme_plugins import keyword_bm25s
from reme_plugins.keyword_bm25s import Bm25sKeywordIndex, scoring, storage
from reme_plugins.keyword_bm25s import index as index_module

Opener = Callable[..., Bm25sKeywordIndex]


def context(state_dir: Path) -> ComponentContext:
    return ComponentContext(workspace=state_dir.parent, state_dir=state_dir)


class TestBm25sConformance(KeywordIndexConformance):
    @pytest.fixture
    def index(self) -> Callable[[Path], Bm25sKeywordIndex]:
        return lambda state_dir: Bm25sKeywordIndex(Bm25sKeywordIndex.Settings(), context(state_dir))


class TestBm25sConformanceSmallMerge(KeywordIndexConformance):
    """The same contract when nearly every change triggers an automatic merge."""

    @pytest.fixture
    def index(self) -> Callable[[Path], Bm25sKeywordIndex]:
        settings = Bm25sKeywordIndex.Settings(delta_merge_min=0, delta_merge_ratio=0)
        return lambda state_dir: Bm25sKeywordIndex(settings, context(state_dir))


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / ".reme"


@pytest.fixture
def open_index(state_dir: Path) -> Iterator[Opener]:
    """Open an index over ``state_dir`` with setting overrides; all are closed afterwards."""
    opened: list[Bm25sKeywordIndex] = []

    def open_(**overrides: Any) -> Bm25sKeywordIndex:
        ix = Bm25sKeywordIndex(Bm25sKeywordIndex.Settings(**overrides), context(state_dir))
        opened.append(ix)
        return ix

    yield open_
    for ix in reversed(opened):
        ix.close()


def fill(ix: Bm25sKeywordIndex, count: int, text: str = "filler words about gardening") -> None:
    for i in range(count):
        path = f"notes/n{i:03d}.md"
        ix.upsert(path, make_chunks(path, f"{text} number{i}"))


def main_snapshot(state_dir: Path) -> dict[str, str]:
    """Name and content hash of every file of the current main segment."""
    root = state_dir / "bm25s"
    name = json.loads((root / "manifest.json").read_text())["main"]
    return {
        f"{name}/{f.name}": hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted((root / name).iterdir())
    }


@pytest.fixture
def index_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the corpus size of every bm25s index build."""
    calls: list[int] = []
    original = bm25s.BM25.index

    def counting(self: bm25s.BM25, corpus: Any, *args: Any, **kwargs: Any) -> Any:
        # A corpus is token lists, or (token id lists, vocab) for the delta.
        calls.append(len(corpus[0] if isinstance(corpus, tuple) else corpus))
        return original(self, corpus, *args, **kwargs)

    monkeypatch.setattr(bm25s.BM25, "index", counting)
    # Main is built without ``BM25.index`` (the same arrays, from the counted corpus).
    main_segment = index_module._main_segment

    def counting_main(corpus: Any, **kwargs: Any) -> Any:
        if corpus.tokens:  # as bm25s was: not called for a corpus without a token
            calls.append(len(corpus))
        return main_segment(corpus, **kwargs)

    monkeypatch.setattr(index_module, "_main_segment", counting_main)
    return calls


# -- language ------------------------------------------------------------------------------


def test_cjk_query_finds_chinese_chunk(open_index: Opener) -> None:
    ix = open_index()
    ix.upsert("zh.md", make_chunks("zh.md", "我们今天讨论了机器学习模型的部署方案"))
    ix.upsert("ja.md", make_chunks("ja.md", "東京タワーに行きました"))
    ix.upsert("en.md", make_chunks("en.md", "Deploying machine learning models"))
    assert ids(ix.search("机器学习", 10)) == ["zh.md#0"]
    assert ids(ix.search("東京タワー", 10)) == ["ja.md#0"]


def test_stemming_matches_word_forms(open_index: Opener) -> None:
    ix = open_index()
    ix.upsert("a.md", make_chunks("a.md", "She runs every morning"))
    assert ids(ix.search("running", 10)) == ["a.md#0"]


def test_stemming_can_be_turned_off(open_index: Opener) -> None:
    ix = open_index(stem=False)
    ix.upsert("a.md", make_chunks("a.md", "She runs every morning"))
    assert ix.search("running", 10) == []
    assert ids(ix.search("runs", 10)) == ["a.md#0"]


def test_identifiers_are_searchable_whole_and_in_parts(open_index: Opener) -> None:
    ix = open_index()
    ix.upsert("a.md", make_chunks("a.md", "set max_retries on api.example.com for v2.1"))
    ix.upsert("b.md", make_chunks("b.md", "unrelated text"))
    for query in ("max_retries", "retries", "api.example.com", "example", "v2.1"):
        assert ids(ix.search(query, 10)) == ["a.md#0"], query


# -- the delta path ------------------------------------------------------------------------


def test_bulk_upserts_build_main_once(open_index: Opener, index_calls: list[int]) -> None:
    ix = open_index()
    fill(ix, 120)
    assert index_calls == []  # upserts alone build nothing
    ix.flush()
    assert index_calls == [120]
    assert ix.stats()["main_chunks"] == 120 and ix.stats()["delta_chunks"] == 0


def test_one_edit_does_not_rebuild_main(
    open_index: Opener, index_calls: list[int], state_dir: Path
) -> None:
    ix = open_index()
    fill(ix, 50)
    ix.flush()
    before = main_snapshot(state_dir)
    index_calls.clear()

    ix.upsert("notes/n007.md", make_chunks("notes/n007.md", "zeppelin airship"))
    assert ids(ix.search("zeppelin", 10)) == ["notes/n007.md#0"]
    assert ix.search("number7", 10) == []
    ix.flush()
    assert index_calls == [1]  # only the one-chunk delta
    assert main_snapshot(state_dir) == before
    assert ix.stats() == {
        "chunks": 50,
        "main_chunks": 50,
        "main_live": 49,
        "delta_chunks": 1,
        "tombstones": 1,
        "unflushed_paths": 0,
    }

    ix.optimize()
    ix.flush()
    assert main_snapshot(state_dir) != before
    assert ix.stats()["delta_chunks"] == 0 and ix.stats()["tombstones"] == 0
    assert ids(ix.search("zeppelin", 10)) == ["notes/n007.md#0"]


def test_delta_survives_reopen(open_index: Opener, state_dir: Path) -> None:
    ix = open_index()
    fill(ix, 20)
    ix.flush()
    ix.upsert("notes/n003.md", make_chunks("notes/n003.md", "zeppelin airship"))
    ix.delete("notes/n004.md")
    ix.flush()
    reopened = open_index()
    assert reopened.stats()["delta_chunks"] == 1
    assert reopened.stats()["tombstones"] == 2
    assert ids(reopened.search("zeppelin", 10)) == ["notes/n003.md#0"]
    assert reopened.search("number3", 10) == []
    assert reopened.search("number4", 10) == []
    assert len(reopened.search("gardening", 100)) == 18


def test_automatic_merge_when_delta_outgrows_threshold(
    open_index: Opener, index_calls: list[int]
) -> None:
    ix = open_index(delta_merge_min=3, delta_merge_ratio=0.0)
    fill(ix, 10)
    ix.flush()
    for i in range(3):
        ix.upsert(f"new/{i}.md", make_chunks(f"new/{i}.md", f"fresh note {i}"))
    ix.search("fresh", 10)
    assert ix.stats()["delta_chunks"] == 3  # at the threshold, not over it
    ix.upsert("new/3.md", make_chunks("new/3.md", "fresh note 3"))
    assert len(ix.search("fresh", 10)) == 4
    assert ix.stats()["delta_chunks"] == 0
    assert ix.stats()["main_chunks"] == 14
    assert index_calls[-1] == 14  # the merge rebuilt main from every live chunk


def test_merge_threshold_scales_with_main(open_index: Opener) -> None:
    ix = open_index(delta_merge_min=0, delta_merge_ratio=0.5)
    fill(ix, 10)
    ix.flush()
    for i in range(5):
        ix.upsert(f"new/{i}.md", make_chunks(f"new/{i}.md", "fresh"))
    ix.flush()
    assert ix.stats()["delta_chunks"] == 5  # 5 is not over half of 10
    ix.upsert("new/5.md", make_chunks("new/5.md", "fresh"))
    ix.flush()
    assert ix.stats()["delta_chunks"] == 0


def test_unchanged_reupsert_changes_nothing(open_index: Opener, index_calls: list[int]) -> None:
    ix = open_index()
    fill(ix, 5)
    ix.flush()
    index_calls.clear()
    ix.upsert("notes/n001.md", make_chunks("notes/n001.md", "filler words about gardening number1"))
    ix.search("gardening", 10)
    assert ix.stats()["delta_chunks"] == 0 and ix.stats()["tombstones"] == 0
    assert index_calls == []


def test_reverting_an_edit_revives_the_main_chunk(open_index: Opener) -> None:
    ix = open_index()
    fill(ix, 5)
    ix.flush()
    original = make_chunks("notes/n001.md", "filler words about gardening number1")
    ix.upsert("notes/n001.md", make_chunks("notes/n001.md", "changed"))
    ix.upsert("notes/n001.md", original)
    assert ix.stats()["tombstones"] == 0 and ix.stats()["delta_chunks"] == 0
    assert ids(ix.search("number1", 10)) == ["notes/n001.md#0"]


def test_updated_note_ranks_sensibly_against_main(open_index: Opener) -> None:
    ix = open_index()
    for i in range(40):
        path = f"notes/n{i:02d}.md"
        ix.upsert(path, make_chunks(path, f"weekly report {i} on the garden and database backups"))
    ix.upsert("notes/strong.md", make_chunks("notes/strong.md", "database migration plan"))
    ix.flush()
    assert ix.stats()["main_chunks"] == 41
    # A delta note about the topic beats main notes that mention it in passing...
    ix.upsert("notes/n05.md", make_chunks("notes/n05.md", "database migration rollback steps"))
    hits = ids(ix.search("database migration rollback", 5))
    assert hits[0] == "notes/n05.md#0"
    assert hits[1] == "notes/strong.md#0"
    # ...and a delta note mentioning it in passing does not beat the main note about it.
    ix.upsert("notes/n06.md", make_chunks("notes/n06.md", "garden report, one migration aside"))
    assert ids(ix.search("database migration plan", 3))[0] == "notes/strong.md#0"
    assert ix.stats()["delta_chunks"] == 2


_TOPICAL = [
    "garden",
    "database",
    "backup",
    "migration",
    "schema",
    "river",
    "falcon",
    "heron",
    "kestrel",
    "compiler",
    "parser",
    "token",
    "index",
    "search",
    "ranking",
    "memory",
    "cache",
    "latency",
    "server",
    "deploy",
    "pipeline",
    "staging",
    "cluster",
    "password",
    "recipe",
    "bread",
    "flour",
    "oven",
    "yeast",
    "budget",
    "invoice",
    "travel",
    "train",
    "ticket",
    "museum",
    "painting",
    "violin",
    "concert",
    "sonata",
    "meeting",
    "agenda",
    "roadmap",
    "sprint",
    "review",
    "design",
    "sketch",
    "prototype",
    "battery",
    "solar",
]
_QUERIES = (
    "database migration",
    "falcon heron",
    "bread oven yeast",
    "deploy pipeline staging",
    "violin sonata concert",
    "search ranking latency",
    "solar battery prototype",
    "budget invoice",
    "river travel train",
    "compiler parser token memory",
    "zeppelin airship",
)


class _Notes:
    """Random notes: made-up background words by Zipf's law, a fifth of them topical words."""

    def __init__(self, seed: int, vocabulary: int = 1500) -> None:
        self.rng = random.Random(seed)
        words: set[str] = set()
        while len(words) < vocabulary:
            syllables = self.rng.randint(2, 4)
            words.add(
                "".join(
                    self.rng.choice("bdfgklmnprstvz") + self.rng.choice("aeiou")
                    for _ in range(syllables)
                )
            )
        self.words = sorted(words)
        self.cum_weights = list(itertools.accumulate(1 / rank for rank in range(1, vocabulary + 1)))

    def note(self, i: int) -> str:
        """3 to 120 words, plus a word of its own."""
        rng = self.rng
        n = rng.choice((3, 6, 10, 15, 25, 40, 60, 90, 120))
        background = rng.choices(self.words, cum_weights=self.cum_weights, k=n)
        words = [rng.choice(_TOPICAL) if rng.random() < 0.2 else word for word in background]
        return " ".join([*words, f"unique{i}"])


def _assert_delta_scores_as_rebuilt(
    got: list[tuple[str, float]], want: list[tuple[str, float]], delta: set[str], query: str
) -> None:
    """Same matches, and every delta chunk scores exactly as after the rebuild.

    Main chunks keep the statistics main was built with until a merge, so their scores can drift
    by a few percent on a corpus this small (and with them the order around delta chunks); the
    exact guarantee is about the delta, which is what an edit puts there.
    """
    want_score = dict(want)
    assert {cid for cid, _ in got} == set(want_score), query
    for cid, score in got:
        if cid in delta:
            assert score == pytest.approx(want_score[cid], rel=1e-5), (query, cid)


@pytest.mark.parametrize("seed", range(5))
def test_delta_scores_as_a_full_rebuild_would(open_index: Opener, seed: int) -> None:
    """After incremental edits, delta chunks score as after optimize() (a full rebuild)."""
    notes = _Notes(seed)
    ix = open_index()
    for i in range(200):
        path = f"notes/n{i:03d}.md"
        ix.upsert(path, make_chunks(path, notes.note(i)))
    ix.flush()
    assert ix.stats()["main_chunks"] == 200
    edits = {
        # New notes, short and long, and edited notes (one with a word new to the corpus).
        "new/short.md": "falcon heron",
        "new/long.md": notes.note(900) + " " + notes.note(901),
        "notes/n010.md": "database migration " + notes.note(910),
        "notes/n011.md": notes.note(911),
        "notes/n012.md": "zeppelin airship",
    }
    for path, text in edits.items():
        ix.upsert(path, make_chunks(path, text))
    ix.delete("notes/n014.md")
    delta = {f"{path}#0" for path in edits}
    incremental = {query: ix.search(query, 1000) for query in _QUERIES}
    assert ix.stats()["delta_chunks"] == len(edits) and ix.stats()["tombstones"] == 4
    ix.optimize()
    assert ix.stats()["delta_chunks"] == 0 and ix.stats()["tombstones"] == 0
    for query in _QUERIES:
        _assert_delta_scores_as_rebuilt(incremental[query], ix.search(query, 1000), delta, query)


def test_allowed_ids_across_segments(open_index: Opener) -> None:
    ix = open_index()
    fill(ix, 10, text="heron")
    ix.flush()
    ix.upsert("delta.md", make_chunks("delta.md", "heron heron"))
    allowed = {"notes/n002.md#0", "delta.md#0"}
    assert sorted(ids(ix.search("heron", 10, allowed))) == ["delta.md#0", "notes/n002.md#0"]
    assert ids(ix.search("heron", 10, {"notes/n009.md#0"})) == ["notes/n009.md#0"]


# -- persistence ---------------------------------------------------------------------------


def test_state_lives_under_state_dir_bm25s(open_index: Opener, state_dir: Path) -> None:
    ix = open_index()
    fill(ix, 3)
    ix.flush()
    names = {p.name for p in (state_dir / "bm25s").iterdir()}
    assert "manifest.json" in names and "rows.sqlite3" in names
    assert not any(name.endswith(".tmp") for name in names)
    assert sum(name.startswith("main-") for name in names) == 1


def test_nothing_unflushed_is_visible_to_a_new_instance(open_index: Opener) -> None:
    ix = open_index()
    fill(ix, 3)
    ix.flush()
    ix.upsert("late.md", make_chunks("late.md", "zeppelin"))
    assert open_index().search("zeppelin", 10) == []
    ix.flush()
    assert ids(open_index().search("zeppelin", 10)) == ["late.md#0"]


def test_changed_settings_rebuild_main(open_index: Opener) -> None:
    ix = open_index()
    ix.upsert("a.md", make_chunks("a.md", "She runs every morning"))
    ix.flush()
    ix.close()
    unstemmed = open_index(stem=False)
    assert unstemmed.search("running", 10) == []
    assert ids(unstemmed.search("runs", 10)) == ["a.md#0"]


@pytest.mark.parametrize("damage", ["meta.json", "ids.txt", "data.npy"])
def test_unreadable_main_is_rebuilt_from_stored_texts(
    open_index: Opener, state_dir: Path, damage: str
) -> None:
    ix = open_index()
    fill(ix, 5)
    ix.flush()
    ix.close()
    name = json.loads((state_dir / "bm25s" / "manifest.json").read_text())["main"]
    (state_dir / "bm25s" / name / damage).write_text("{not json")
    assert len(open_index().search("gardening", 10)) == 5


def test_corpus_without_tokens(open_index: Opener) -> None:
    ix = open_index()
    ix.upsert("a.md", make_chunks("a.md", "the and of", "---"))
    ix.flush()
    assert ix.search("the", 10) == []
    assert ix.search("anything", 10) == []
    assert ix.stats()["chunks"] == 2


# -- contract details ----------------------------------------------------------------------


def test_chunk_of_another_path_is_refused(open_index: Opener) -> None:
    with pytest.raises(RemeError, match="belongs to"):
        open_index().upsert("a.md", make_chunks("b.md", "text"))


def test_unknown_setting_is_refused() -> None:
    with pytest.raises(ValidationError):
        Bm25sKeywordIndex.Settings(k3=1.0)


def test_unknown_language_is_a_config_error(state_dir: Path) -> None:
    settings = Bm25sKeywordIndex.Settings(language="klingon")
    with pytest.raises(ConfigError, match="klingon"):
        Bm25sKeywordIndex(settings, context(state_dir))


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_every_method_ranks_and_filters(open_index: Opener, method: str) -> None:
    ix = open_index(method=method)
    ix.upsert("a.md", make_chunks("a.md", "kestrel kestrel nest"))
    ix.upsert("b.md", make_chunks("b.md", "kestrel"))
    ix.upsert("c.md", make_chunks("c.md", "pigeon"))
    ix.flush()
    ix.upsert("d.md", make_chunks("d.md", "pigeon loft"))
    assert set(ids(ix.search("kestrel", 10))) == {"a.md#0", "b.md#0"}
    assert ids(ix.search("kestrel nest", 1)) == ["a.md#0"]
    assert ids(ix.search("kestrel", 10, {"b.md#0", "c.md#0"})) == ["b.md#0"]


def test_registered_under_its_name() -> None:
    plugins = Plugins()
    plugins.register(keyword_bm25s, name="keyword_bm25s")
    assert plugins.get("keyword_index", "bm25s") is Bm25sKeywordIndex


def test_concurrent_writers_and_readers(open_index: Opener) -> None:
    ix = open_index(delta_merge_min=5, delta_merge_ratio=0.0)
    fill(ix, 20)
    ix.flush()
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        try:
            for i in range(30):
                path = f"w{offset}/{i}.md"
                ix.upsert(path, make_chunks(path, f"sparrow {offset} {i}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def reader() -> None:
        try:
            for _ in range(30):
                ix.search("sparrow gardening", 5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(ix.search("sparrow", 100)) == 60


# -- scoring without bm25s, texts from the catalog, loading from marks ---------------------


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_scores_are_bm25s_scores(open_index: Opener, method: str) -> None:
    """The plugin scores from bm25s's matrix itself: the same floats as ``get_scores``."""
    notes = _Notes(7)
    ix = open_index(method=method)
    texts = {f"n/{i:03d}.md": notes.note(i) for i in range(60)}
    for path, text in texts.items():
        ix.upsert(path, make_chunks(path, text))
    ix.flush()
    ids_in_order = sorted(f"{path}#0" for path in texts)
    corpus = [ix.tokenizer(texts[cid.split("#")[0]]) for cid in ids_in_order]
    s = ix.settings
    reference = bm25s.BM25(k1=s.k1, b=s.b, method=method)
    reference.index(corpus, show_progress=False)
    for query in _QUERIES:
        tokens = ix.tokenizer(query)
        wanted = [t for t in tokens if t in reference.vocab_dict]
        if not wanted:
            assert ix.search(query, 100) == []
            continue
        scores = reference.get_scores(wanted)
        hits = ix.search(query, 100)
        assert hits, query
        for cid, score in hits:
            assert score == float(scores[ids_in_order.index(cid)]), (query, cid)


SEARCH_WITHOUT_BM25S = """
import sys
from pathlib import Path
from reme_core.components import ComponentContext
from reme_plugins.keyword_bm25s import Bm25sKeywordIndex

state = Path(sys.argv[1])
ix = Bm25sKeywordIndex(None, ComponentContext(workspace=state.parent, state_dir=state))
hits = ix.search("gardening", 10, {"notes/n001.md#0", "notes/n002.md#0"})
assert sorted(cid for cid, _ in hits) == ["notes/n001.md#0", "notes/n002.md#0"], hits
print(sorted(name for name in ("bm25s", "scipy") if name in sys.modules))
"""


def test_a_search_over_a_saved_index_imports_neither_bm25s_nor_scipy(
    open_index: Opener, state_dir: Path
) -> None:
    ix = open_index()
    fill(ix, 5)
    ix.flush()
    ix.close()
    done = subprocess.run(
        [sys.executable, "-c", SEARCH_WITHOUT_BM25S, str(state_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


class _Catalog:
    """A text source standing in for the catalog: the texts it was last given, by chunk id."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.asked: list[str] = []

    def put(self, ix: Bm25sKeywordIndex, path: str, *texts: str) -> None:
        chunks = make_chunks(path, *texts)
        self.texts = {k: v for k, v in self.texts.items() if not k.startswith(f"{path}#")}
        self.texts.update({c.id: c.text for c in chunks})
        ix.upsert(path, chunks)

    def __call__(self, ids: Any) -> dict[str, str]:
        self.asked += list(ids)
        return {cid: self.texts[cid] for cid in ids if cid in self.texts}


def _stored_texts(state_dir: Path) -> int:
    with sqlite3.connect(state_dir / "bm25s" / "rows.sqlite3") as db:
        return db.execute("SELECT count(*) FROM chunks WHERE text IS NOT NULL").fetchone()[0]


def test_with_a_text_source_texts_are_not_stored_twice(open_index: Opener, state_dir: Path) -> None:
    catalog = _Catalog()
    ix = open_index(delta_merge_min=0, delta_merge_ratio=0.5)
    ix.attach_text_source(catalog)
    for i in range(10):
        catalog.put(ix, f"n/{i}.md", f"heron number{i}", f"second chunk {i}")
    ix.flush()  # the bulk merge tokenises the texts it holds: nothing is read back
    assert catalog.asked == []
    assert _stored_texts(state_dir) == 0
    ix.close()

    reopened = open_index(delta_merge_min=0, delta_merge_ratio=0.5)
    reopened.attach_text_source(catalog)
    catalog.put(reopened, "n/3.md", "kestrel edited")
    for i in range(10):  # the delta outgrows half of main: the next flush merges
        catalog.put(reopened, f"new/{i}.md", f"kestrel fresh {i}")
    reopened.flush()
    assert reopened.stats()["delta_chunks"] == 0  # merged, from texts read back from the source
    assert "n/5.md#0" in catalog.asked
    assert _stored_texts(state_dir) == 0
    assert set(ids(reopened.search("kestrel", 20))) == {"n/3.md#0"} | {
        f"new/{i}.md#0" for i in range(10)
    }
    assert ids(reopened.search("number5", 5)) == ["n/5.md#0"]


def test_a_chunk_whose_text_the_source_lost_is_dropped_not_misindexed(
    open_index: Opener, state_dir: Path
) -> None:
    catalog = _Catalog()
    ix = open_index()
    ix.attach_text_source(catalog)
    for i in range(4):
        catalog.put(ix, f"n/{i}.md", f"heron number{i}")
    ix.flush()
    ix.close()
    catalog.texts["n/1.md#0"] = "a different text under the same id"  # the source moved on
    del catalog.texts["n/2.md#0"]  # ...or lost it
    reopened = open_index()
    reopened.attach_text_source(catalog)
    catalog.put(reopened, "n/0.md", "heron edited")
    reopened.optimize()  # rebuilds main from the texts of n/1 to n/3, read back from the source
    assert reopened.chunk_ids() == {"n/0.md#0", "n/3.md#0"}  # the drift check sees the rest
    assert set(ids(reopened.search("heron", 10))) == {"n/0.md#0", "n/3.md#0"}


def _set_marked_generation(state_dir: Path, generation: int) -> None:
    with sqlite3.connect(state_dir / "bm25s" / "rows.sqlite3") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'main_generation'", (str(generation),))


@pytest.mark.parametrize("marks", ["trusted", "disagree"])
def test_reopen_derives_delta_and_tombstones(
    open_index: Opener, state_dir: Path, marks: str
) -> None:
    """From the rows' marks when they agree with the manifest; by comparing hashes otherwise (a
    crash between marking the rows and saving main): the same state either way."""
    ix = open_index()
    fill(ix, 20)
    ix.flush()
    ix.upsert("notes/n003.md", make_chunks("notes/n003.md", "zeppelin airship"))
    ix.upsert("notes/n005.md", make_chunks("notes/n005.md", "filler words about gardening number5"))
    ix.delete("notes/n004.md")
    ix.upsert("extra.md", make_chunks("extra.md", "zeppelin", "hangar"))
    ix.flush()
    ix.close()
    if marks == "disagree":
        _set_marked_generation(state_dir, 99)
    reopened = open_index()
    assert reopened.stats() == {
        "chunks": 21,
        "main_chunks": 20,
        "main_live": 18,
        "delta_chunks": 3,
        "tombstones": 2,
        "unflushed_paths": 0,
    }
    assert set(ids(reopened.search("zeppelin", 10))) == {"notes/n003.md#0", "extra.md#0"}
    assert ids(reopened.search("number5", 10)) == ["notes/n005.md#0"]
    assert reopened.search("number4", 10) == []
    reopened.close()
    with sqlite3.connect(state_dir / "bm25s" / "rows.sqlite3") as db:
        delta = {row[0] for row in db.execute("SELECT id FROM chunks WHERE main = 0")}
    assert delta == {"notes/n003.md#0", "extra.md#0", "extra.md#1"}  # marked again if needed


def test_rows_of_a_path_never_touch_a_longer_path_with_a_hash(open_index: Opener) -> None:
    ix = open_index()
    ix.upsert("a.md", make_chunks("a.md", "heron one"))
    ix.upsert("a.md#b.md", make_chunks("a.md#b.md", "heron two"))
    ix.flush()
    ix.upsert("a.md", make_chunks("a.md", "kestrel"))
    ix.flush()
    assert ids(open_index().search("heron", 10)) == ["a.md#b.md#0"]


def test_format_2_rows_are_migrated(open_index: Opener, state_dir: Path) -> None:
    folder = state_dir / "bm25s"
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "chunks.sqlite3") as db:
        db.execute("CREATE TABLE chunks (id TEXT PRIMARY KEY, path TEXT, hash TEXT, text TEXT)")
        for i in range(3):
            text = f"heron number{i}"
            digest = hashlib.sha256(text.encode()).hexdigest()
            db.execute(
                "INSERT INTO chunks VALUES (?, ?, ?, ?)", (f"n/{i}.md#0", f"n/{i}.md", digest, text)
            )
    ix = open_index()
    assert set(ids(ix.search("heron", 10))) == {f"n/{i}.md#0" for i in range(3)}
    assert not (folder / "chunks.sqlite3").exists()
    ix.upsert("n/1.md", make_chunks("n/1.md", "heron number1"))  # unchanged: no delta
    assert ix.stats()["delta_chunks"] == 0


def test_main_postings_are_saved_compact_and_score_the_same_after_reopen(
    open_index: Opener, state_dir: Path
) -> None:
    ix = open_index()
    fill(ix, 40)
    ix.optimize()
    ix.flush()
    before = ix.search("gardening number7", 10)
    main = state_dir / "bm25s" / json.loads((state_dir / "bm25s/manifest.json").read_text())["main"]
    # Chunk positions fit 16 bits here: half the bytes of bm25s's int32 on disk.
    assert np.load(main / "indices.npy").dtype == np.uint16
    assert open_index().search("gardening number7", 10) == before


def test_positions_past_16_bits_are_saved_in_32() -> None:
    wide = storage._compact_positions(np.array([0, 70_000], dtype=np.int32), 70_001)
    assert wide.dtype == np.uint32 and wide.tolist() == [0, 70_000]
    assert storage._compact_positions(np.array([65_535]), 65_536).dtype == np.uint16


def test_a_merge_gives_back_the_pages_a_bulk_index_freed(
    open_index: Opener, state_dir: Path
) -> None:
    ix = open_index()
    ix.attach_text_source(lambda ids: {})  # rows without texts, as beside the catalog
    fill(ix, 2000)
    ix.flush()  # every row is delta, in the partial index, until the merge
    ix.optimize()
    ix.flush()
    with sqlite3.connect(state_dir / "bm25s" / "rows.sqlite3") as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    assert free <= pages // 4


def test_pruned_selection_returns_the_exhaustive_top_k(
    open_index: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(40)]
    ix = open_index()
    for i in range(400):
        text = " ".join(["common"] * rng.randint(1, 3) + rng.sample(words, 4))
        ix.upsert(f"notes/n{i:03d}.md", make_chunks(f"notes/n{i:03d}.md", text))
    ix.optimize()
    queries = ["common w1", "common w2 w3", "w4 common common", "w5 w6 w7 w8 common"]
    allowed = {f"notes/n{i:03d}.md#0" for i in range(0, 400, 3)}
    monkeypatch.setattr(scoring, "_PRUNE_ABOVE", 10**9)
    exhaustive = [(ix.search(q, k), ix.search(q, k, allowed)) for q in queries for k in (1, 5, 40)]
    monkeypatch.setattr(scoring, "_PRUNE_ABOVE", 0)
    pruned = [(ix.search(q, k), ix.search(q, k, allowed)) for q in queries for k in (1, 5, 40)]
    # The same scores; among equal scores at the cut, which chunk is kept was never defined.
    for (full, full_allowed), (got, got_allowed) in zip(exhaustive, pruned, strict=True):
        assert [s for _, s in got] == [s for _, s in full]
        assert [s for _, s in got_allowed] == [s for _, s in full_allowed]
        assert {c for c, s in got if s > full[-1][1]} == {c for c, s in full if s > full[-1][1]}
