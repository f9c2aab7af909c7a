"""The markdown chunker's ``context_keys``: frontmatter values as a line above every chunk."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV
from pydantic import ValidationError

from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.workspace.layout import init_workspace
from reme_plugins.chunk_context import context_line, frontmatter_fields, render_value
from reme_plugins.chunker_markdown import MarkdownChunker, MarkdownChunkerSettings

TURN = '---\ndate: 2023-05-08\nspeaker: "Caroline"\ntime: "13:56"\n---\nCaroline: yes, in May!\n'
SECTIONS = "---\ndate: 2024-01-02\n---\n# Trip\n\n## Day one\n\nSki.\n\n## Day two\n\nSnow.\n"


def chunker(*keys: str) -> MarkdownChunker:
    return MarkdownChunker(MarkdownChunkerSettings(context_keys=list(keys)))


def test_default_is_the_notes_text_alone() -> None:
    assert [c.text for c in MarkdownChunker().chunk("t.md", TURN)] == ["Caroline: yes, in May!"]


def test_the_day_heads_the_turn() -> None:
    (chunk,) = chunker("date").chunk("t.md", TURN)
    assert chunk.text == "Monday 8 May 2023\nCaroline: yes, in May!"
    assert (chunk.start_line, chunk.end_line, chunk.heading) == (6, 6, "")


def test_keys_in_their_order_and_missing_keys_skipped() -> None:
    (chunk,) = chunker("speaker", "missing", "date").chunk("t.md", TURN)
    assert chunk.text.split("\n")[0] == "Caroline, Monday 8 May 2023"


def test_every_chunk_gets_the_line_above_its_breadcrumb() -> None:
    texts = [c.text for c in chunker("date").chunk("s.md", SECTIONS)]
    assert texts == [
        "Tuesday 2 January 2024\nTrip > Day one\nSki.",
        "Tuesday 2 January 2024\nTrip > Day two\nSnow.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Caroline: no frontmatter\n",
        "---\ndate: [unclosed\n---\nCaroline: bad yaml\n",
        "---\n- a list\n---\nCaroline: not a mapping\n",
    ],
)
def test_no_usable_frontmatter_means_no_line(text: str) -> None:
    (chunk,) = chunker("date").chunk("t.md", text)
    assert chunk.text == text.rstrip("\n").split("\n")[-1]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (dt.date(2023, 5, 8), "Monday 8 May 2023"),
        (dt.datetime(2023, 5, 8, 13, 56), "Monday 8 May 2023"),
        ("2023-05-08", "Monday 8 May 2023"),
        ("  a  spaced   name ", "a spaced name"),
        (["ski", dt.date(2024, 1, 2)], "ski, Tuesday 2 January 2024"),
        (3, "3"),
        (True, ""),
        (None, ""),
        ({"nested": 1}, ""),
    ],
)
def test_render_value(value: object, words: str) -> None:
    assert render_value(value) == words


def test_fields_and_line() -> None:
    fields = frontmatter_fields(TURN.split("\n"))
    assert fields["speaker"] == "Caroline"
    assert context_line(fields, ["time", "date"]) == "13:56, Monday 8 May 2023"
    assert context_line(fields, []) == ""


def test_context_keys_must_be_a_list_of_names() -> None:
    with pytest.raises(ValidationError):
        MarkdownChunkerSettings(context_keys="date")  # type: ignore[arg-type]


def test_through_the_config_both_arms_see_the_day(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    init_workspace(root)
    note = root / "daily" / "2023-05-08" / "t1.md"
    note.parent.mkdir(parents=True)
    note.write_text(TURN, "utf-8")
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    plugins.collect()
    override = "components.chunkers[.md].settings.context_keys=[date]"
    with Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=[override]) as reme:
        reme.index()
        (hit,) = reme.search("what happened on a monday", expand=False).hits
        assert hit.text == "Monday 8 May 2023\nCaroline: yes, in May!"
        assert (hit.start_line, hit.end_line) == (6, 6)
    assert note.read_text("utf-8") == TURN  # indexed text only: the note is not changed
