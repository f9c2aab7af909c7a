"""auto_memory: a session transcript becomes one note per session and day, updated on later calls.

A recording model (``tests/fake_llm.py``) answers the structured calls and keeps the prompts.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reme_core.cli import cli
from reme_core.components import AgentResult, AgentTask, AgentWrapper, Llm
from reme_core.errors import ConfigError
from reme_core.pipelines.engine import PipelineError
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.workspace import parse_frontmatter
from reme_core.workspace.tools import FileTools
from reme_plugins.auto_memory.cursor import load_cursor
from tests.fake_llm import RecordingLlm, plugins_with

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_MESSAGES = ROOT / "examples" / "auto_memory" / "messages.json"
PIPELINE = "pipelines.auto_memory.steps=[{name: auto_memory}]"
AGENTIC = [
    "pipelines.auto_memory.steps=[{name: auto_memory, settings: {mode: agentic}}]",
    "components.agent_wrapper={name: fake_agent}",
]


def turn(n: int, role: str, content: str, minute: int, day: int = 2) -> dict[str, Any]:
    return {
        "id": f"m{n}",
        "role": role,
        "content": content,
        "timestamp": f"2026-11-{day:02d}T16:{minute:02d}:00Z",
    }


FIRST = [
    turn(1, "user", "I deployed v0.9.3 and prod is down: nginx returns 502 on /healthz.", 41),
    turn(2, "assistant", "Run: journalctl -u larkspur.service -n 50 --no-pager", 42),
    turn(3, "user", "Last lines: ModuleNotFoundError: No module named 'orjson'", 47),
]
SECOND = [
    turn(4, "assistant", "Regenerate with pip-compile --generate-hashes -o requirements.lock", 48),
    turn(5, "user", "Done, /healthz is 200 again after v0.9.4.", 53),
]
NOTE = "daily/2026-11-02/session-deploy-failure-missing-orjson.md"


def draft(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "trivial": False,
        "name": "Deploy failure: missing orjson",
        "description": "The v0.9.3 deploy crash-looped because orjson was not installed.",
        "summary": "Prod went down after the v0.9.3 deploy.",
        "facts": [
            {
                "text": "The service could not import orjson.",
                "quote": "ModuleNotFoundError: No module named 'orjson'",
                "lines": [3],
            }
        ],
        "timeline": [
            {"line": 1, "text": "Prod down after deploying v0.9.3."},
            {"line": 3, "text": "Traceback found."},
        ],
    }
    return {**base, **changes}


UPDATE = draft(
    summary="Prod went down after the v0.9.3 deploy and came back with v0.9.4.",
    facts=[
        {
            "text": "The lock file is regenerated with pip-compile.",
            "quote": "pip-compile --generate-hashes -o requirements.lock",
            "lines": [4],
        }
    ],
    timeline=[
        {"line": 1, "text": "an old line must not come back"},
        {"line": 5, "text": "v0.9.4 deployed, /healthz 200."},
    ],
)


class FakeAgent(AgentWrapper):
    """Writes the note path named in the prompt through the confined tools it is given."""

    name = "fake_agent"
    calls: list[tuple[AgentTask, tuple[tuple[str, ...], ...]]] = []
    behaviour: Callable[[str, FileTools], str] | None = None

    def run(self, task: AgentTask, *, tools: FileTools, llm: Llm | None) -> AgentResult:
        FakeAgent.calls.append((task, tools.confinement))
        found = re.search(r"Note path: (\S+)", task.prompt)
        assert found is not None
        assert FakeAgent.behaviour is not None
        answer = FakeAgent.behaviour(found.group(1), tools)
        return AgentResult(answer=answer, changed=[found.group(1)])


@pytest.fixture
def plugins() -> Plugins:
    FakeAgent.calls.clear()
    FakeAgent.behaviour = None
    return plugins_with(RecordingLlm, FakeAgent)


@pytest.fixture
def open_ws(open_reme: Callable[..., Reme], plugins: Plugins) -> Callable[..., Reme]:
    def open_(script: list[Any] | None = None, *extra: str) -> Reme:
        return open_reme(plugins, [PIPELINE, *extra], script)

    return open_


def recorded(reme: Reme) -> RecordingLlm:
    assert isinstance(reme.llm, RecordingLlm)
    return reme.llm


def read_note(root: Path, path: str) -> tuple[dict[str, Any], str]:
    text = (root / path).read_text(encoding="utf-8")
    front, _ = parse_frontmatter(text)
    return front, text


def transcript_lines(root: Path, session: str = "s1") -> list[dict[str, Any]]:
    text = (root / f"sessions/{session}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".reme" not in p.relative_to(root).parts
    }


def timeline(text: str) -> list[str]:
    return text.split("## Timeline\n", 1)[1].strip().splitlines()


# -- structured mode -------------------------------------------------------------------------------


def test_first_call_saves_the_transcript_and_writes_the_note(open_ws, root: Path):
    reme = open_ws([draft()])
    result = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    out = result.outputs
    assert out["status"] == "written" and out["note"] == NOTE and out["changed"] == [NOTE]
    assert out["turns"] == 3 and out["added"] == 3
    assert result.verbs == ["APPEND sessions/s1.jsonl", f"CREATE {NOTE}"]
    assert [m["id"] for m in transcript_lines(root)] == ["m1", "m2", "m3"]
    front, text = read_note(root, NOTE)
    assert front["name"] == "Deploy failure: missing orjson"
    assert front["description"].startswith("The v0.9.3 deploy")
    assert front["session_id"] == "s1" and front["source"] == "[[sessions/s1.jsonl]]"
    assert str(front["date"]) == "2026-11-02"
    assert "summarised" not in front
    # The quote is verbatim, under the fact, which links to the transcript line it came from.
    assert (
        "- The service could not import orjson. ([[sessions/s1.jsonl#L3]])\n"
        "  > ModuleNotFoundError: No module named 'orjson'\n"
    ) in text
    assert timeline(text) == [
        "- 16:41 Prod down after deploying v0.9.3. ([[sessions/s1.jsonl#L1]])",
        "- 16:47 Traceback found. ([[sessions/s1.jsonl#L3]])",
    ]
    # The note and transcript are indexed before the run returns, and the run is in history.
    assert any(h.path == NOTE for h in reme.search("orjson").hits)
    assert result.history is not None


def test_a_later_call_updates_the_same_note_and_touches_no_other_file(open_ws, root: Path):
    reme = open_ws([draft(), UPDATE])
    reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    _, before = read_note(root, NOTE)
    (root / "digest/wiki/other.md").write_text("# Other\n", encoding="utf-8")
    files_before = snapshot(root)
    # The whole conversation is sent again: only the new turns are appended.
    result = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST + SECOND})
    out = result.outputs
    assert out["status"] == "updated" and out["note"] == NOTE and out["added"] == 2
    assert out["turns"] == 2
    assert [m["id"] for m in transcript_lines(root)] == ["m1", "m2", "m3", "m4", "m5"]
    files_after = snapshot(root)
    changed = {p for p in files_after if files_before.get(p) != files_after[p]}
    assert changed == {NOTE, "sessions/s1.jsonl"}
    assert list(root.glob("daily/*/*.md")) == [root / NOTE]
    _, after = read_note(root, NOTE)
    # Timeline: the old entries byte for byte, then the new one; context lines are not re-added.
    old = timeline(before)
    assert timeline(after) == [
        *old,
        "- 16:53 v0.9.4 deployed, /healthz 200. ([[sessions/s1.jsonl#L5]])",
    ]
    assert "Prod went down after the v0.9.3 deploy and came back with v0.9.4." in after
    assert "No module named 'orjson'" in after and "requirements.lock\n" in after
    # The update prompt held the existing note (facts numbered) and the earlier turns as context.
    user = recorded(reme).prompts()[-1]
    assert "F1. - The service could not import orjson." in user
    assert 'line="3"' in user.split("New turns to record:")[0]
    assert 'line="4"' in user.split("New turns to record:")[1]


def test_replaced_facts_are_merged_not_duplicated(open_ws, root: Path):
    merged = draft(
        facts=[
            {
                "text": "orjson was missing because requirements.lock was stale.",
                "quote": "No module named 'orjson'",
                "lines": [3],
                "replaces": [1],
            }
        ],
        timeline=[],
    )
    reme = open_ws([draft(), merged])
    reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    reme.run("auto_memory", {"session_id": "s1", "messages": SECOND})
    _, text = read_note(root, NOTE)
    facts = text.split("## Key facts\n", 1)[1].split("## Timeline", 1)[0]
    assert facts.count("\n- ") == 1
    assert "requirements.lock was stale" in facts and "could not import" not in facts


def test_resending_the_same_turns_changes_nothing(open_ws, root: Path):
    reme = open_ws([draft()])
    reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    before = snapshot(root)
    again = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    assert again.outputs["status"] == "unchanged" and again.outputs["changed"] == []
    assert again.usage.calls == 0 and again.history is None
    assert snapshot(root) == before


def test_messages_without_ids_are_not_duplicated(open_ws, root: Path):
    plain = [{k: v for k, v in m.items() if k != "id"} for m in FIRST]
    reme = open_ws([draft()])
    reme.run("auto_memory", {"session_id": "s1", "messages": plain})
    reme.run("auto_memory", {"session_id": "s1", "messages": plain})
    ids = [m["id"] for m in transcript_lines(root)]
    assert len(ids) == 3 and len(set(ids)) == 3 and all(i.startswith("h-") for i in ids)


def test_hand_edits_to_the_note_survive_an_update(open_ws, root: Path):
    reme = open_ws([draft(), UPDATE])
    reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    text = (root / NOTE).read_text(encoding="utf-8")
    mine = "## Follow-up\n\n- [ ] ask Ana about the CI job\n"
    text = text.replace("source: ", "tags: [deploy]\nsource: ") + "\n" + mine
    (root / NOTE).write_text(text, encoding="utf-8")
    reme.run("auto_memory", {"session_id": "s1", "messages": SECOND})
    front, after = read_note(root, NOTE)
    assert front["tags"] == ["deploy"] and after.endswith(mine)
    assert "v0.9.4 deployed" in after.split("## Follow-up")[0]  # the timeline kept its place


def test_turns_without_a_time_go_to_the_day_they_were_saved(open_ws, root: Path):
    untimed = [{"role": "user", "content": "remember: the staging port is 8081"}]
    reme = open_ws([draft(facts=[], timeline=[])])
    before = dt.datetime.now(dt.UTC).date()
    out = reme.run("auto_memory", {"session_id": "s1", "messages": untimed}).outputs
    after = dt.datetime.now(dt.UTC).date()
    assert out["note"].split("/")[1] in {before.isoformat(), after.isoformat()}
    assert "received" in transcript_lines(root)[0] and "timestamp" not in transcript_lines(root)[0]


def test_a_quote_not_in_the_transcript_is_left_out(open_ws, root: Path):
    invented = draft(
        facts=[{"text": "It failed.", "quote": "Segmentation fault (core dumped)", "lines": [3]}]
    )
    reme = open_ws([invented])
    out = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST}).outputs
    _, text = read_note(root, NOTE)
    assert "Segmentation fault" not in text and "- It failed. ([[sessions/s1.jsonl#L3]])" in text
    assert any("not found verbatim" in w for w in out["warnings"])


def test_trivial_turns_write_no_note_and_are_not_sent_again(open_ws, root: Path):
    chat = [turn(1, "user", "hi!", 1), turn(2, "assistant", "Hello! How can I help?", 2)]
    reme = open_ws([{"trivial": True}])
    result = reme.run("auto_memory", {"session_id": "s1", "messages": chat})
    assert result.outputs["status"] == "trivial" and result.outputs["note"] is None
    assert result.outputs["changed"] == [] and not list(root.glob("daily/**/*.md"))
    again = reme.run("auto_memory", {"session_id": "s1", "messages": []})
    assert again.outputs["status"] == "unchanged" and again.usage.calls == 0


def test_turns_of_different_days_go_to_each_days_note(open_ws, root: Path):
    day2 = draft(name="Deploy follow-up", timeline=[{"line": 4, "text": "lock regenerated"}])
    day2["facts"] = []
    reme = open_ws([draft(), day2])
    late = [turn(4, "assistant", "Regenerate the lock", 5, day=3)]
    out = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST + late}).outputs
    assert [(n["date"], n["status"]) for n in out["notes"]] == [
        ("2026-11-02", "written"),
        ("2026-11-03", "written"),
    ]
    assert out["changed"] == [NOTE, "daily/2026-11-03/session-deploy-follow-up.md"]


def test_the_date_param_overrides_message_times(open_ws, root: Path):
    reme = open_ws([draft()])
    out = reme.run(
        "auto_memory", {"session_id": "s1", "messages": FIRST, "date": "2026-12-24"}
    ).outputs
    assert out["note"] == "daily/2026-12-24/session-deploy-failure-missing-orjson.md"


def test_a_long_backlog_is_split_into_calls_within_the_prompt_budget(open_ws, root: Path):
    long = [turn(n, "user", f"step {n}: " + "word " * 700, n) for n in range(1, 6)]
    second = draft(facts=[], timeline=[{"line": 5, "text": "last step"}])
    reme = open_ws(
        [draft(facts=[], timeline=[{"line": 1, "text": "first step"}]), *[second] * 4],
        "pipelines.auto_memory.steps=[{name: auto_memory, settings: {max_prompt_tokens: 2500}}]",
    )
    out = reme.run("auto_memory", {"session_id": "s1", "messages": long}).outputs
    assert len(recorded(reme).calls) >= 2
    assert out["turns"] == 5 and out["changed"] == [NOTE]
    assert all(len(prompt) < 4 * 2500 for prompt in recorded(reme).prompts())
    _, text = read_note(root, NOTE)
    assert "first step" in text and "last step" in text


# -- failures leave the turns pending ----------------------------------------------------------


def test_a_model_failure_leaves_the_turns_for_the_next_call(open_ws, root: Path):
    reme = open_ws([{"error": "HTTP 503 after 3 attempts"}, draft()])
    with pytest.raises(PipelineError, match=r"lines 1-3 .* stay pending .*HTTP 503"):
        reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    assert len(transcript_lines(root)) == 3  # nothing lost
    assert not list(root.glob("daily/**/*.md"))
    assert load_cursor(reme.state_dir, "s1").line == 0
    result = reme.run("auto_memory", {"session_id": "s1", "messages": []})
    assert result.outputs["status"] == "written" and result.outputs["turns"] == 3
    assert 'line="1"' in recorded(reme).prompts()[-1]
    assert load_cursor(reme.state_dir, "s1").line == 3


def test_garbage_and_truncated_output_is_retried_then_fails_cleanly(open_ws, root: Path):
    garbage = ["not json at all", '{"trivial": false, "name": "cut', {"trivial": False}]
    reme = open_ws(
        [*garbage, draft()],
        "pipelines.auto_memory.steps=[{name: auto_memory, settings: {max_retries: 2}}]",
    )
    with pytest.raises(PipelineError, match="no valid NoteDraft after 3 attempts"):
        reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    assert load_cursor(reme.state_dir, "s1").line == 0
    assert reme.run("auto_memory", {"session_id": "s1", "messages": []}).outputs["note"] == NOTE


def test_two_concurrent_calls_for_one_session_write_one_note(open_ws, root: Path):
    reme = open_ws([draft(), draft()])
    results: list[Any] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            results.append(reme.run("auto_memory", {"session_id": "s1", "messages": FIRST}))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(r.outputs["status"] for r in results) == ["unchanged", "written"]
    assert list(root.glob("daily/**/*.md")) == [root / NOTE]
    assert len(transcript_lines(root)) == 3
    assert len(recorded(reme).calls) == 1


# -- redaction -------------------------------------------------------------------------------------

SECRETS = [
    "sk-proj-Abcdefghijklmnopqrstuvwxyz012345",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFU",
    "hunter2-is-my-password",
    "abcdef0123456789abcdef0123",
]


def test_secrets_are_redacted_before_saving_and_before_the_prompt(open_ws, root: Path):
    leaky = [
        turn(1, "user", f"my key is {SECRETS[0]} and the repo token {SECRETS[1]}", 1),
        turn(2, "assistant", f"The session cookie was {SECRETS[2]}; set password={SECRETS[3]}", 2),
        turn(3, "user", f"curl -H 'Authorization: Bearer {SECRETS[4]}' https://api", 3),
    ]
    reme = open_ws([draft(facts=[], timeline=[])])
    out = reme.run(
        "auto_memory", {"session_id": "s1", "messages": leaky, "hint": f"key {SECRETS[0]}"}
    ).outputs
    saved = (root / "sessions/s1.jsonl").read_text(encoding="utf-8")
    prompt = json.dumps(recorded(reme).messages)
    for secret in SECRETS:
        assert secret not in saved and secret not in prompt
    for kind in ("openai_key", "github_token", "jwt", "secret", "bearer_token"):
        assert f"[REDACTED:{kind}]" in saved
    assert out["redacted"]["openai_key"] == 2
    assert "Authorization: Bearer [REDACTED:bearer_token]" in prompt


# -- no model: a verbatim excerpt, summarised later -----------------------------------------------


def test_without_a_model_the_note_is_a_marked_verbatim_excerpt(open_ws, root: Path):
    reme = open_ws(None)
    out = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST}).outputs
    assert out["status"] == "unsummarised"
    path = out["note"]
    assert path.startswith("daily/2026-11-02/session-")
    front, text = read_note(root, path)
    assert front["summarised"] is False and front["session_id"] == "s1"
    assert front["source"] == "[[sessions/s1.jsonl]]" and front["name"] and front["description"]
    assert "[!warning] Not summarised" in text
    assert "- **user** 16:47 [[sessions/s1.jsonl#L3]]\n  > Last lines: ModuleNotFoundError" in text
    # More turns, still no model: appended to the same excerpt, nothing repeated.
    reme.run("auto_memory", {"session_id": "s1", "messages": FIRST + SECOND})
    _, text = read_note(root, path)
    assert text.count("#L3]]") == 1 and "#L5]]" in text
    assert load_cursor(reme.state_dir, "s1").unsummarised == {path: [1, 2, 3, 4, 5]}
    reme.close()

    with_model = open_ws([draft(timeline=[{"line": 5, "text": "back up"}])])
    result = with_model.run("auto_memory", {"session_id": "s1", "messages": []})
    assert result.outputs["status"] == "updated" and result.outputs["changed"] == [path]
    front, text = read_note(root, path)
    assert "summarised" not in front and front["name"] == "Deploy failure: missing orjson"
    assert "Not summarised" not in text and "## Unsummarised excerpt" not in text
    assert "No module named 'orjson'" in text and "back up" in text
    assert 'line="5"' in recorded(with_model).prompts()[-1]
    assert load_cursor(with_model.state_dir, "s1").unsummarised == {}


def test_an_excerpt_the_model_finds_trivial_is_removed(open_ws, root: Path):
    reme = open_ws(None)
    path = reme.run(
        "auto_memory", {"session_id": "s1", "messages": [turn(1, "user", "hello", 1)]}
    ).outputs["note"]
    reme.close()
    result = open_ws([{"trivial": True}]).run("auto_memory", {"session_id": "s1", "messages": []})
    assert not (root / path).exists()
    assert f"DELETE {path}" in result.verbs


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"messages": FIRST}, "needs a `session_id`"),
        ({"session_id": "../etc", "messages": FIRST}, "session_id '../etc' is not allowed"),
        ({"session_id": "a/b", "messages": FIRST}, "is not allowed"),
        ({"session_id": "x" * 200, "messages": FIRST}, "is not allowed"),
        ({"session_id": "s1"}, "needs a `messages` param"),
        ({"session_id": "s1", "messages": "hello"}, "must be a list"),
        ({"session_id": "s1", "messages": ["hi"]}, r"messages\[0\] must be an object"),
        ({"session_id": "s1", "messages": [{"role": "user"}]}, r"messages\[0\] has no content"),
        (
            {"session_id": "s1", "messages": [*FIRST, {"role": "robot", "content": "x"}]},
            r"messages\[3\]\.role: 'robot' is not one of user, assistant, system, tool",
        ),
        (
            {"session_id": "s1", "messages": [{"role": "user", "content": {"a": 1}}]},
            "content must be text",
        ),
        (
            {"session_id": "s1", "messages": [{**FIRST[0], "timestamp": "yesterday"}]},
            "not an ISO 8601 time",
        ),
        ({"session_id": "s1", "messages": FIRST, "date": "2026-13-45"}, "must be YYYY-MM-DD"),
        ({"session_id": "s1", "messages": FIRST, "hint": 42}, "`hint` must be text"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(open_ws, root: Path, params, message):
    reme = open_ws([draft()])
    before = snapshot(root)
    with pytest.raises(PipelineError, match=message):
        reme.run("auto_memory", params)
    assert snapshot(root) == before
    assert not (reme.state_dir / "auto_memory").exists()
    assert recorded(reme).calls == []


def test_agentic_mode_needs_an_agent_wrapper(open_ws, root: Path):
    reme = open_ws([draft()], AGENTIC[0], "components.agent_wrapper=null")
    with pytest.raises(ConfigError, match=r"needs components\.agent_wrapper"):
        reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    assert not (root / "sessions/s1.jsonl").exists()


# -- agentic mode ----------------------------------------------------------------------------------


def test_agentic_mode_writes_through_tools_confined_to_the_one_note(open_ws, root: Path):
    def write(path: str, tools: FileTools) -> str:
        body = "# Orjson outage\n\n## Timeline\n\n- 16:41 prod down ([[sessions/s1.jsonl#L1]])\n"
        tools.write(path, f"---\nname: Orjson outage\ndescription: Prod was down.\n---\n\n{body}")
        return "done"

    FakeAgent.behaviour = write
    reme = open_ws([], *AGENTIC)
    out = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST}).outputs
    path = "daily/2026-11-02/session-s1.md"
    assert out["status"] == "written" and out["changed"] == [path]
    task, confinement = FakeAgent.calls[0]
    assert confinement == ((path,),)
    assert "ModuleNotFoundError: No module named 'orjson'" in task.prompt
    front, _ = read_note(root, path)
    # The mechanical provenance keys are the code's job, not the agent's.
    assert front["session_id"] == "s1" and front["source"] == "[[sessions/s1.jsonl]]"
    assert load_cursor(reme.state_dir, "s1").line == 3
    assert reme.run("auto_memory", {"session_id": "s1", "messages": []}).outputs["status"] == (
        "unchanged"
    )
    assert len(FakeAgent.calls) == 1


def test_an_agent_that_rewrites_the_timeline_is_rejected(open_ws, root: Path):
    def first(path: str, tools: FileTools) -> str:
        tools.write(
            path,
            "---\nname: N\ndescription: D\n---\n\n## Timeline\n\n- 16:41 down ([[sessions/s1.jsonl#L1]])\n",
        )
        return "done"

    def rewrite(path: str, tools: FileTools) -> str:
        tools.write(path, "---\nname: N\ndescription: D\n---\n\n## Timeline\n\n- replaced\n")
        return "done"

    FakeAgent.behaviour = first
    reme = open_ws([], *AGENTIC)
    path = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST}).outputs["note"]
    _, before = read_note(root, path)
    FakeAgent.behaviour = rewrite
    with pytest.raises(PipelineError, match="timeline is append-only"):
        reme.run("auto_memory", {"session_id": "s1", "messages": SECOND})
    assert read_note(root, path)[1] == before  # restored
    assert load_cursor(reme.state_dir, "s1").line == 3


def test_an_agent_answering_trivial_writes_nothing(open_ws, root: Path):
    FakeAgent.behaviour = lambda path, tools: "TRIVIAL"
    reme = open_ws([], *AGENTIC)
    out = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST}).outputs
    assert out["status"] == "trivial" and not list(root.glob("daily/**/*.md"))
    assert load_cursor(reme.state_dir, "s1").line == 3


def test_agentic_mode_with_the_builtin_toolloop(open_ws, root: Path):
    path = "daily/2026-11-02/session-s1.md"
    content = (
        "---\nname: Orjson outage\ndescription: Prod was down.\n---\n\n# Orjson outage\n\n"
        "## Key facts\n\n- orjson missing ([[sessions/s1.jsonl#L3]])\n"
    )
    script = [
        {"tool": "write", "args": {"path": "digest/wiki/elsewhere.md", "content": "# x\n"}},
        {"tool": "write", "args": {"path": path, "content": content}},
        {"answer": "written"},
    ]
    reme = open_ws(script, AGENTIC[0], "components.agent_wrapper={name: toolloop}")
    out = reme.run("auto_memory", {"session_id": "s1", "messages": FIRST}).outputs
    assert out["status"] == "written" and out["changed"] == [path]
    assert not (root / "digest/wiki/elsewhere.md").exists()  # confined to the one note
    front, _ = read_note(root, path)
    assert front["name"] == "Orjson outage" and front["session_id"] == "s1"


# -- prompts and CLI -------------------------------------------------------------------------------


def test_chinese_prompts_and_headings(open_ws, root: Path):
    reme = open_ws([draft()], "language=zh")
    reme.run("auto_memory", {"session_id": "s1", "messages": FIRST})
    _, text = read_note(root, NOTE)
    assert "## 关键事实" in text and "## 时间线" in text
    assert "需要记录的新轮次" in recorded(reme).prompts()[0]


def test_reme_run_cli_with_the_example_messages(root: Path, tmp_path: Path):
    args = ["run", "auto_memory", "-w", str(root), "--set", PIPELINE, "--set", "timezone=UTC"]
    params = ["--param", "session_id=s1", "--param", f"messages=@{EXAMPLE_MESSAGES}"]
    result = CliRunner().invoke(cli, [*args, *params, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["outputs"]["status"] == "unsummarised" and data["outputs"]["turns"] == 5
    assert data["outputs"]["redacted"] == {"secret": 1}
    assert "dpl_7f3a9c2e41b8" not in (root / "sessions/s1.jsonl").read_text(encoding="utf-8")
    assert (root / data["outputs"]["note"]).is_file()
    bad = CliRunner().invoke(cli, [*args, "--param", "session_id=../x", "--param", "messages=[]"])
    assert bad.exit_code != 0 and "is not allowed" in bad.output


def test_example_script_answers_the_example_messages(open_ws, root: Path):
    script = json.loads((ROOT / "examples/auto_memory/script.json").read_text(encoding="utf-8"))
    reme = open_ws(script)
    messages = json.loads(EXAMPLE_MESSAGES.read_text(encoding="utf-8"))
    out = reme.run("auto_memory", {"session_id": "s1", "messages": messages}).outputs
    assert out["status"] == "written" and out["warnings"] == []
    _, text = read_note(root, out["note"])
    assert "> pip-compile --generate-hashes -o requirements.lock pyproject.toml" in text
