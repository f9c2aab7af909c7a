"""A BERT-style text encoder written as an ONNX graph, run on onnxruntime: the machinery behind
the ``minilm-onnx`` and ``e5-onnx`` embeddings.

Neither model is downloaded or exported with PyTorch: each embedding reads weights that ship in an
installed package, ``build_model`` writes the encoder with the ``onnx`` helper API, and
``quantize_model`` makes its weight products int8 with onnxruntime's dynamic quantization. The
built file is cached (``built_model``) under ``$XDG_CACHE_HOME/reme/models/`` (else
``~/.cache/reme/models/``), built once under a file lock, written to a temporary name and renamed
into place. The onnxruntime session that runs it is ``onnx_session``'s.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reme_core.api import EmbeddingError


@dataclass(frozen=True)
class BertConfig:
    """What ``build_model`` needs to know of a BERT checkpoint (``config.json``'s fields)."""

    layers: int = 6
    hidden: int = 384
    heads: int = 12
    intermediate: int = 1536
    eps: float = 1e-12
    max_positions: int = 512

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BertConfig:
        if data.get("hidden_act", "gelu") != "gelu":
            raise EmbeddingError(f"unsupported activation {data['hidden_act']!r} (only gelu)")
        return cls(
            layers=int(data["num_hidden_layers"]),
            hidden=int(data["hidden_size"]),
            heads=int(data["num_attention_heads"]),
            intermediate=int(data["intermediate_size"]),
            eps=float(data["layer_norm_eps"]),
            max_positions=int(data["max_position_embeddings"]),
        )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def installed_file(distribution: str, relative: str, hint: str) -> Path:
    """A file an installed distribution ships; an ``EmbeddingError`` says how to install it."""
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        raise EmbeddingError(
            f"the weights come from the {distribution} package, which is not installed: {hint}"
        ) from None
    path = Path(str(dist.locate_file(relative)))
    if not path.is_file():
        raise EmbeddingError(f"{distribution} is installed without its weights ({path} is missing)")
    return path


def recorded_sha256(distribution: str, relative: str) -> str | None:
    """A file's sha256 as pip recorded it at install time (no need to read the whole file)."""
    import base64
    import contextlib
    import importlib.metadata

    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        for file in importlib.metadata.distribution(distribution).files or ():
            if str(file) == relative and file.hash and file.hash.mode == "sha256":
                return base64.urlsafe_b64decode(file.hash.value + "==").hex()
    return None


def cache_dir_setting(value: str | None) -> Path | None:
    """An embedding's ``cache_dir`` setting as a folder (``~`` expanded); None: the default."""
    return Path(value).expanduser() if value else None


def cache_root(cache_dir: Path | None = None) -> Path:
    if cache_dir is not None:
        return cache_dir
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reme" / "models"


def built_model(
    folder: Path, build: Callable[[Path], None], quantize: bool, config: BertConfig
) -> Path:
    """``folder``'s model file, made first by ``build(path)`` (the float32 graph) and quantized
    when ``quantize``; once, whatever the number of processes asking."""
    from filelock import FileLock

    target = folder / ("model-int8.onnx" if quantize else "model.onnx")
    if target.is_file():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder / ".lock")):
            if target.is_file():  # another process built it while this one waited
                return target
            with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
                made = Path(tmp) / "model.onnx"
                build(made)
                if quantize:
                    quantized = Path(tmp) / "model-int8.onnx"
                    quantize_model(made, quantized, config)
                    made = quantized
                os.replace(made, target)
    except OSError as exc:  # a read-only or full home: vectors degrade, keyword search serves
        raise EmbeddingError(
            f"cannot build the ONNX model under {folder}: {exc.strerror or exc}; set "
            "components.embedding.settings.cache_dir to a writable folder"
        ) from exc
    return target


