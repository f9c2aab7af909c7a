"""The markdown chunker's ``keyword_context_keys`` / ``vector_context_keys``: a frontmatter line
above only that arm's text (``Chunk.keyword_text`` / ``vector_text``); ``text`` stays the note's."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV
from pydantic import ValidationError

from reme_core.errors import RemeError
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.workspace.layout import init_workspace
from reme_plugins.chunker_markdown import MarkdownChunker, MarkdownChunkerSettings

TURN = (
    '---\ndate: 2023-05-08\nspeaker: "Caroline"\nreplying_to: "Melanie: any plans?"\n---\n'
    "Caroline: yes, in May!\n"
)


def chunk_of(**settings: list[str]):  # type: ignore[no-untyped-def]
    (chunk,) = MarkdownChunker(MarkdownChunkerSettings(**settings)).chunk("t.md", TURN)
    return chunk


def test_unset_keys_leave_both_arms_on_the_text() -> None:
    chunk = chunk_of()
    assert (chunk.text, chunk.keyword_text, chunk.vector_text) == (
        "Caroline: yes, in May!",
        None,
        None,
    )


def test_each_arm_gets_its_own_line() -> None:
    chunk = chunk_of(keyword_context_keys=["date"], vector_context_keys=["replying_to"])
    assert chunk.text == "Caroline: yes, in May!"
    assert chunk.keyword_text == "Monday 8 May 2023\nCaroline: yes, in May!"
    assert chunk.vector_text == "Melanie: any plans?\nCaroline: yes, in May!"
    assert (chunk.start_line, chunk.end_line) == (6, 6)


def test_shared_context_stays_in_the_text_and_heads_both_arms() -> None:
    chunk = chunk_of(context_keys=["speaker"], vector_context_keys=["replying_to"])
    assert chunk.text == "Caroline\nCaroline: yes, in May!"
    assert chunk.keyword_text is None
    assert chunk.vector_text == "Melanie: any plans?\nCaroline\nCaroline: yes, in May!"


def test_a_note_without_the_keys_is_unaffected() -> None:
    settings = MarkdownChunkerSettings(
        keyword_context_keys=["date"], vector_context_keys=["replying_to"]
    )
    (chunk,) = MarkdownChunker(settings).chunk("n.md", "# Title\n\nBody.\n")
    assert (chunk.text, chunk.keyword_text, chunk.vector_text) == ("Title\nBody.", None, None)


@pytest.mark.parametrize("key", ["keyword_context_keys", "vector_context_keys"])
def test_keys_must_be_a_list_of_names(key: str) -> None:
    with pytest.raises(ValidationError):
        MarkdownChunkerSettings(**{key: "date"})  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        MarkdownChunkerSettings(**{key: [{"a": 1}]})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "override",
    [
        "components.chunkers[.md].settings.vector_context_keys=7",
        "components.chunkers[.md].settings.vector_context_key=[replying_to]",
    ],
)
def test_config_refuses_a_bad_value_or_an_unknown_key(tmp_path: Path, override: str) -> None:
    root = tmp_path / "ws"
    init_workspace(root)
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    plugins.collect()
    with pytest.raises(RemeError, match="context_key"):
        Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=[override]).close()
