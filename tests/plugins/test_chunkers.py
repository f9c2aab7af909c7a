"""The shipped chunkers: the conformance suite for each, then behaviour specific to each."""

from __future__ import annotations

import itertools
import json

import pytest
from pydantic import ValidationError

from reme_core.components import Chunker
from reme_core.plugins import Plugins
from reme_core.schema import Chunk
from reme_core.testing.chunker import CJK_RUN, ChunkerConformance, Sample
from reme_plugins import chunker_jsonl, chunker_markdown, chunker_text
from reme_plugins.chunker_jsonl import JsonlTranscriptChunker
from reme_plugins.chunker_markdown import MarkdownChunker
from reme_plugins.chunker_text import PlainTextChunker


def lines_of(text: str, chunk: Chunk) -> str:
    """The exact file lines a chunk's range names."""
    return "\n".join(text.split("\n")[chunk.start_line - 1 : chunk.end_line])


def body(chunk: Chunk) -> str:
    """A markdown chunk's text without its breadcrumb line."""
    return chunk.text.split("\n", 1)[1] if chunk.heading else chunk.text


# -- conformance ---------------------------------------------------------------------------


class TestMarkdownConformance(ChunkerConformance):
    max_chunk_chars = 1500

    @pytest.fixture
    def chunker(self) -> Chunker:
        return MarkdownChunker()


class TestTextConformance(ChunkerConformance):
    max_chunk_chars = 1500

    @pytest.fixture
    def chunker(self) -> Chunker:
        return PlainTextChunker()


def turn(role: str, content: object) -> str:
    return json.dumps({"role": role, "content": content}, ensure_ascii=False)


class TestJsonlConformance(ChunkerConformance):
    max_chunk_chars = 1500

    @pytest.fixture
    def chunker(self) -> Chunker:
        return JsonlTranscriptChunker()

    @pytest.fixture
    def samples(self) -> list[Sample]:
        many = "\n".join(
            turn("user" if i % 2 else "assistant", f"turn{i} " * 30) for i in range(40)
        )
        return [
            Sample(
                "s.jsonl",
                turn("user", "where are my keys") + "\n" + turn("assistant", "on the desk") + "\n",
                ("user: where are my keys", "assistant: on the desk"),
            ),
            Sample("many.jsonl", many, tuple(f"turn{i}" for i in range(40))),
            Sample(
                "cjk.jsonl", turn("user", "日本語の質問です 🎉"), ("user: 日本語の質問です 🎉",)
            ),
        ]

    @pytest.fixture
    def long_line_sample(self) -> Sample:
        return Sample("long.jsonl", turn("user", CJK_RUN), must_contain=tuple(CJK_RUN))


# -- registration and settings -------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "name", "cls"),
    [
        (chunker_markdown, "markdown", MarkdownChunker),
        (chunker_text, "text", PlainTextChunker),
        (chunker_jsonl, "jsonl", JsonlTranscriptChunker),
    ],
)
def test_module_registers_its_chunker(module: object, name: str, cls: type[Chunker]) -> None:
    plugins = Plugins()
    plugins.register(module, name="under-test")
    assert plugins.registry("chunker").names() == [name]
    assert plugins.get("chunker", name) is cls


@pytest.mark.parametrize("cls", [MarkdownChunker, PlainTextChunker])
@pytest.mark.parametrize(
    "bad",
    [{"max_chars": 100}, {"max_chars": 300, "overlap_chars": 300}, {"overlap_chars": -1}, {"x": 1}],
)
def test_sized_settings_are_validated(cls: type[Chunker], bad: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        cls.Settings(**bad)


@pytest.mark.parametrize("bad", [{"max_chars": 10}, {"turns_per_chunk": -1}, {"overlap": 5}])
def test_jsonl_settings_are_validated(bad: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        JsonlTranscriptChunker.Settings(**bad)


# -- markdown ------------------------------------------------------------------------------

NOTE = """\
# Title
intro of title
## Section
section text
### Sub
sub text
## Other
other text
"""


def test_markdown_breadcrumbs_and_ranges() -> None:
    chunks = MarkdownChunker().chunk("n.md", NOTE)
    assert [c.heading for c in chunks] == [
        "Title",
        "Title > Section",
        "Title > Section > Sub",
        "Title > Other",
    ]
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (3, 4), (5, 6), (7, 8)]
    assert chunks[2].text == "Title > Section > Sub\nsub text"


def test_markdown_bare_parent_heading_is_carried_by_its_child() -> None:
    text = "# Title\n## Section\nbody\n## Leaf\n"
    chunks = MarkdownChunker().chunk("n.md", text)
    assert [(c.heading, c.text, c.start_line) for c in chunks] == [
        ("Title > Section", "Title > Section\nbody", 2),
        ("Title > Leaf", "Title > Leaf", 4),
    ]


def test_markdown_hash_without_space_and_closing_hashes() -> None:
    text = "#tag is not a heading\n## Closed ##\ntext\n"
    chunks = MarkdownChunker().chunk("n.md", text)
    assert [(c.heading, c.start_line, c.end_line) for c in chunks] == [("", 1, 1), ("Closed", 2, 3)]


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_markdown_fenced_hash_lines_are_not_headings(fence: str) -> None:
    text = (
        f"# Setup\nrun this:\n{fence}bash\n# install\npip install reme\n"
        f"## not a heading\n{fence}\nafter\n"
    )
    chunks = MarkdownChunker().chunk("n.md", text)
    assert len(chunks) == 1
    assert chunks[0].heading == "Setup"
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 8)
    assert "## not a heading" in chunks[0].text


