"""Building e5-onnx's tokenizer table with C loops gives the table the per-piece loop gave."""

from __future__ import annotations

import numpy as np

from reme_plugins import e5_tokenizer
from reme_plugins.e5_packed import read_packed
from reme_plugins.embedding_e5_onnx import packed_file


def tables(pieces: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [p.encode("utf-8") for p in pieces]
    offsets = np.concatenate([[0], np.cumsum([len(e) for e in encoded])]).astype(np.uint32)
    return np.frombuffer(b"".join(encoded), np.uint8), offsets


def test_split_gives_the_pieces_back_even_when_one_holds_the_separator() -> None:
    for pieces in (["a", "bc", "", "é", "预算"], ["a\x00b", "", "c", "\x01"]):
        data, offsets = tables(pieces)
        assert e5_tokenizer._split(data, offsets) == pieces


def test_an_inner_metaspace_is_found() -> None:
    assert not e5_tokenizer._inner_metaspace(*tables(["\u2581ab", "cd", "\u2581"]))
    assert e5_tokenizer._inner_metaspace(*tables(["\u2581ab", "c\u2581d"]))
    assert e5_tokenizer._inner_metaspace(*tables(["\u2581\u2581"]))


def test_the_table_is_the_per_piece_one() -> None:
    packed = read_packed(packed_file("original"))
    tokenizer = e5_tokenizer.E5Tokenizer(packed)
    offsets, _, blob = packed.vocabulary_tables()
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]
    hashes = np.array([hash(p) for p in pieces], np.int64)
    order = np.argsort(hashes, kind="stable")
    assert np.array_equal(tokenizer._hashes, hashes[order])
    assert np.array_equal(tokenizer._ids, order.astype(np.int32))
    assert tokenizer._longest == max(map(len, pieces))
