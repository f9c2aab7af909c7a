"""memory summarize in memory.mode agentic: the agent wrapper (toolloop on the scripted model)
writes memories as notes in the scope's folder; they are put back and written as records."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme_core.errors import ConfigError, LlmError
from reme_core.memory import MemoryApi
from tests.memory.support import files_under, open_workspace, scripted, ticking

CHAT = [{"role": "user", "content": "I'm Alice. Please always use 4 spaces, never tabs."}]
FOLDER = "digest/personal/alice"
AGENTIC = ["memory.mode=agentic", "components.agent_wrapper={name: toolloop}"]


def write(path: str, content: str) -> dict:
    return {"tool": "write", "args": {"path": path, "content": content}}


def test_a_memory_the_agent_writes_becomes_a_record(tmp_path: Path):
    script = [
        write("digest/wiki/elsewhere.md", "# Not in the scope\n"),  # refused: outside the folder
        write(
            f"{FOLDER}/tabs.md",
            "---\nwhen_to_use: Formatting code for Alice\n---\n\nUses 4 spaces, never tabs.\n",
        ),
        {"answer": "done"},
    ]
    with open_workspace(tmp_path / "ws", scripted(tmp_path, script), *AGENTIC) as reme:
        done = MemoryApi(reme, clock=ticking()).summarize(CHAT, user_name="alice")
        (record,) = done.added
        assert record.content == "Uses 4 spaces, never tabs."
        assert record.when_to_use == "Formatting code for Alice"
        # The agent's own file was put back; the record lives where records do, with its id.
        assert files_under(reme.root) == [f"{FOLDER}/{record.memory_id}.md"]
        assert done.usage.calls == 3  # the agent's model calls are counted


def test_editing_a_record_note_refines_that_record(tmp_path: Path):
    with open_workspace(tmp_path / "ws", scripted(tmp_path, []), *AGENTIC) as reme:
        api = MemoryApi(reme, clock=ticking())
        first = api.add("Uses 4 spaces, never tabs.", user_name="alice").record
        path = f"{FOLDER}/{first.memory_id}.md"
        text = (reme.root / path).read_text(encoding="utf-8")
    edited = text.replace("Uses 4 spaces, never tabs.", "Uses 2 spaces in YAML, 4 in Python.")
    script = [write(path, edited), {"answer": "done"}]
    with open_workspace(tmp_path / "ws", scripted(tmp_path, script), *AGENTIC) as reme:
        done = MemoryApi(reme, clock=ticking()).summarize(CHAT, user_name="alice")
        assert [r.memory_id for r in done.updated] == [first.memory_id] and done.added == []
        assert done.updated[0].content == "Uses 2 spaces in YAML, 4 in Python."


def test_a_note_that_holds_no_memory_writes_nothing(tmp_path: Path):
    script = [write(f"{FOLDER}/empty.md", "---\nwhen_to_use: x\n---\n\n"), {"answer": "done"}]
    with open_workspace(tmp_path / "ws", scripted(tmp_path, script), *AGENTIC) as reme:
        with pytest.raises(LlmError, match="is not a memory"):
            MemoryApi(reme, clock=ticking()).summarize(CHAT, user_name="alice")
        assert files_under(reme.root) == []


def test_agentic_mode_needs_an_agent_wrapper(tmp_path: Path):
    overrides = ["memory.mode=agentic", "components.agent_wrapper=null"]
    with (
        open_workspace(tmp_path / "ws", scripted(tmp_path, []), *overrides) as reme,
        pytest.raises(ConfigError, match=r"needs components\.agent_wrapper"),
    ):
        MemoryApi(reme, clock=ticking()).summarize(CHAT, user_name="alice")
