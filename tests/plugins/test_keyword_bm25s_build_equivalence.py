"""Main built from the counted corpus (``_CorpusIds``, numpy) is exactly what bm25s built from every
chunk's token list (issue 21's leaner keyword build): the same vocabulary in the same order, the
same postings and float32 scores, byte for byte, for every bm25s method; the saved main files of
an index are byte-identical to those of the same index built the old way, and its searches return
the same chunks with the same scores."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reme_core.components import ComponentContext
from reme_core.testing.keyword_index import make_chunks
from reme_plugins.keyword_bm25s import Bm25sKeywordIndex, build
from reme_plugins.keyword_bm25s import index as index_module
from reme_plugins.text_tokenize import Tokenizer

METHODS = ["lucene", "robertson", "atire", "bm25l", "bm25+"]
WORDS = [
    *[
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "kappa",
        "lambda",
        "sigma",
        "omega",
    ],
    *[
        "deploy",
        "budget",
        "vault",
        "meeting",
        "wifi",
        "password",
        "allergy",
        "kubernetes",
        "api.example.com",
    ],
    *[
        "max_retries",
        "v2.1",
        "2024-05-01",
        "on-call",
        "running",
        "runs",
        "ran",
        "東京",
        "会議",
        "서울",
        "データ",
    ],
]


def _random_texts(rnd: random.Random, count: int) -> list[str]:
    vocabulary = WORDS + [f"w{i}" for i in range(400)] + [f"term{i}x" for i in range(300)]
    texts = []
    for _ in range(count):
        n = rnd.choice([0, 1, 3, 20, 80, 250])
        texts.append(" ".join(rnd.choice(vocabulary) for _ in range(n)))
    return texts


def _same(old: build._Segment | None, new: build._Segment | None) -> None:
    assert (old is None) == (new is None)
    if old is None or new is None:
        return
    assert list(new.vocab.items()) == list(old.vocab.items())  # same ids, same order
    assert new.n_docs == old.n_docs
    for name in ("data", "indices", "indptr", "nonoccurrence"):
        a, b = getattr(old, name), getattr(new, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert a.dtype == b.dtype and a.shape == b.shape, name
            assert a.tobytes() == b.tobytes(), name


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counted_corpus_builds_what_bm25s_built(
    method: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rnd = random.Random(seed)
    monkeypatch.setattr(build, "_SCORE_BLOCK", [7, 1000, 1 << 16][seed])  # scored in blocks
    tokenizer = Tokenizer()
    corpus = [tokenizer(text) for text in _random_texts(rnd, rnd.choice([1, 7, 300]))]
    counted = build._CorpusIds()
    for tokens in corpus:
        counted.add(tokens)
    assert counted.token_counts().tolist() == [len(t) for t in corpus]
    k1, b = rnd.choice([(1.5, 0.4), (1.2, 0.75), (0.9, 0.0)])
    old = build._bm25s_main_segment(corpus, k1=k1, b=b, method=method)
    _same(old, build._main_segment(counted, k1=k1, b=b, method=method))


def test_a_corpus_without_tokens_has_no_segment() -> None:
    counted = build._CorpusIds()
    for _ in range(3):
        counted.add([])
    assert build._main_segment(counted, k1=1.5, b=0.4, method="lucene") is None
    assert build._bm25s_main_segment([[], [], []], k1=1.5, b=0.4, method="lucene") is None


def test_release_memory_runs() -> None:
    build.release_memory()  # a no-op where there is no malloc_trim; must not raise


class _RecordingCorpus(build._CorpusIds):
    """The counted corpus that also keeps every chunk's token list, for the old build."""

    def __init__(self) -> None:
        super().__init__()
        self.lists: list[list[str]] = []

    def add(self, tokens: list[str]) -> None:
        super().add(tokens)
        self.lists.append(list(tokens))


def _build_index(state_dir: Path, texts: list[str], method: str) -> Bm25sKeywordIndex:
    ix = Bm25sKeywordIndex(
        Bm25sKeywordIndex.Settings(method=method),
        ComponentContext(workspace=state_dir.parent, state_dir=state_dir),
    )
    for i in range(0, len(texts), 3):
        path = f"notes/n{i:04d}.md"
        ix.upsert(path, make_chunks(path, *texts[i : i + 3]))
    ix.flush()
    return ix


def _main_files(state_dir: Path) -> dict[str, bytes]:
    (folder,) = [p for p in (state_dir / "bm25s").iterdir() if p.name.startswith("main-")]
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("method", ["lucene", "bm25l"])
def test_saved_index_and_searches_match_the_old_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    rnd = random.Random(7)
    texts = _random_texts(rnd, 600)
    new = _build_index(tmp_path / "new" / ".reme", texts, method)

    def old_main_segment(corpus: Any, **kwargs: Any) -> Any:
        return build._bm25s_main_segment(corpus.lists, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(index_module, "_CorpusIds", _RecordingCorpus)
        patch.setattr(index_module, "_main_segment", old_main_segment)
        old = _build_index(tmp_path / "old" / ".reme", texts, method)
    try:
        old_files = _main_files(tmp_path / "old" / ".reme")
        new_files = _main_files(tmp_path / "new" / ".reme")
        assert set(new_files) >= {"data.npy", "indices.npy", "indptr.npy", "vocab.json"}
        assert new_files == old_files
        queries = [" ".join(rnd.sample(WORDS, rnd.randint(1, 4))) for _ in range(60)]
        queries += [f"w{rnd.randrange(400)} term{rnd.randrange(300)}x" for _ in range(40)]
        for query in queries:
            assert new.search(query, 10) == old.search(query, 10), query
        assert any(new.search(query, 10) for query in queries)
        assert np.isfinite([s for q in queries for _, s in new.search(q, 10)]).all()
    finally:
        new.close()
        old.close()


def test_main_is_built_with_bm25s_defaults() -> None:
    import bm25s

    bm25 = bm25s.BM25(method="bm25l")
    assert (bm25.dtype, bm25.int_dtype, bm25.delta) == (
        build._DTYPE,
        build._INT_DTYPE,
        build._DELTA,
    )
    assert tuple(bm25.methods_requiring_nonoccurrence) == build._NONOCCURRENCE
    assert bm25.idf_method == "bm25l"


def test_building_main_does_not_import_bm25s(tmp_path: Path) -> None:
    """bm25s's ``__init__`` imports scipy (~15 MB resident): a first index does not need it."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from reme_core.components import ComponentContext\n"
        "from reme_core.testing.keyword_index import make_chunks\n"
        "from reme_plugins.keyword_bm25s import Bm25sKeywordIndex\n"
        f"state = Path({str(tmp_path / '.reme')!r})\n"
        "ix = Bm25sKeywordIndex(None, ComponentContext(workspace=state.parent, state_dir=state))\n"
        "ix.upsert('a.md', make_chunks('a.md', 'the deploy failed on friday', 'vault keys'))\n"
        "ix.flush()\n"
        "assert ix.stats()['main_chunks'] == 2, ix.stats()\n"
        "assert [c for c, _ in ix.search('deploy', 5)] == ['a.md#0']\n"
        "ix.close()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('bm25s', 'scipy')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout
