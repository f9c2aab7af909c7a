"""summarize: one structured model call per request, scripted here; refine, dedupe, refuse garbage."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme_core.errors import ConfigError, LlmError, WorkspaceError
from reme_core.memory import MemoryApi
from tests.memory.support import files_under, open_workspace, scripted, ticking

CHAT = [
    {"role": "user", "content": "I'm Alice. Please always use 4 spaces, never tabs."},
    {"role": "assistant", "content": "Noted: 4 spaces."},
    {"role": "user", "content": [{"type": "text", "text": "And I review PRs in the morning."}]},
]
TOOL_CHAT = [
    {"role": "user", "content": "Find the bm25s docs."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"function": {"name": "web_search", "arguments": '{"q": "bm25s"}'}}],
    },
    {"role": "tool", "name": "web_search", "content": "ok: 3 results in 1.1 s"},
    {"role": "tool", "name": "web_search", "content": "error: timeout after 30 s"},
]


def memory(content: str, **more: object) -> dict[str, object]:
    return {"content": content, "when_to_use": "", "refines": None, **more}


def test_personal_memories_are_added_then_refined_and_repeats_change_nothing(tmp_path: Path):
    first = {
        "memories": [
            memory("Uses 4 spaces, never tabs.", when_to_use="Formatting code for Alice"),
            memory("Reviews pull requests in the morning."),
        ]
    }
    second = {
        "memories": [
            memory("Uses 2 spaces in YAML, 4 in Python.", refines="@4 spaces"),
            memory("reviews pull requests  in the MORNING."),
        ]
    }
    with open_workspace(tmp_path / "ws", scripted(tmp_path, [first, second], "reads_ids")) as reme:
        api = MemoryApi(reme, clock=ticking())
        done = api.summarize(CHAT, user_name="alice", sources=["sessions/s1.jsonl"])
        assert [r.content for r in done.added] == [
            "Uses 4 spaces, never tabs.",
            "Reviews pull requests in the morning.",
        ]
        assert done.added[0].when_to_use == "Formatting code for Alice"
        assert done.added[0].sources == ["sessions/s1.jsonl"]
        assert done.usage.calls == 1 and done.history is not None
        assert reme.history.entries(1)[0].message.startswith(
            "reme memory summarize: 2 added, 0 updated (user_name=alice)"
        )
        prompt = reme.llm.prompts("MemoryExtraction")[0]
        assert "4 spaces, never tabs" in prompt and "review PRs in the morning" in prompt
        assert "(none yet)" in prompt

        spaces, reviews = done.added
        again = api.summarize(CHAT, user_name="alice")
        assert [r.memory_id for r in again.updated] == [spaces.memory_id]
        assert again.added == [] and again.unchanged == [reviews.memory_id]
        refined = api.get(spaces.memory_id, user_name="alice")
        assert refined.content == "Uses 2 spaces in YAML, 4 in Python."
        assert refined.when_to_use == "Formatting code for Alice"  # kept: the model gave none
        assert refined.sources == ["sessions/s1.jsonl"]
        # The second prompt offered the existing records by id.
        assert f'<memory id="{spaces.memory_id}">' in reme.llm.prompts("MemoryExtraction")[1]


def test_the_model_cannot_refine_or_see_another_scopes_records(tmp_path: Path):
    with open_workspace(tmp_path / "ws") as setup:
        bob = MemoryApi(setup).add("Bob's secret: prefers tabs.", user_name="bob").record
    answer = {"memories": [memory("Prefers spaces.", refines=bob.memory_id)]}
    with open_workspace(tmp_path / "ws", scripted(tmp_path, [answer], llm="recording")) as reme:
        api = MemoryApi(reme)
        done = api.summarize(CHAT, user_name="alice")
        assert "Bob's secret" not in reme.llm.prompts()[0]
        assert bob.memory_id in done.warnings[0] and "added as a new one" in done.warnings[0]
        assert len(done.added) == 1 and done.added[0].user_name == "alice"
        assert api.get(bob.memory_id, user_name="bob").content == "Bob's secret: prefers tabs."


def test_tool_and_procedural_memories_carry_their_metadata(tmp_path: Path):
    answers = [
        {
            "memories": [
                memory(
                    "Short queries with the library name work; long ones time out.",
                    when_to_use="Searching for library docs",
                    success_rate=0.5,
                    avg_cost=1.1,
                    cost_unit="seconds",
                    tips=["quote the library name", " "],
                    outcome="success",  # not a tool key: ignored
                )
            ]
        },
        {
            "memories": [
                memory("Run the smoke import first; the plain restart failed.", outcome="mixed")
            ]
        },
    ]
    with open_workspace(tmp_path / "ws", scripted(tmp_path, answers)) as reme:
        api = MemoryApi(reme)
        tool = api.summarize(TOOL_CHAT, tool_name="web_search").added[0]
        assert tool.memory_type == "tool" and tool.path.startswith("digest/wiki/tools/web_search/")
        assert tool.metadata == {
            "success_rate": 0.5,
            "avg_cost": 1.1,
            "cost_unit": "seconds",
            "tips": ["quote the library name"],
        }
        task = api.summarize(CHAT, task_name="deploy").added[0]
        assert task.memory_type == "procedural" and task.metadata == {"outcome": "mixed"}
        assert [
            h.record.memory_id for h in api.retrieve("library queries", tool_name="web_search").hits
        ] == [tool.memory_id]


def test_the_prompt_fits_the_scope_type_and_language(tmp_path: Path):
    answers = [{"memories": []}]
    overrides = [scripted(tmp_path, answers, llm="recording"), "language=zh"]
    with open_workspace(tmp_path / "ws", *overrides) as reme:
        done = MemoryApi(reme).summarize(TOOL_CHAT, tool_name="web_search")
        assert done.added == [] and done.history is None
        system, user = reme.llm.messages[0]
        assert "工具" in system["content"] and "success_rate" in system["content"]
        assert "[tool web_search]\nerror: timeout after 30 s" in user["content"]
        assert '"arguments": "{\\"q\\": \\"bm25s\\"}"' in user["content"]  # the call's parameters


GARBAGE = [
    "I think Alice likes spaces.",  # not JSON
    {"memories": "Alice likes spaces"},  # wrong shape
    {"memories": [{"content": "   "}]},  # an empty memory
]


@pytest.mark.parametrize("answers", [GARBAGE, [{"notes": []}] * 3, [{"error": "HTTP 500"}]])
def test_garbage_from_the_model_is_an_llm_error_and_writes_nothing(tmp_path: Path, answers: list):
    with open_workspace(tmp_path / "ws", scripted(tmp_path, answers)) as reme:
        with pytest.raises(LlmError):
            MemoryApi(reme).summarize(CHAT, user_name="alice")
        assert files_under(reme.root) == []
        assert all("memory" not in e.message for e in reme.history.entries())


def test_without_a_model_summarize_says_how_to_set_one(tmp_path: Path):
    with (
        open_workspace(tmp_path / "ws") as reme,
        pytest.raises(ConfigError, match=r"set components\.llm"),
    ):
        MemoryApi(reme).summarize(CHAT, user_name="alice")


def test_messages_without_text_are_refused_before_the_model_is_called(tmp_path: Path):
    with open_workspace(tmp_path / "ws", scripted(tmp_path, [], llm="recording")) as reme:
        api = MemoryApi(reme)
        with pytest.raises(WorkspaceError, match="no text"):
            api.summarize([{"role": "user", "content": "  "}], user_name="alice")
        with pytest.raises(WorkspaceError, match="role"):
            api.summarize([{"role": "robot", "content": "hi"}], user_name="alice")
        with pytest.raises(WorkspaceError, match="exactly one"):
            api.summarize(CHAT)
        assert reme.llm.calls == []


KEY = "sk-proj-Abcdefghijklmnopqrstuvwxyz012345"
SECRET_CHAT = [
    {"role": "user", "content": f"Deploy with OPENAI_API_KEY={KEY} and db password=hunter2x."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"function": {"name": "deploy", "arguments": f'{{"key": "{KEY}"}}'}}],
    },
    {"role": "tool", "name": "deploy", "content": "ok: deployed"},
]


def test_a_secret_in_the_conversation_never_reaches_a_record_file(tmp_path: Path):
    # The model repeats the secrets anyway (as if from memory): its answer is redacted too.
    answer = {
        "memories": [
            memory(
                f"Deploys need the key {KEY}; password=hunter2x for the db.",
                when_to_use=f"Deploying with {KEY}",
                success_rate=1.0,
                cost_unit=f"Bearer {KEY[8:]}",
                tips=["pass api_key=q8w7e6r5t4"],
            )
        ]
    }
    with open_workspace(tmp_path / "ws", scripted(tmp_path, [answer], llm="recording")) as reme:
        done = MemoryApi(reme).summarize(SECRET_CHAT, tool_name="deploy")
        prompt = reme.llm.prompts("MemoryExtraction")[0]
        assert KEY not in prompt and "hunter2x" not in prompt
        assert "OPENAI_API_KEY=[REDACTED:openai_key] and db password=[REDACTED:secret]" in prompt
        record = done.added[0]
        assert record.content == (
            "Deploys need the key [REDACTED:openai_key]; password=[REDACTED:secret] for the db."
        )
        assert record.when_to_use == "Deploying with [REDACTED:openai_key]"
        assert record.metadata["tips"] == ["pass api_key=[REDACTED:secret]"]
        assert record.metadata["cost_unit"] == "Bearer [REDACTED:bearer_token]"
        written = [(reme.root / path).read_text("utf-8") for path in files_under(reme.root)]
        assert len(written) == 1
        for secret in (KEY, KEY[8:], "hunter2x", "q8w7e6r5t4"):
            assert secret not in written[0]
