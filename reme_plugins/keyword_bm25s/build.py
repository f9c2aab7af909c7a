"""Building segments with bm25s: main from every live chunk, the delta with live-corpus statistics.

bm25s (and scipy behind it) is imported on the first build, never by a search: scoring reads a
segment's arrays with numpy alone.

The delta is scored with the statistics a full rebuild would use, those of the live corpus
(main's live chunks plus the delta): document count, document frequencies (main's counted over its
live chunks only) and average chunk length (main keeps each chunk's token count and a running live
total, so nothing is re-tokenised). A freshly edited note therefore ranks where it would after
``optimize()``. Main keeps the statistics it was built with, tombstoned chunks included, until the
next merge; adjusting its scores per query would cost work proportional to its posting lists, and
the auto-merge threshold bounds how far they can drift (the tombstones, and the delta, stay under
``max(delta_merge_min, delta_merge_ratio * live main chunks)``), so scores across segments are
close, not identical, while many chunks are tombstoned. A change to main's live chunks (a deletion,
an edit) makes the delta rebuild from its cached tokens at the next refresh or search.

Main is built from a ``_CorpusIds``: each chunk's tokens are counted as they are tokenised and only
its postings are kept (token id and count in two compact arrays, the vocabulary interned once), so
no per-chunk token list outlives its chunk; ``_main_segment`` then computes, with numpy over those
arrays, exactly the arrays and vocabulary that bm25s's ``BM25.index`` of the token lists produced
(the same vocabulary order, postings, float32 scores; tests compare them), at a fraction of the
memory (bm25s kept every chunk's tokens as Python lists of strings and of ints, most of which
Python's allocator then held on to). ``release_memory`` hands freed heap back to the system.
"""

from __future__ import annotations

import logging
from array import array
from collections import Counter
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from reme_plugins import native_heap
from reme_plugins.keyword_bm25s.segments import _Main, _Segment
from reme_plugins.text_tokenize import bm25s_submodule

if TYPE_CHECKING:
    import bm25s


@cache
def _bm25s() -> Any:
    """The bm25s module, imported on first build (it imports scipy: a tenth of a second)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # its info lines ("empty query") are noise
    return bm25s


def _corpus_stats_bm25() -> type[bm25s.BM25]:
    """``_CorpusStatsBM25``, whose module is imported on first use: it subclasses bm25s's class."""
    _bm25s()  # bm25s imported and quietened before that module imports it
    from reme_plugins.keyword_bm25s.corpus_stats import _CorpusStatsBM25

    return _CorpusStatsBM25


# bm25s.BM25's defaults, which main is built with (a test compares them with bm25s's).
_DTYPE = "float32"
_INT_DTYPE = "int32"
_DELTA = 0.5  # bm25l and bm25+
_NONOCCURRENCE = ("bm25l", "bm25+")  # methods that score the tokens a chunk lacks
_SCORE_BLOCK = 1 << 16  # postings scored at a time
# (idf_method: the method's own.)


