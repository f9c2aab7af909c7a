"""``onnx_encoder.weights_beside``: a built model's weights moved to a data file beside it, once,
with the same outputs (e5-onnx loads its session from the split file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reme_plugins import onnx_encoder, onnx_session
from reme_plugins.embedding_e5_onnx import E5OnnxEmbedding


def _model(path: Path) -> Path:
    """A one-product graph whose weight (64 x 32 floats) is stored inside the file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "product",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32])],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _run(path: Path) -> np.ndarray:
    x = np.linspace(-1, 1, 64, dtype=np.float32)[None, :]
    (y,) = onnx_session.open_session(path).run(["y"], {"x": x})
    return y


def test_the_weights_move_beside_the_graph_once_with_the_same_outputs(tmp_path: Path) -> None:
    path = _model(tmp_path / "model.onnx")
    whole = _run(path)
    size = path.stat().st_size
    assert onnx_encoder.weights_beside(path) == path
    data = tmp_path / "model.onnx.data"
    assert data.stat().st_size >= 64 * 32 * 4 > path.stat().st_size
    assert path.stat().st_size < size
    np.testing.assert_array_equal(_run(path), whole)
    stamps = (path.stat().st_mtime_ns, data.stat().st_mtime_ns)
    assert onnx_encoder.weights_beside(path) == path  # already split: left as it is
    assert (path.stat().st_mtime_ns, data.stat().st_mtime_ns) == stamps
    assert not list(tmp_path.glob(".split-*"))  # no temporary leftovers


def test_a_cache_it_cannot_write_keeps_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _model(tmp_path / "model.onnx")
    size = path.stat().st_size

    def refuse(*_: object) -> None:
        raise PermissionError("read-only")

    monkeypatch.setattr(onnx_encoder.os, "replace", refuse)
    assert onnx_encoder.weights_beside(path) == path
    assert path.stat().st_size == size and not (tmp_path / "model.onnx.data").exists()
    assert _run(path).shape == (1, 32)
    assert not list(tmp_path.glob(".split-*"))


def test_e5_vectors_are_the_same_from_the_split_file(tmp_path: Path) -> None:
    """The model as built (weights inside) and as e5-onnx loads it (weights beside) give
    bit-identical vectors."""
    e5 = E5OnnxEmbedding(E5OnnxEmbedding.Settings(threads=1))  # the shared model cache
    split = e5.model_path()
    assert (split.parent / (split.name + ".data")).is_file()
    import onnx

    whole = tmp_path / "whole.onnx"
    onnx.save(onnx.load(str(split)), str(whole))  # external data read back in: one file
    assert whole.stat().st_size > split.stat().st_size
    texts = ["passage: the deploy failed on friday", "wifi password of the office " * 40]
    split_vectors = e5.embed_passages(texts)
    e5.close()
    e5._runner = onnx_session.OnnxRunner(lambda: whole, 1, "whole", arena=False)
    try:
        np.testing.assert_array_equal(e5.embed_passages(texts), split_vectors)
    finally:
        e5.close()
