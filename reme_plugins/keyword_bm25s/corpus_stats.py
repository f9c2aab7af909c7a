"""``_CorpusStatsBM25``: a bm25s index scored with the statistics of a larger corpus.

It subclasses bm25s's class, so this module imports bm25s (and scipy behind it) when it is
imported; ``build._corpus_stats_bm25()`` imports it on the first delta build, never a search.
"""

from __future__ import annotations

from typing import Any

import bm25s
import numpy as np
from bm25s.scoring import (
    _build_idf_array,
    _build_nonoccurrence_array,
    _build_scores_and_indices_for_matrix,
    _select_idf_scorer,
    _select_tfc_scorer,
)


class _CorpusStatsBM25(bm25s.BM25):  # type: ignore[misc]
    """A bm25s index scored with statistics of a larger corpus than the one it indexes.

    bm25s takes the document count, the document frequencies and the average document length
    from the corpus it indexes; the delta indexes only the chunks written since the last
    merge, so this override of ``build_index_from_ids`` (bm25s 0.3.16, numpy CSC backend)
    takes them from the live corpus instead. Index it with ``(corpus token ids, vocab)``:
    ``doc_freqs[t]`` is the live-corpus document frequency of token id ``t``.
    """

    def __init__(
        self, *, doc_freqs: np.ndarray, n_docs: int, avg_doc_len: float, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.corpus_doc_freqs = doc_freqs
        self.corpus_n_docs = n_docs
        self.corpus_avg_doc_len = avg_doc_len

    def build_index_from_ids(
        self,
        unique_token_ids: list[int],
        corpus_token_ids: list[list[int]],
        show_progress: bool = True,
        leave_progress: bool = False,
    ) -> dict[str, Any]:
        n_docs = len(corpus_token_ids)
        n_vocab = len(unique_token_ids)
        own_df = {t: 0 for t in unique_token_ids}  # sizes bm25s's score arrays
        for doc in corpus_token_ids:
            for t in set(doc):
                own_df[t] += 1
        corpus_df = {t: int(self.corpus_doc_freqs[t]) for t in unique_token_ids}
        idf_fn = _select_idf_scorer(self.idf_method)
        avg = self.corpus_avg_doc_len
        self.nonoccurrence_array = None
        if self.method in self.methods_requiring_nonoccurrence:
            self.nonoccurrence_array = _build_nonoccurrence_array(
                doc_frequencies=corpus_df,
                n_docs=self.corpus_n_docs,
                compute_idf_fn=idf_fn,
                calculate_tfc_fn=_select_tfc_scorer(self.method),
                l_d=avg,
                l_avg=avg,
                k1=self.k1,
                b=self.b,
                delta=self.delta,
                dtype=self.dtype,
            )
        idf_array = _build_idf_array(
            doc_frequencies=corpus_df,
            n_docs=self.corpus_n_docs,
            compute_idf_fn=idf_fn,
            dtype=self.dtype,
        )
        scores_flat, doc_idx, vocab_idx = _build_scores_and_indices_for_matrix(
            corpus_token_ids=corpus_token_ids,
            idf_array=idf_array,
            avg_doc_len=avg,
            doc_frequencies=own_df,
            k1=self.k1,
            b=self.b,
            delta=self.delta,
            show_progress=False,
            leave_progress=False,
            dtype=self.dtype,
            int_dtype=self.int_dtype,
            method=self.method,
            nonoccurrence_array=self.nonoccurrence_array,
        )
        data, indices, indptr = self._np_csc(
            data=scores_flat, rows=doc_idx, cols=vocab_idx, shape=(n_docs, n_vocab)
        )
        return {
            "data": data.astype(self.dtype),
            "indices": indices,
            "indptr": indptr,
            "num_docs": n_docs,
        }
