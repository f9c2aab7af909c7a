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
"""

from __future__ import annotations

import logging
from functools import cache
from typing import TYPE_CHECKING, Any

from reme_plugins.keyword_bm25s.segments import _Main, _Segment

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


def _main_segment(corpus: list[list[str]], *, k1: float, b: float, method: str) -> _Segment | None:
    """Main's segment over ``corpus`` (every live chunk's tokens), with its own statistics."""
    if not any(corpus):
        return None  # bm25s cannot index a corpus without a single token
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
