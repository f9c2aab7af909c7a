"""Conformance suite for chunker plugins: subclass ``ChunkerConformance`` and override ``chunker``.

```python
class TestMyChunker(ChunkerConformance):
    max_chunk_chars = 1500  # optional: also check that no chunk is longer

    @pytest.fixture
    def chunker(self) -> Chunker:
        return MyChunker()
```

A chunker for a structured format (JSONL, HTML...) also overrides ``samples`` and
``long_line_sample`` with documents in its format.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import pytest

from reme_core.components import Chunker
from reme_core.schema import Chunk

_WORD = re.compile(r"\w+")
# A run of unique CJK characters: a piece lost or duplicated out of order is detectable.
CJK_RUN = "".join(chr(0x4E00 + i) for i in range(5000))
ARABIC = "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645"  # RTL script


@dataclass(frozen=True)
class Sample:
    """A document to chunk; ``must_contain`` lists what must survive (None = every word in it)."""

    path: str
    text: str
    must_contain: tuple[str, ...] | None = None

    def required(self) -> list[str]:
        """Strings that must appear in the chunks' text taken together."""
        if self.must_contain is not None:
            return list(self.must_contain)
        return _WORD.findall(self.text)


def _long_text() -> str:
    paragraphs = []
    for p in range(60):
        words = " ".join(f"p{p}w{w}" for w in range(12))
        paragraphs.append(f"{words}\n{words.upper()}")
    return "\n\n".join(paragraphs) + "\n"


DEFAULT_SAMPLES = [
    Sample("prose.md", "First paragraph about apples.\n\nSecond one, about pears.\nStill pears.\n"),
    Sample(
        "structured.md",
        "# Groceries\n\nBuy milk and eggs.\n\n## Code\n\n```python\n# comment inside\n"
        "print('hi')\n```\n\n## Table\n\n| item | qty |\n|------|-----|\n| milk | 2 |\n\n"
        "- a list item\n- another item\n",
    ),
    Sample("long.txt", _long_text()),
    Sample("crlf.txt", "windows line one\r\nwindows line two\r\n\r\nnext paragraph here\r\n"),
    Sample(
        "unicode.md",
        "日本語の文章です。検索できるように。\n\n中文段落\uff0c没有空格也要能切分。\n\n"
        "Emoji 🎉🚀 and accents: café naïve Ærø\n\n"
        f"{ARABIC}\n\ne\u0301t\u00e9 combining\n",
    ),
    Sample("spaces.txt", "\n\n   \n\t\nlonely words after blanks\n   \n\nand at the end  \n\n\n"),
    Sample("single.txt", "x"),
]