class _CorpusIds:
    """A corpus as main is built from it, added chunk by chunk: each chunk's distinct tokens (ids
    in ``vocab``, in order of first appearance in the corpus) and their counts, in arrays."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.tokens = array("I")  # each posting's token id, chunk by chunk
        self.counts = array("I")  # its count in the chunk
        self.postings = array("q")  # each chunk's number of postings (distinct tokens)
        self.lengths = array("q")  # each chunk's number of tokens

    def __len__(self) -> int:
        return len(self.lengths)

    def add(self, tokens: list[str]) -> None:
        vocab = self.vocab
        intern = vocab.setdefault
        counted = Counter([intern(token, len(vocab)) for token in tokens])
        self.tokens.extend(counted.keys())
        self.counts.extend(counted.values())
        self.postings.append(len(counted))
        self.lengths.append(len(tokens))

    def token_counts(self) -> np.ndarray:
        return (
            np.frombuffer(self.lengths, dtype=np.int64) if self.lengths else np.zeros(0, np.int64)
        )


def _main_segment(corpus: _CorpusIds, *, k1: float, b: float, method: str) -> _Segment | None:
    """Main's segment over ``corpus`` (every live chunk), with its own statistics: the arrays
    and vocabulary bm25s's ``BM25(k1, b, method).index`` builds from the chunks' token lists."""
    if not corpus.tokens:
        return None  # bm25s cannot index a corpus without a single token
    scoring = bm25s_submodule("scoring")  # bm25s's own formulas, without importing scipy
    # bm25s's vocabulary: a set updated chunk by chunk, numbered in its iteration order. A set's
    # layout depends only on the order its distinct members were first added, so one set updated
    # with the tokens in order of first appearance iterates in the same order.
    first = list(corpus.vocab)
    unique: set[str] = set()
    unique.update(first)
    vocab = {token: i for i, token in enumerate(unique)}
    del unique
    n_vocab = len(vocab)
    renumber = np.fromiter((vocab[token] for token in first), np.int32, len(first))
    del first
    lengths = corpus.token_counts()
    n_docs = len(lengths)
    avg_doc_len = lengths.mean()
    token = renumber[np.frombuffer(corpus.tokens, dtype=np.uint32)]
    del renumber
    # CSC order: by token, then by chunk (bm25s sorts the packed (token, chunk) pairs). The
    # postings are chunk by chunk and a chunk's tokens are distinct, so a stable sort by token
    # alone gives that order.
    order = np.argsort(token, kind="stable")
    token = token[order]
    doc = np.repeat(np.arange(n_docs, dtype=_INT_DTYPE), np.frombuffer(corpus.postings, np.int64))
    doc = doc[order]
    tf = np.frombuffer(corpus.counts, dtype=np.uint32)[order].astype(_DTYPE)
    del order
    doc_counts = np.bincount(token, minlength=n_vocab)
    doc_frequencies = dict(enumerate(doc_counts.tolist()))
    idf_fn = scoring._select_idf_scorer(method)
    tfc_fn = scoring._select_tfc_scorer(method)
    nonoccurrence = None
    if method in _NONOCCURRENCE:
        nonoccurrence = scoring._build_nonoccurrence_array(
            doc_frequencies=doc_frequencies,
            n_docs=n_docs,
            compute_idf_fn=idf_fn,
            calculate_tfc_fn=tfc_fn,
            l_d=avg_doc_len,
            l_avg=avg_doc_len,
            k1=k1,
            b=b,
            delta=_DELTA,
            dtype=_DTYPE,
        )
    idf = scoring._build_idf_array(
        doc_frequencies=doc_frequencies, n_docs=n_docs, compute_idf_fn=idf_fn, dtype=_DTYPE
    )
    del doc_frequencies
    # The same float operations bm25s does per chunk (a float64 length term, float32 counts and
    # idf, float32 stored), a block of postings at a time: its float64 temporaries stay small.
    data = np.empty(len(token), dtype=_DTYPE)
    for start in range(0, len(token), _SCORE_BLOCK):
        block = slice(start, start + _SCORE_BLOCK)
        tokens = token[block]
        tfc = tfc_fn(
            tf_array=tf[block], l_d=lengths[doc[block]], l_avg=avg_doc_len, k1=k1, b=b, delta=_DELTA
        )
        scores = idf[tokens] * tfc
        if nonoccurrence is not None:
            scores -= nonoccurrence[tokens]
        data[block] = scores
    del token, tf
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(doc_counts, out=indptr[1:])
    if "" not in vocab:  # bm25s's "empty token", numbered after the rest
        vocab[""] = max(vocab.values()) + 1
    return _Segment(data, doc, indptr, vocab, n_docs, nonoccurrence)


def release_memory() -> None:
    """Hand the heap that a build freed back to the system (glibc's ``malloc_trim``; elsewhere
    nothing): Python's allocator keeps freed memory otherwise, and a build frees most of its own."""
    native_heap.release_freed_memory()


def _bm25s_main_segment(
    corpus: list[list[str]], *, k1: float, b: float, method: str
) -> _Segment | None:
    """Main's segment built by bm25s itself from every chunk's token list, as before
    ``_CorpusIds``: the reference the tests compare ``_main_segment`` with."""
    if not any(corpus):
        return None
    bm25 = _bm25s().BM25(k1=k1, b=b, method=method)
    bm25.index(corpus, show_progress=False)
    return _Segment.of(bm25)


def _delta_segment(
    main: _Main,
    corpus: list[list[int]],
    vocab: dict[str, int],
    n_tokens: int,
    *,
    k1: float,
    b: float,
    method: str,
) -> _Segment | None:
    """The delta's segment, scored with the live corpus's statistics: main's live chunks plus the
    delta (``corpus`` its chunks' token ids in ``vocab``, ``n_tokens`` their token count)."""
    if not vocab:
        return None  # bm25s cannot index a corpus without a single token
    doc_freqs = main.live_doc_freqs(list(vocab))
    for doc in corpus:
        doc_freqs[list(set(doc))] += 1
    n_docs = main.live + len(corpus)
    bm25 = _corpus_stats_bm25()(
        doc_freqs=doc_freqs,
        n_docs=n_docs,
        avg_doc_len=(main.live_tokens + n_tokens) / n_docs,
        k1=k1,
        b=b,
        method=method,
    )
    bm25.index((corpus, vocab), show_progress=False)
    return _Segment.of(bm25)