def test_markdown_code_block_is_kept_whole() -> None:
    settings = MarkdownChunker.Settings(max_chars=300, overlap_chars=0)
    code = "\n".join(f"x{i} = {i}" for i in range(20))  # ~170 chars
    text = "# H\n" + "prose line here. " * 10 + f"\n\n```\n{code}\n```\n\n" + "more prose. " * 10
    chunks = MarkdownChunker(settings).chunk("n.md", text)
    assert len(chunks) > 1
    fence_lines = [i + 1 for i, line in enumerate(text.split("\n")) if line == "```"]
    holders = [c for c in chunks if c.start_line <= fence_lines[0] <= c.end_line]
    assert len(holders) == 1
    assert holders[0].end_line >= fence_lines[1]


def test_markdown_table_is_not_split() -> None:
    settings = MarkdownChunker.Settings(max_chars=300, overlap_chars=50)
    table = "\n".join(
        ["| key | value |", "|-----|-------|"] + [f"| k{i} | v{i} |" for i in range(10)]
    )
    prose = "\n".join(f"prose line {i} with some words" for i in range(6))
    text = f"# Data\n{prose}\n{table}\n{prose}\n"
    chunks = MarkdownChunker(settings).chunk("n.md", text)
    assert len(chunks) >= 2
    rows = [i + 1 for i, line in enumerate(text.split("\n")) if line.startswith("|")]
    whole = [c for c in chunks if c.start_line <= rows[0] and c.end_line >= rows[-1]]
    assert len(whole) == 1
    assert table in whole[0].text


def test_markdown_oversized_code_block_splits_at_lines() -> None:
    settings = MarkdownChunker.Settings(max_chars=200, overlap_chars=0)
    code = "\n".join(f"value_{i} = compute({i})" for i in range(40))
    text = f"# Big\n```\n{code}\n```\n"
    chunks = MarkdownChunker(settings).chunk("n.md", text)
    assert len(chunks) > 2
    assert all(len(c.text) <= 200 for c in chunks)
    assert all(body(c) == lines_of(text, c) for c in chunks[1:])


def test_markdown_long_section_overlaps_with_exact_ranges() -> None:
    settings = MarkdownChunker.Settings(max_chars=400, overlap_chars=120)
    paras = "\n\n".join(
        "\n".join(f"para {p} line {i} words words" for i in range(4)) for p in range(8)
    )
    text = f"# Long\n{paras}\n"
    chunks = MarkdownChunker(settings).chunk("n.md", text)
    assert len(chunks) >= 3
    for c in chunks:
        assert c.heading == "Long" and c.text.startswith("Long\n")
        assert len(c.text) <= 400
    # Ranges are exact: the body is the range's lines (the first range includes the heading).
    assert lines_of(text, chunks[0]) == "# Long\n" + body(chunks[0])
    for c in chunks[1:]:
        assert body(c) == lines_of(text, c)
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start_line <= prev.end_line, "expected overlapping trailing lines"
        shared = text.split("\n")[nxt.start_line - 1]
        assert shared in prev.text and shared in nxt.text


def test_markdown_without_overlap_does_not_repeat() -> None:
    settings = MarkdownChunker.Settings(max_chars=400, overlap_chars=0)
    text = "# Long\n" + "\n\n".join(f"paragraph {p} " + "word " * 20 for p in range(10))
    chunks = MarkdownChunker(settings).chunk("n.md", text)
    assert len(chunks) >= 3
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.start_line > prev.end_line


FRONTMATTER_NOTE = """\
---
name: Kitchen notes
description: "things: about the kitchen"
---

Text before any heading.

# Recipes
bread
"""


def test_markdown_frontmatter_skipped_lines_counted_from_top() -> None:
    chunks = MarkdownChunker().chunk("n.md", FRONTMATTER_NOTE)
    assert [(c.heading, c.start_line, c.end_line) for c in chunks] == [
        ("Kitchen notes", 6, 6),
        ("Recipes", 8, 9),
    ]
    assert chunks[0].text == "Kitchen notes\nText before any heading."
    assert not any("description" in c.text for c in chunks)


