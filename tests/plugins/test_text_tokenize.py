from __future__ import annotations

import pytest

from reme_core.errors import ConfigError
from reme_plugins.text_tokenize import MAX_TOKEN_LENGTH, Tokenizer, get_tokenizer, tokenize


def test_lowercases_and_drops_stopwords() -> None:
    assert tokenize("What is THE Plan", stem=False) == ["plan"]


def test_only_stopwords_give_nothing() -> None:
    assert tokenize("the and of what is it") == []


def test_stems_english() -> None:
    assert tokenize("running runs") == ["run", "run"]
    assert tokenize("running", stem=False) == ["running"]


def test_keeps_numbers() -> None:
    assert tokenize("port 8080 in 2024") == ["port", "8080", "2024"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max_retries", ["max_retries", "max", "retri"]),
        ("v2.1", ["v2.1", "v2", "1"]),
        ("api.example.com", ["api.example.com", "api", "exampl", "com"]),
        ("2024-05-01", ["2024-05-01", "2024", "05", "01"]),
        ("__init__", ["__init__", "init"]),
    ],
)
def test_identifiers_kept_whole_and_in_parts(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_sentence_punctuation_is_not_part_of_a_word() -> None:
    assert tokenize("Deploy done. Next: rollback!", stem=False) == [
        "deploy",
        "done",
        "next",
        "rollback",
    ]


def test_chinese_unigrams_and_bigrams() -> None:
    assert tokenize("机器学习") == ["机", "器", "学", "习", "机器", "器学", "学习"]


def test_japanese_and_korean_runs() -> None:
    assert tokenize("タワー") == ["タ", "ワ", "ー", "タワ", "ワー"]
    assert tokenize("한국어") == ["한", "국", "어", "한국", "국어"]


def test_latin_word_glued_to_cjk_is_split_off() -> None:
    assert tokenize("用Python写") == ["用", "python", "写"]


def test_full_width_latin_is_normalised() -> None:
    full_width = "\uff30\uff59\uff54\uff48\uff4f\uff4e"  # "Python" in full-width letters
    assert tokenize(full_width) == ["python"]


def test_separator_only_runs_and_huge_tokens_are_dropped() -> None:
    assert tokenize("___ " + "x" * (MAX_TOKEN_LENGTH + 1)) == []


def test_documents_and_queries_match() -> None:
    document = set(tokenize("The deployments were rolled back on staging-eu"))
    query = tokenize("rolling back deployment staging")
    assert query and set(query) <= document


def test_other_language() -> None:
    assert tokenize("Die Katzen schlafen", language="german") == ["katz", "schlaf"]


def test_language_without_stemmer_needs_stem_off() -> None:
    with pytest.raises(ConfigError, match="stem"):
        Tokenizer("chinese", stem=True)
    assert Tokenizer("chinese", stem=False)("机器") == ["机", "器", "机器"]


def test_unknown_language_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="klingon"):
        Tokenizer("klingon", stem=False)


def test_tokenizers_are_shared_and_fingerprinted() -> None:
    assert get_tokenizer("english", True) is get_tokenizer("english", True)
    assert (
        get_tokenizer("english", True).fingerprint()
        != get_tokenizer("english", False).fingerprint()
    )