class ChunkerConformance:
    """Properties every chunker must have. Subclasses provide the ``chunker`` fixture."""

    max_chunk_chars: int | None = None
    """When set, no chunk's text may be longer (set it to the chunker's ``max_chars``)."""

    @pytest.fixture
    def chunker(self) -> Chunker:
        raise NotImplementedError("override the `chunker` fixture in your test class")

    @pytest.fixture
    def samples(self) -> list[Sample]:
        return DEFAULT_SAMPLES

    @pytest.fixture
    def long_line_sample(self) -> Sample:
        """One line, no newline, several times any sane chunk size, with no spaces (CJK)."""
        return Sample("cjk.txt", CJK_RUN, must_contain=tuple(CJK_RUN))

    # -- helpers ----------------------------------------------------------------------------

    def run(self, chunker: Chunker, sample: Sample) -> list[Chunk]:
        chunks = chunker.chunk(sample.path, sample.text)
        assert isinstance(chunks, list), f"{sample.path}: chunk() must return a list"
        assert all(isinstance(c, Chunk) for c in chunks), f"{sample.path}: items must be Chunk"
        return chunks

    def all_chunks(
        self, chunker: Chunker, samples: list[Sample]
    ) -> list[tuple[Sample, list[Chunk]]]:
        return [(s, self.run(chunker, s)) for s in samples]

    # -- the properties ---------------------------------------------------------------------

    @pytest.mark.parametrize("text", ["", "\n", "   \n\n\t\n", "\r\n\r\n", "\ufeff"])
    def test_blank_input_gives_no_chunks(self, chunker: Chunker, text: str) -> None:
        assert chunker.chunk("empty.md", text) == []

    def test_samples_give_chunks(self, chunker: Chunker, samples: list[Sample]) -> None:
        for sample, chunks in self.all_chunks(chunker, samples):
            assert chunks, f"{sample.path}: no chunks for a non-blank document"

    def test_ordinals_consecutive_from_zero(self, chunker: Chunker, samples: list[Sample]) -> None:
        for sample, chunks in self.all_chunks(chunker, samples):
            assert [c.ordinal for c in chunks] == list(range(len(chunks))), sample.path

    def test_path_and_unique_ids(self, chunker: Chunker, samples: list[Sample]) -> None:
        for sample, chunks in self.all_chunks(chunker, samples):
            assert {c.path for c in chunks} == {sample.path}
            assert len({c.id for c in chunks}) == len(chunks), sample.path

    def test_line_ranges_within_file_and_ordered(
        self, chunker: Chunker, samples: list[Sample]
    ) -> None:
        for sample, chunks in self.all_chunks(chunker, samples):
            n_lines = len(sample.text.split("\n"))
            for c in chunks:
                assert 1 <= c.start_line <= c.end_line <= n_lines, (sample.path, c)
            for a, b in itertools.pairwise(chunks):
                assert a.start_line <= b.start_line, (sample.path, a, b)
                assert a.end_line <= b.end_line, (sample.path, a, b)

    def test_text_not_blank(self, chunker: Chunker, samples: list[Sample]) -> None:
        for sample, chunks in self.all_chunks(chunker, samples):
            assert all(c.text.strip() for c in chunks), sample.path

    def test_chunk_lines_contain_its_text(self, chunker: Chunker, samples: list[Sample]) -> None:
        """Every word of a chunk is in the lines its range names (added words go in `heading`)."""
        for sample, chunks in self.all_chunks(chunker, samples):
            lines = sample.text.removeprefix("\ufeff").split("\n")
            for c in chunks:
                window = "\n".join(lines[c.start_line - 1 : c.end_line])
                words = set(_WORD.findall(c.text)) - set(_WORD.findall(c.heading))
                words = words or set(_WORD.findall(c.heading))
                missing = sorted(w for w in words if w not in window)
                assert not missing, (
                    f"{sample.path} chunk {c.ordinal} (lines {c.start_line}-{c.end_line}): "
                    f"words not in its lines: {missing[:10]}"
                )

    def test_nothing_lost(self, chunker: Chunker, samples: list[Sample]) -> None:
        for sample, chunks in self.all_chunks(chunker, samples):
            joined = "\n".join(c.text for c in chunks)
            missing = [w for w in sample.required() if w not in joined]
            assert not missing, f"{sample.path}: lost {missing[:10]}"

    def test_deterministic(self, chunker: Chunker, samples: list[Sample]) -> None:
        for sample in samples:
            assert self.run(chunker, sample) == self.run(chunker, sample), sample.path

    def test_max_chunk_chars(self, chunker: Chunker, samples: list[Sample]) -> None:
        if self.max_chunk_chars is None:
            pytest.skip("max_chunk_chars not set for this chunker")
        for sample, chunks in self.all_chunks(chunker, samples):
            for c in chunks:
                assert len(c.text) <= self.max_chunk_chars, (sample.path, c.ordinal, len(c.text))

    def test_long_line_without_newline(self, chunker: Chunker, long_line_sample: Sample) -> None:
        """A huge single line (CJK, no spaces) is split by characters, all on line 1."""
        chunks = self.run(chunker, long_line_sample)
        assert chunks
        assert all(c.start_line == c.end_line == 1 for c in chunks)
        joined = "".join(c.text for c in chunks)
        missing = [w for w in long_line_sample.required() if w not in joined]
        assert not missing, f"lost {len(missing)} characters, e.g. {missing[:5]}"
        if self.max_chunk_chars is not None:
            assert len(chunks) > 1
            assert all(len(c.text) <= self.max_chunk_chars for c in chunks)

    def test_unicode_survives(
        self, chunker: Chunker, samples: list[Sample], long_line_sample: Sample
    ) -> None:
        """Text is valid Unicode: no lone surrogates, no replacement characters introduced."""
        for sample, chunks in self.all_chunks(chunker, [*samples, long_line_sample]):
            for c in chunks:
                c.text.encode("utf-8")  # raises on a lone surrogate
                if "\ufffd" not in sample.text:
                    assert "\ufffd" not in c.text, (sample.path, c.ordinal)