@pytest.mark.parametrize(
    "frontmatter", ["name: [unclosed", "- a list", "name: {a: 1}", "date: 2024-13-45"]
)
def test_markdown_bad_frontmatter_is_tolerated(frontmatter: str) -> None:
    text = f"---\n{frontmatter}\n---\npreamble\n"
    chunks = MarkdownChunker().chunk("n.md", text)
    assert [(c.heading, c.text, c.start_line) for c in chunks] == [("", "preamble", 4)]


def test_markdown_unclosed_frontmatter_is_text() -> None:
    chunks = MarkdownChunker().chunk("n.md", "---\nname: x\nno closing line\n")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3)]


def test_markdown_frontmatter_only_note_has_no_chunks() -> None:
    assert MarkdownChunker().chunk("n.md", "---\nname: Empty\n---\n\n") == []


def test_markdown_crlf_and_bom() -> None:
    text = "\ufeff# Title\r\nline one\r\n\r\n## Two\r\nline two\r\n"
    chunks = MarkdownChunker().chunk("n.md", text)
    assert [(c.text, c.start_line, c.end_line) for c in chunks] == [
        ("Title\nline one", 1, 2),
        ("Title > Two\nline two", 4, 5),
    ]


# -- plain text ----------------------------------------------------------------------------


def test_text_packs_paragraphs_with_exact_ranges() -> None:
    text = "alpha one\nalpha two\n\n\nbeta\n\ngamma\n"
    chunks = PlainTextChunker().chunk("a.txt", text)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 7)]
    assert chunks[0].text == "alpha one\nalpha two\n\n\nbeta\n\ngamma"


def test_text_splits_at_paragraphs_then_lines() -> None:
    settings = PlainTextChunker.Settings(max_chars=200, overlap_chars=0)
    para = "\n".join(f"line {i} of the long paragraph" for i in range(20))  # ~600 chars
    text = "short intro\n\n" + para + "\n\nshort outro\n"
    chunks = PlainTextChunker(settings).chunk("a.txt", text)
    assert len(chunks) >= 4
    for c in chunks:
        assert len(c.text) <= 200
        assert c.text == lines_of(text, c)
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    content = {i + 1 for i, line in enumerate(text.split("\n")) if line.strip()}
    assert content <= covered


def test_text_huge_line_prefers_spaces() -> None:
    settings = PlainTextChunker.Settings(max_chars=200, overlap_chars=0)
    words = [f"w{i:04d}" for i in range(300)]
    chunks = PlainTextChunker(settings).chunk("a.txt", "intro\n\n" + " ".join(words))
    pieces = chunks[1:]
    assert chunks[0].text == "intro"
    assert len(pieces) > 5 and all(c.start_line == c.end_line == 3 for c in pieces)
    # Cut at spaces: every word appears whole, exactly once (no overlap asked for).
    assert [w for c in pieces for w in c.text.split()] == words


# -- jsonl ---------------------------------------------------------------------------------


def test_jsonl_parts_malformed_and_blank_lines() -> None:
    text = "\n".join(
        [
            turn("user", "plain question"),
            "{not json",
            "",
            turn(
                "assistant", [{"type": "text", "text": "part one"}, {"type": "image"}, "part two"]
            ),
            "[1, 2]",
            json.dumps({"role": "user", "content": "", "ts": 1}),
            json.dumps({"type": "user", "message": {"role": "user", "content": "wrapped"}}),
            '{"role": "user", "content": "trunc',
        ]
    )
    chunks = JsonlTranscriptChunker().chunk("s.jsonl", text)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 7)]
    assert chunks[0].text == "user: plain question\nassistant: part one\npart two\nuser: wrapped"


def test_jsonl_packs_by_size_and_by_turn_count() -> None:
    text = "\n".join(turn("user" if i % 2 else "assistant", f"message {i} " * 5) for i in range(9))
    by_count = JsonlTranscriptChunker(JsonlTranscriptChunker.Settings(turns_per_chunk=4))
    assert [(c.start_line, c.end_line) for c in by_count.chunk("s.jsonl", text)] == [
        (1, 4),
        (5, 8),
        (9, 9),
    ]
    by_size = JsonlTranscriptChunker(JsonlTranscriptChunker.Settings(max_chars=200))
    chunks = by_size.chunk("s.jsonl", text)
    assert len(chunks) > 2 and all(len(c.text) <= 200 for c in chunks)
    assert [c.start_line for c in chunks[1:]] == [c.end_line + 1 for c in chunks[:-1]]


def test_jsonl_huge_turn_is_split_with_role_prefix() -> None:
    text = turn("user", "short") + "\n" + turn("assistant", "lorem ipsum " * 100)
    chunker = JsonlTranscriptChunker(JsonlTranscriptChunker.Settings(max_chars=300))
    chunks = chunker.chunk("s.jsonl", text)
    assert chunks[0].text == "user: short" and chunks[0].start_line == 1
    assert len(chunks) >= 4
    assert all(c.start_line == c.end_line == 2 for c in chunks[1:])
    assert all(c.text.startswith("assistant: ") and len(c.text) <= 300 for c in chunks[1:])