def weights_beside(path: Path) -> Path:
    """``path`` (a built model file) with its weights moved out to ``<name>.data`` beside it
    (ONNX external data), once, whatever the number of processes asking; returns ``path``.

    The same graph and the same weights, so the same vectors (tested); only the loading differs:
    from one file onnxruntime parses the whole protobuf, weights included, and copies each
    weight out of it before freeing it, so a session's load briefly holds the weights twice;
    with the weights beside it, it reads each one from the data file. Measured (e5-onnx, a fresh
    process, onnxruntime 1.32): the load's peak 48 -> 34 MB above the library, the session
    after it unchanged (34-35 MB). A graph already split is left as it is (its size is below
    its data's); one that cannot be split (a read-only cache) is used whole."""
    data = path.with_name(path.name + ".data")
    if _split(path, data):
        return path
    from filelock import FileLock

    try:
        with FileLock(str(path.parent / ".lock")):
            if _split(path, data):  # another process split it while this one waited
                return path
            import onnx

            model = onnx.load(str(path))
            with tempfile.TemporaryDirectory(dir=path.parent, prefix=".split-") as tmp:
                graph = Path(tmp) / path.name
                onnx.save_model(
                    model,
                    str(graph),
                    save_as_external_data=True,
                    all_tensors_to_one_file=True,
                    location=data.name,
                    size_threshold=1024,
                )
                del model
                # The data first: a graph that names it never appears without it (a process
                # holding the whole file open reads on from it).
                os.replace(Path(tmp) / data.name, data)
                os.replace(graph, path)
    except OSError:  # the whole file still loads: only the load's peak is higher
        return path
    return path


def _split(path: Path, data: Path) -> bool:
    try:
        return path.stat().st_size < data.stat().st_size
    except OSError:
        return False


