"""The markdown chunker's ``excerpt_chunks``: quoted excerpt items (list items anchored to a
transcript line, the message quoted below) chunked one exchange or one message per chunk."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from reme_plugins.chunker_markdown import MarkdownChunker, MarkdownChunkerSettings

NOTE = """---
name: 'Unsummarised session: I adopted a beagle'
date: 2024-03-15
---
# Unsummarised session: I adopted a beagle

## Unsummarised excerpt

> [!warning] Not summarised
> kept verbatim.

- **user** 09:00 [[sessions/s1.jsonl#L1]]
  > I adopted a beagle named Pixel.
- **assistant** 09:00 [[sessions/s1.jsonl#L2]]
  > Beagles need long walks.
  >
  > Pixel will love the park.
- **user** 09:01 [[sessions/s1.jsonl#L3]]
  > My sister moved to Lisbon.

A closing paragraph below the list.
Still the paragraph.

- a plain bullet, no anchor
"""


def chunks(**settings: object):  # type: ignore[no-untyped-def]
    return MarkdownChunker(MarkdownChunkerSettings(**settings)).chunk("daily/s1.md", NOTE)


def test_packed_packs_neighbours() -> None:
    got = chunks(excerpt_chunks="packed")
    assert MarkdownChunkerSettings().excerpt_chunks == "packed"
    assert len(got) == 1 and "Pixel" in got[0].text and "Lisbon" in got[0].text


def test_each_excerpt_item_is_its_own_chunk() -> None:
    got = chunks(excerpt_chunks="message")
    ranges = [(c.start_line, c.end_line) for c in got]
    # The banner, three excerpts, the paragraph after the list with the plain bullet.
    assert ranges == [(7, 10), (12, 13), (14, 17), (18, 19), (21, 24)]
    assert got[2].text.endswith("  > Pixel will love the park.")
    assert "Lisbon" in got[3].text and "Pixel" not in got[3].text
    assert "plain bullet" in got[4].text and "Lisbon" not in got[4].text
    # Every chunk still shows its breadcrumb ...
    crumb = "Unsummarised session: I adopted a beagle > Unsummarised excerpt"
    assert all(c.text.startswith(crumb) for c in got)
    # ... but an excerpt's keyword text is the message alone: the session's title is not its words.
    assert (
        got[1].keyword_text
        == "- **user** 09:00 [[sessions/s1.jsonl#L1]]\n  > I adopted a beagle named Pixel."
    )
    assert got[0].keyword_text is None and got[4].keyword_text is None
    assert all(c.vector_text is None for c in got)


def test_a_long_excerpt_splits_into_chunks_of_that_message_only() -> None:
    long = "word " * 400  # 2,000 characters on one quoted line
    note = f"- **user** 09:00 [[sessions/s1.jsonl#L1]]\n  > {long}\n- **assistant** 09:00 [[sessions/s1.jsonl#L2]]\n  > short reply\n"
    got = MarkdownChunker(MarkdownChunkerSettings(excerpt_chunks="message", max_chars=800)).chunk(
        "n.md", note
    )
    assert len(got) >= 4  # the anchor line, then the quoted line in three or more pieces
    assert all(c.start_line >= 1 and c.end_line <= 2 for c in got[:-1])
    assert (got[-1].start_line, got[-1].end_line) == (3, 4)
    assert all(len(c.text) <= 800 for c in got)


def test_only_quoted_anchored_items_are_cut() -> None:
    # A timeline line (anchored, no quote) and a quote under a plain bullet stay packed.
    note = (
        "- 09:00 adopted a dog ([[sessions/s1.jsonl#L1]])\n"
        "- 09:05 moved ([[sessions/s1.jsonl#L2]])\n"
        "- a bullet\n  > a quote\n"
    )
    got = MarkdownChunker(MarkdownChunkerSettings(excerpt_chunks="exchange")).chunk("n.md", note)
    assert len(got) == 1


def test_an_exchange_is_a_user_message_and_the_replies_under_it() -> None:
    got = chunks(excerpt_chunks="exchange")
    ranges = [(c.start_line, c.end_line) for c in got]
    # The banner; user + assistant; the next user message; the paragraph after the list.
    assert ranges == [(7, 10), (12, 17), (18, 19), (21, 24)]
    assert "Pixel named" not in got[1].text and "walks" in got[1].text
    assert got[1].keyword_text.startswith("- **user** 09:00")  # type: ignore[union-attr]
    # A reply with no user message before it (after a paragraph) starts a chunk of its own,
    # and a fact (an anchored quoted item with no role) is never joined.
    note = (
        "Intro.\n\n- **assistant** 09:00 [[sessions/s1.jsonl#L1]]\n  > hello\n"
        "- a fact ([[sessions/s1.jsonl#L2]])\n  > quoted\n"
        "- **assistant** 09:01 [[sessions/s1.jsonl#L3]]\n  > more\n"
    )
    got = MarkdownChunker(MarkdownChunkerSettings(excerpt_chunks="exchange")).chunk("n.md", note)
    assert [(c.start_line, c.end_line) for c in got] == [(1, 1), (3, 4), (5, 8)]


def test_keyword_context_still_heads_an_excerpt() -> None:
    got = chunks(excerpt_chunks="message", keyword_context_keys=["date"])
    assert got[1].keyword_text.startswith("Friday 15 March 2024\n- **user** 09:00")  # type: ignore[union-attr]
    assert got[0].keyword_text.startswith("Friday 15 March 2024\nUnsummarised session")  # type: ignore[union-attr]


def test_a_bad_value_is_refused() -> None:
    with pytest.raises(ValidationError):
        MarkdownChunkerSettings(excerpt_chunks="sometimes")  # type: ignore[arg-type]


def test_a_user_message_is_also_a_chunk_of_its_own_beside_its_exchange() -> None:
    got = chunks(excerpt_chunks="exchange", excerpt_user_chunks=True)
    ranges = [(c.start_line, c.end_line) for c in got]
    # The banner; user + assistant, then that user message alone; the next user message (no
    # reply: alone already, not repeated); the paragraph after the list.
    assert ranges == [(7, 10), (12, 17), (12, 13), (18, 19), (21, 24)]
    assert [c.ordinal for c in got] == list(range(5))
    alone = got[2]
    assert "Pixel" in alone.text and "walks" not in alone.text
    assert alone.text.startswith("Unsummarised session: I adopted a beagle > Unsummarised excerpt")
    assert alone.keyword_text == (
        "- **user** 09:00 [[sessions/s1.jsonl#L1]]\n  > I adopted a beagle named Pixel."
    )
    # Off by default, and nothing without exchanges: packed and message chunk as before.
    assert MarkdownChunkerSettings().excerpt_user_chunks is False
    for mode in ("packed", "message"):
        with_user = chunks(excerpt_chunks=mode, excerpt_user_chunks=True)
        assert with_user == chunks(excerpt_chunks=mode)


def test_a_user_message_too_long_for_one_chunk_is_not_repeated() -> None:
    long = "word " * 400  # 2,000 characters: the exchange's first chunks hold it alone
    note = (
        f"- **user** 09:00 [[sessions/s1.jsonl#L1]]\n  > {long}\n"
        "- **assistant** 09:00 [[sessions/s1.jsonl#L2]]\n  > short reply\n"
    )
    settings = MarkdownChunkerSettings(excerpt_chunks="exchange", max_chars=800)
    plain = MarkdownChunker(settings).chunk("n.md", note)
    dual = MarkdownChunker(settings.model_copy(update={"excerpt_user_chunks": True})).chunk(
        "n.md", note
    )
    assert dual == plain
    # A reply first (no user message) gets no extra chunk either.
    note = "- **assistant** 09:00 [[sessions/s1.jsonl#L1]]\n  > hi\n- **assistant** 09:01 [[sessions/s1.jsonl#L2]]\n  > more\n"
    settings = MarkdownChunkerSettings(excerpt_chunks="exchange", excerpt_user_chunks=True)
    assert [(c.start_line, c.end_line) for c in MarkdownChunker(settings).chunk("n.md", note)] == [
        (1, 4)
    ]
