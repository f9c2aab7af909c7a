"""Text to search tokens, the same way for documents and queries.

Steps: Unicode NFKC (full-width Latin becomes ASCII, half-width katakana becomes full width), lower
case, then a scan that yields two kinds of runs:

- CJK runs (Han, Hiragana, Katakana, Hangul): written without spaces, so every character becomes a
  unigram and every adjacent pair a bigram; a query then matches words without a dictionary.
- Word runs (letters, digits, ``_``), optionally joined by ``.`` or ``-``: identifiers such as
  ``snake_case``, ``v2.1``, ``api.example.com`` or ``2024-05-01`` are kept whole *and* split into
  their parts, so both ``snake_case`` and ``case`` find them.

Stopwords (the language's list shipped with bm25s) are dropped; purely alphabetic words and parts
are stemmed with PyStemmer when stemming is on. Identifiers with digits or joiners are not stemmed.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
import unicodedata
from functools import cache, lru_cache
from types import ModuleType

import Stemmer

from reme_core.api import ConfigError

TOKENIZER_VERSION = 2
"""Bumped whenever the output for the same text changes, so stored indexes know to rebuild."""

MAX_TOKEN_LENGTH = 100
"""Longer runs (base64 blobs, minified code) only bloat the vocabulary; nobody types them."""

_CJK = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007"  # ideographic iteration mark, closing mark, number zero
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana (including the prolonged sound mark)
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
# `[^\W<cjk>]` is "a word character that is not CJK": Python counts CJK as \w, and a Latin word
# glued to Chinese text ("用Python写") must not swallow it.
_WORD = rf"[^\W{_CJK}]+"
_TOKEN_RE = re.compile(rf"([{_CJK}]+)|({_WORD}(?:[.\-]{_WORD})*)")
_PART_SPLIT_RE = re.compile(r"[._\-]+")

# Languages with a bm25s stopword list (the name of the list in ``bm25s.stopwords``). English uses
# the longer NLTK list ("english_plus"): agent queries are questions ("what did we decide about
# ..."), and the short Lucene list keeps "what" and "did" as search terms.
_STOPWORDS: dict[str, str] = {
    "english": "STOPWORDS_EN_PLUS",
    "porter": "STOPWORDS_EN_PLUS",
    "german": "STOPWORDS_GERMAN",
    "dutch": "STOPWORDS_DUTCH",
    "dutch_porter": "STOPWORDS_DUTCH",
    "french": "STOPWORDS_FRENCH",
    "spanish": "STOPWORDS_SPANISH",
    "portuguese": "STOPWORDS_PORTUGUESE",
    "italian": "STOPWORDS_ITALIAN",
    "russian": "STOPWORDS_RUSSIAN",
    "swedish": "STOPWORDS_SWEDISH",
    "norwegian": "STOPWORDS_NORWEGIAN",
    "danish": "STOPWORDS_DANISH",
    "turkish": "STOPWORDS_TURKISH",
    "chinese": "STOPWORDS_CHINESE",
    "korean": "STOPWORDS_KOREAN",
}


@cache
def _bm25s_stopwords() -> ModuleType:
    """``bm25s.stopwords``, without importing bm25s itself when it is not loaded yet.

    The lists are plain tuples, but ``import bm25s.stopwords`` runs bm25s's ``__init__``, which
    imports scipy: a tenth of a second that a search over a saved index never needs otherwise.
    """
    return bm25s_submodule("stopwords")


@cache
def bm25s_submodule(name: str) -> ModuleType:
    """bm25s's module ``name`` (``stopwords``, ``scoring``: modules that import only numpy and the
    standard library), loaded from its file without running bm25s's ``__init__`` (which imports
    scipy: a tenth of a second and ~15 MB resident) unless bm25s is loaded already."""
    if "bm25s" in sys.modules:
        return importlib.import_module(f"bm25s.{name}")
    package = importlib.util.find_spec("bm25s")
    locations = package.submodule_search_locations if package is not None else None
    if not locations:  # pragma: no cover - bm25s is a dependency
        return importlib.import_module(f"bm25s.{name}")
    spec = importlib.util.spec_from_file_location(
        f"reme_plugins._bm25s_{name}", f"{next(iter(locations))}/{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stemmer_languages() -> list[str]:
    """Languages PyStemmer can stem."""
    return sorted(Stemmer.algorithms())


class Tokenizer:
    """A configured tokenizer; callable on a string. Safe to share between threads."""

    def __init__(self, language: str = "english", stem: bool = True):
        self.language = language.strip().lower()
        self.stem = stem
        stemmable = self.language in Stemmer.algorithms()
        if stem and not stemmable:
            raise ConfigError(
                f"keyword index language {language!r} has no stemmer; use one of "
                f"{', '.join(stemmer_languages())}, or set stem: false"
            )
        if not stemmable and self.language not in _STOPWORDS:
            known = sorted(set(_STOPWORDS) | set(Stemmer.algorithms()))
            raise ConfigError(
                f"keyword index language {language!r} is unknown; use one of {', '.join(known)}"
            )
        self._stopwords: frozenset[str] | None = None  # loaded by the first call
        # PyStemmer objects are not thread-safe: one per thread.
        self._local = threading.local()

    @property
    def stopwords(self) -> frozenset[str]:
        """The language's stopwords (none for a language without a list)."""
        stopwords = self._stopwords
        if stopwords is None:
            name = _STOPWORDS.get(self.language)
            words = getattr(_bm25s_stopwords(), name) if name else ()
            stopwords = self._stopwords = frozenset(words)
        return stopwords

    def fingerprint(self) -> dict[str, object]:
        """What determines the output, for index files to record and compare on load."""
        return {"version": TOKENIZER_VERSION, "language": self.language, "stem": self.stem}

    def __call__(self, text: str) -> list[str]:
        """Tokens of ``text`` in order (repeats kept: term frequency matters)."""
        text = unicodedata.normalize("NFKC", text).lower()
        tokens: list[str] = []
        stem_at: list[int] = []
        stop = self.stopwords
        stem = self.stem
        for cjk, word in _TOKEN_RE.findall(text):
            if cjk:
                tokens.extend(cjk)
                tokens.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
                continue
            if word in stop or len(word) > MAX_TOKEN_LENGTH:
                continue
            if "_" not in word and "." not in word and "-" not in word:  # the common case
                if stem and word.isalpha():
                    stem_at.append(len(tokens))
                tokens.append(word)
                continue
            parts = [p for p in _PART_SPLIT_RE.split(word) if p]
            if not parts:  # only joiners, e.g. a "___" rule line
                continue
            if parts != [word] and not (
                len(parts) > 1 and "-" in word and all(p.isalpha() for p in parts)
            ):
                # An identifier: keep it whole, unstemmed, and add its parts below. A hyphenated
                # compound of plain words ("wi-fi", "on-call") is just its words: counting it
                # three times would outweigh every other query word.
                tokens.append(word)
            for part in parts:
                if part in stop:
                    continue
                if stem and part.isalpha():
                    stem_at.append(len(tokens))
                tokens.append(part)
        if stem_at:
            stemmed = self._stemmer().stemWords([tokens[i] for i in stem_at])
            for i, value in zip(stem_at, stemmed, strict=True):
                tokens[i] = value
        return tokens

    def _stemmer(self) -> Stemmer.Stemmer:
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            stemmer = self._local.stemmer = Stemmer.Stemmer(self.language)
        return stemmer


@lru_cache(maxsize=16)
def get_tokenizer(language: str = "english", stem: bool = True) -> Tokenizer:
    """A shared tokenizer for these settings."""
    return Tokenizer(language, stem)


def tokenize(text: str, language: str = "english", stem: bool = True) -> list[str]:
    """Search tokens of ``text``: lower-cased, stopwords dropped, stemmed, CJK as 1- and 2-grams."""
    return get_tokenizer(language, stem)(text)