def save_model(model: Any, path: Path) -> None:
    import onnx

    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def quantize_model(source: Path, target: Path, config: BertConfig) -> None:
    """Dynamic int8 quantization of the weight products (not of attention's two products)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    quiet = _DropQuantizerAdvice()
    root.addFilter(quiet)  # it advises "pre-processing" on the root logger at every call
    try:
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=_attention_products(config),
        )
    finally:
        root.removeFilter(quiet)


class _DropQuantizerAdvice:
    def filter(self, record: Any) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _attention_products(config: BertConfig) -> list[str]:
    return [f"l{i}_{name}" for i in range(config.layers) for name in ("scores", "context")]


def build_model(
    weights: dict[str, np.ndarray],
    config: BertConfig,
    name: str = "encoder",
    word_input: bool = False,
    padded: bool = True,
) -> Any:
    """The BERT encoder with mean pooling and L2 normalisation, as an ONNX model.

    Inputs ``input_ids`` and ``attention_mask`` (int64, ``[batch, tokens]``); output
    ``sentence_embedding`` (float32, ``[batch, hidden]``). Token types are all zero, so type 0's
    embedding is folded into the position table. With ``word_input`` the caller looks the word
    vectors up itself and passes them as ``words`` (float32, ``[batch, tokens, hidden]``) instead
    of ``input_ids``: a 250,000-word table would be most of the file otherwise. Without
    ``padded`` there is no ``attention_mask``: every row is read whole (for a caller that runs one
    text per run), which saves the mask's addition to every attention score.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits: list[Any] = []
    hidden, heads = config.hidden, config.heads
    head_dim = hidden // heads

    def const(name: str, value: np.ndarray | list[Any] | float) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(name: str) -> str:
        if name not in weights:
            raise EmbeddingError(f"the encoder weights lack {name}")
        return const(name, np.ascontiguousarray(weights[name], dtype=np.float32))

    def node(op: str, inputs: list[str], output: str, name: str | None = None, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=name or output, **attrs))
        return output

    def linear(x: str, prefix: str, out: str) -> str:
        product = node("MatMul", [x, weight(prefix + ".weight")], out + "_mm")
        return node("Add", [product, weight(prefix + ".bias")], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        return node(
            "LayerNormalization",
            [x, weight(prefix + ".weight"), weight(prefix + ".bias")],
            out,
            axis=-1,
            epsilon=config.eps,
        )

    positions = weights["embeddings.position_embeddings.weight"][: config.max_positions]
    type0 = weights["embeddings.token_type_embeddings.weight"][0]
    const("pos_type", (positions + type0).astype(np.float32))
    const("zero", np.array([0], dtype=np.int64))
    const("one_axis", np.array([1], dtype=np.int64))
    const("heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    const("hidden_shape", np.array([0, 0, hidden], dtype=np.int64))
    const("scale", np.array(1.0 / np.sqrt(head_dim), dtype=np.float32))
    const("one", np.array(1.0, dtype=np.float32))
    const("half", np.array(0.5, dtype=np.float32))
    const("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    const("neg", np.array(-1e9, dtype=np.float32))
    const("tiny", np.array(1e-9, dtype=np.float32))
    const("norm_floor", np.array(1e-12, dtype=np.float32))
    const("mask_axes", np.array([1, 2], dtype=np.int64))
    const("last_axis", np.array([-1], dtype=np.int64))

    # Embeddings: words + (positions + type 0), then LayerNorm.
    if word_input:
        words = "words"
        length = node("Shape", ["words"], "length", start=1, end=2)
    else:
        words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "words")
        length = node("Shape", ["input_ids"], "length", start=1, end=2)
    pos = node("Slice", ["pos_type", "zero", length, "zero"], "pos")
    x = layer_norm(node("Add", [words, pos], "emb_sum"), "embeddings.LayerNorm", "emb")

    if padded:  # 0 where attended, -1e9 where masked, broadcast over heads and query rows
        maskf = node("Cast", ["attention_mask"], "maskf", to=TensorProto.FLOAT)
        inverted = node("Sub", ["one", maskf], "mask_inv")
        neg = node("Mul", [inverted, "neg"], "mask_neg")
        bias = node("Unsqueeze", [neg, "mask_axes"], "mask_bias")

    for i in range(config.layers):
        p = f"encoder.layer.{i}"

        def split_heads(t: str, perm: list[int], out: str) -> str:
            return node(
                "Transpose", [node("Reshape", [t, "heads_shape"], out + "_r")], out, perm=perm
            )

        q = split_heads(linear(x, f"{p}.attention.self.query", f"l{i}_q"), [0, 2, 1, 3], f"l{i}_qh")
        k = split_heads(linear(x, f"{p}.attention.self.key", f"l{i}_k"), [0, 2, 3, 1], f"l{i}_kh")
        v = split_heads(linear(x, f"{p}.attention.self.value", f"l{i}_v"), [0, 2, 1, 3], f"l{i}_vh")
        scores = node("MatMul", [q, k], f"l{i}_scores")
        scores = node("Mul", [scores, "scale"], f"l{i}_scaled")
        if padded:
            scores = node("Add", [scores, bias], f"l{i}_masked")
        probs = node("Softmax", [scores], f"l{i}_probs", axis=-1)
        context = node("MatMul", [probs, v], f"l{i}_context")
        context = node("Transpose", [context], f"l{i}_ctx_t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, "hidden_shape"], f"l{i}_ctx")
        attn = linear(context, f"{p}.attention.output.dense", f"l{i}_attn")
        x = layer_norm(
            node("Add", [attn, x], f"l{i}_res1"), f"{p}.attention.output.LayerNorm", f"l{i}_ln1"
        )
        inner = linear(x, f"{p}.intermediate.dense", f"l{i}_ff1")
        erf = node("Erf", [node("Div", [inner, "sqrt2"], f"l{i}_gelu_div")], f"l{i}_gelu_erf")
        gelu = node("Mul", [inner, node("Add", [erf, "one"], f"l{i}_gelu_add")], f"l{i}_gelu_mul")
        gelu = node("Mul", [gelu, "half"], f"l{i}_gelu")
        out = linear(gelu, f"{p}.output.dense", f"l{i}_ff2")
        x = layer_norm(node("Add", [out, x], f"l{i}_res2"), f"{p}.output.LayerNorm", f"l{i}_out")

    # Mean over attended tokens, then unit length.
    if padded:
        weights3 = node("Unsqueeze", [maskf, "last_axis"], "mask3")
        summed = node(
            "ReduceSum", [node("Mul", [x, weights3], "masked"), "one_axis"], "summed", keepdims=0
        )
        count = node(
            "Max",
            [node("ReduceSum", [weights3, "one_axis"], "count", keepdims=0), "tiny"],
            "count_f",
        )
        mean = node("Div", [summed, count], "mean")
    else:
        mean = node("ReduceMean", [x, "one_axis"], "mean", keepdims=0)
    norm = node("ReduceL2", [mean, "last_axis"], "norm", keepdims=1)
    node("Div", [mean, node("Max", [norm, "norm_floor"], "norm_f")], "sentence_embedding")

    first = (
        helper.make_tensor_value_info("words", TensorProto.FLOAT, ["batch", "tokens", hidden])
        if word_input
        else helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"])
    )
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])
    graph = helper.make_graph(
        nodes,
        name,
        [first, mask] if padded else [first],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="reme-onnx-encoder"
    )
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)
