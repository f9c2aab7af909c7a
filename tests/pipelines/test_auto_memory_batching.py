"""auto_memory batching: turns are saved at once, summarised once enough are pending or old enough.

A Stop-like run sends one new turn; ``min_pending_turns`` decides when a model call is worth it,
``flush_after_minutes`` bounds how long a turn waits, ``flush: true`` summarises now and the
``auto_memory_flush`` job sweeps idle sessions. The clock is the ``now`` param (the scheduler's
clock), never a sleep.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from reme_core.errors import ConfigError
from reme_core.pipelines.engine import PipelineError
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.server.jobs import run_job, scheduler_for
from reme_core.server.scheduler import Scheduler
from reme_core.service.operations import OPERATIONS
from reme_core.settings import load_settings
from reme_plugins.auto_memory.cursor import load_cursor
from tests.fake_llm import RecordingLlm, plugins_with

CONTENT = {
    1: "I deployed v0.9.3 and prod is down: nginx returns 502 on /healthz.",
    2: "Run: journalctl -u larkspur.service -n 50 --no-pager",
    3: "Last lines: ModuleNotFoundError: No module named 'orjson'",
    4: "Regenerate with pip-compile --generate-hashes -o requirements.lock",
    5: "Done, /healthz is 200 again after v0.9.4.",
}
NOTE = "daily/2026-11-02/session-deploy-failure.md"


def batched(n: int, minutes: float = 30) -> str:
    settings = f"{{min_pending_turns: {n}, flush_after_minutes: {minutes}}}"
    return f"pipelines.auto_memory.steps=[{{name: auto_memory, settings: {settings}}}]"


def turn(n: int, minute: int, hour: int = 16, session: str = "s1") -> dict[str, Any]:
    return {
        "id": f"{session}-m{n}",
        "role": "user" if n % 2 else "assistant",
        "content": CONTENT[(n - 1) % 5 + 1],
        "timestamp": f"2026-11-02T{hour:02d}:{minute:02d}:00Z",
    }


def at(minute: int, hour: int = 16) -> str:
    return f"2026-11-02T{hour:02d}:{minute:02d}:00Z"


def reme_time(hour: int, minute: int) -> dt.datetime:
    return dt.datetime(2026, 11, 2, hour, minute, tzinfo=dt.UTC)


def draft(lines: list[int], name: str = "Deploy failure") -> dict[str, Any]:
    """A note draft whose timeline repeats each batch turn's words, so the note shows them."""
    return {
        "trivial": False,
        "name": name,
        "description": "The v0.9.3 deploy and its fix.",
        "summary": "Prod went down after the v0.9.3 deploy.",
        "facts": [],
        "timeline": [{"line": n, "text": CONTENT[(n - 1) % 5 + 1]} for n in lines],
    }


@pytest.fixture
def plugins() -> Plugins:
    return plugins_with(RecordingLlm)


@pytest.fixture
def open_ws(open_reme: Callable[..., Reme], plugins: Plugins) -> Callable[..., Reme]:
    def open_(script: list[Any] | None, *extra: str) -> Reme:
        return open_reme(plugins, extra, script)

    return open_


def calls(reme: Reme) -> list[str]:
    """The user prompt of each model call so far."""
    assert isinstance(reme.llm, RecordingLlm)
    return reme.llm.prompts()


def stop(reme: Reme, n: int, minute: int, now: int | None = None, **params: Any) -> dict:
    """One Stop-like call: a single new turn, the clock at ``now`` (default: the turn's time)."""
    msg = turn(n, minute)
    state = {"session_id": "s1", "messages": [msg], "now": at(now or minute), **params}
    return reme.run("auto_memory", state).outputs


def saved_ids(root: Path, session: str = "s1") -> list[str]:
    text = (root / f"sessions/{session}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line)["id"] for line in text.splitlines()]


def notes(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.glob("daily/*/*.md"))


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".reme" not in p.relative_to(root).parts
    }


# -- deferral and flush ----------------------------------------------------------------------


def test_five_single_turn_calls_with_n3_make_one_call_and_the_flush_a_second(open_ws, root):
    # Calls 1-2 defer; call 3 has 3 pending and summarises lines 1-3; calls 4-5 defer again;
    # the flush summarises lines 4-5 together: two model calls for five turns, not five.
    reme = open_ws([draft([1, 2, 3]), draft([4, 5])], batched(3))
    outs = [stop(reme, n, 40 + n) for n in range(1, 6)]
    assert [o["status"] for o in outs] == [
        "deferred",
        "deferred",
        "written",
        "deferred",
        "deferred",
    ]
    assert [o["pending"] for o in outs] == [1, 2, 0, 1, 2]
    assert [o["turns"] for o in outs] == [0, 0, 3, 0, 0]
    assert len(calls(reme)) == 1
    assert saved_ids(root) == [f"s1-m{n}" for n in range(1, 6)]  # every turn saved at once
    first = calls(reme)[0].split("New turns to record:")[1]
    assert all(CONTENT[n] in first for n in (1, 2, 3)) and CONTENT[4] not in first

    flushed = reme.run(
        "auto_memory", {"session_id": "s1", "messages": [], "flush": True, "now": at(46)}
    ).outputs
    assert flushed["status"] == "updated" and flushed["turns"] == 2 and flushed["pending"] == 0
    assert len(calls(reme)) == 2
    second = calls(reme)[1].split("New turns to record:")[1]
    assert CONTENT[4] in second and CONTENT[5] in second and CONTENT[3] not in second
    assert notes(root) == [NOTE]
    text = (root / NOTE).read_text(encoding="utf-8")
    for n in range(1, 6):
        assert f"{CONTENT[n]} ([[sessions/s1.jsonl#L{n}]])" in text
    cursor = load_cursor(reme.state_dir, "s1")
    assert cursor.line == 5 and cursor.pending_since is None


def test_a_deferred_call_saves_the_transcript_and_writes_no_note(open_ws, root):
    reme = open_ws([], batched(3))
    result = reme.run("auto_memory", {"session_id": "s1", "messages": [turn(1, 41)], "now": at(41)})
    out = result.outputs
    assert out["status"] == "deferred" and out["deferred"] is True and out["pending"] == 1
    assert out["note"] is None and out["notes"] == [] and out["changed"] == []
    assert out["added"] == 1 and out["turns"] == 0
    assert result.verbs == ["APPEND sessions/s1.jsonl"] and result.usage.calls == 0
    assert saved_ids(root) == ["s1-m1"] and notes(root) == []
    cursor = load_cursor(reme.state_dir, "s1")
    assert cursor.line == 0 and cursor.pending_since is not None
    assert cursor.pending_since.isoformat() == "2026-11-02T16:41:00+00:00"
    assert cursor.pipeline == "auto_memory"


def test_flush_with_nothing_pending_is_a_no_op(open_ws, root):
    reme = open_ws([draft([1, 2, 3])], batched(3))
    for n in (1, 2, 3):
        stop(reme, n, 40 + n)
    assert len(calls(reme)) == 1
    before = tree(root)
    for session in ("s1", "never-seen"):
        result = reme.run("auto_memory", {"session_id": session, "messages": [], "flush": True})
        assert result.outputs["status"] == "unchanged" and result.outputs["pending"] == 0
        assert result.usage.calls == 0 and result.verbs == []
    assert len(calls(reme)) == 1 and tree(root) == before


def test_old_pending_turns_are_summarised_by_the_next_call_however_few(open_ws, root):
    reme = open_ws([draft([1, 2])], batched(10, minutes=30))
    assert stop(reme, 1, 0)["status"] == "deferred"
    assert stop(reme, 2, 20, now=29)["status"] == "deferred"  # the oldest is 29 minutes old
    out = stop(reme, 2, 20, now=30)  # a resend adds nothing, but now the oldest is 30 minutes old
    assert out["status"] == "written" and out["turns"] == 2 and out["added"] == 0
    assert len(calls(reme)) == 1


def test_min_pending_turns_1_summarises_every_call(open_ws, root):
    reme = open_ws([draft([1]), draft([2])], "pipelines.auto_memory.steps=[{name: auto_memory}]")
    assert [stop(reme, n, 40 + n)["status"] for n in (1, 2)] == ["written", "updated"]
    assert len(calls(reme)) == 2


def test_without_a_model_nothing_is_deferred(open_ws, root):
    # No model call to save: the verbatim excerpt is written at once, as before.
    reme = open_ws(None, batched(3))
    out = stop(reme, 1, 41)
    assert out["status"] == "unsummarised" and out["deferred"] is False and notes(root)


def test_a_failed_call_leaves_the_batch_pending_for_one_later_call(open_ws, root):
    reme = open_ws([{"error": "HTTP 503"}, draft([1, 2, 3])], batched(3))
    stop(reme, 1, 41)
    stop(reme, 2, 42)
    with pytest.raises(PipelineError, match="stay pending"):
        stop(reme, 3, 43)
    assert notes(root) == [] and saved_ids(root) == ["s1-m1", "s1-m2", "s1-m3"]
    cursor = load_cursor(reme.state_dir, "s1")
    assert cursor.line == 0 and cursor.pending_since is not None  # the idle job sees it too
    out = reme.run("auto_memory", {"session_id": "s1", "messages": [], "now": at(44)}).outputs
    assert out["status"] == "written" and out["turns"] == 3
    assert len(calls(reme)) == 2 and calls(reme)[0] == calls(reme)[1]  # the same batch again


def test_concurrent_calls_on_one_session_still_make_one_call(open_ws, root):
    # Serialised by the session lock: one call sees 1 pending and defers, the other sees 2.
    reme = open_ws([draft([1, 2])], batched(2))
    results: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def call(n: int) -> None:
        try:
            results.append(stop(reme, n, 40 + n, now=45))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(n,)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(r["status"] for r in results) == ["deferred", "written"]
    assert len(calls(reme)) == 1 and len(notes(root)) == 1


# -- the idle flush --------------------------------------------------------------------------


def test_the_idle_flush_job_summarises_old_sessions_and_leaves_fresh_ones(open_ws, root):
    reme = open_ws([draft([1], name="Old session"), draft([1], name="Fresh session")], batched(6))
    for session, minute in (("old", 0), ("fresh", 50)):
        msg = turn(1, minute, session=session)
        state = {"session_id": session, "messages": [msg], "now": at(minute)}
        assert reme.run("auto_memory", state).outputs["status"] == "deferred"

    first = run_job(reme, "auto_memory_flush", now=reme_time(17, 0))
    assert first.summary == "1 session(s) flushed, 0 failed, 1 still waiting; 1 model call(s), " + (
        f"{first.details['tokens']} tokens"
    )
    assert first.details["flushed"] == ["old"] and first.details["waiting"] == 1
    assert first.details["pipelines"] == ["auto_memory", "auto_memory_cc", "auto_memory_codex"]
    assert notes(root) == ["daily/2026-11-02/session-old-session.md"]
    assert load_cursor(reme.state_dir, "fresh").pending_since is not None
    assert load_cursor(reme.state_dir, "old").pending_since is None

    second = run_job(reme, "auto_memory_flush", now=reme_time(17, 19))  # fresh: 29 min old
    assert second.details["flushed"] == [] and len(calls(reme)) == 1
    third = run_job(reme, "auto_memory_flush", now=reme_time(17, 20))
    assert third.details["flushed"] == ["fresh"] and third.details["waiting"] == 0
    assert len(calls(reme)) == 2 and len(notes(root)) == 2
    idle = run_job(reme, "auto_memory_flush", now=reme_time(18, 0))
    assert idle.summary == "0 session(s) flushed, 0 failed, 0 still waiting"


def test_the_idle_flush_reports_a_failed_session_and_keeps_it_pending(open_ws, root):
    reme = open_ws([{"error": "HTTP 503"}], batched(6))
    reme.run("auto_memory", {"session_id": "s1", "messages": [turn(1, 0)], "now": at(0)})
    result = run_job(reme, "auto_memory_flush", now=reme_time(17, 0))
    assert result.details["flushed"] == []
    [failed] = result.details["failed"]
    assert failed["session_id"] == "s1" and "HTTP 503" in failed["error"]
    assert result.summary.startswith("0 session(s) flushed, 1 failed")
    assert load_cursor(reme.state_dir, "s1").pending_since is not None and notes(root) == []


def test_the_scheduler_runs_the_flush_every_15_minutes_on_its_clock(open_ws, root):
    reme = open_ws([draft([1])], batched(6))
    reme.run("auto_memory", {"session_id": "s1", "messages": [turn(1, 0)], "now": at(0)})
    clock = {"now": reme_time(16, 1)}
    sched = scheduler_for(reme, clock=lambda: clock["now"])
    assert sched.crons["auto_memory_flush"] == "*/15 * * * *"
    sched.load()
    assert sched.run_pending() == []  # 16:01: the next run is at 16:15
    clock["now"] = reme_time(16, 15)
    [record] = sched.run_pending()
    assert record.job == "auto_memory_flush" and record.ok and record.details["waiting"] == 1
    clock["now"] = reme_time(16, 30)
    [record] = sched.run_pending()
    assert record.ok and record.details["flushed"] == ["s1"] and len(calls(reme)) == 1


def test_the_api_operation_passes_flush_only_when_given(open_ws, root):
    reme = open_ws([draft([1])], batched(3))
    op = OPERATIONS["auto_memory"]
    # No `now` through the API: the turn's age is measured on the real clock (it has no time,
    # so it counts from when it was saved).
    fresh = {"id": "m1", "role": "user", "content": CONTENT[1]}
    first = op.call(reme, {"session_id": "s1", "messages": [fresh]})
    assert first["outputs"]["status"] == "deferred" and "flush" not in first["params"]
    flushed = op.call(reme, {"session_id": "s1", "flush": True})
    assert flushed["outputs"]["status"] == "written" and flushed["params"]["flush"] is True
    with pytest.raises(ValidationError):
        op.call(reme, {"session_id": "s1", "flush": "idle"})  # the sweep is the server's job


def test_flush_idle_takes_no_session_id(open_ws):
    reme = open_ws([], batched(3))
    with pytest.raises(PipelineError, match="takes no session_id"):
        reme.run("auto_memory", {"session_id": "s1", "flush": "idle"})
    with pytest.raises(PipelineError, match="`flush` must be true, false or idle"):
        reme.run("auto_memory", {"session_id": "s1", "messages": [], "flush": "soon"})


# -- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "key"),
    [
        ("min_pending_turns: 0", "min_pending_turns"),
        ("flush_after_minutes: 0", "flush_after_minutes"),
        ("flush_after_minutes: forever", "flush_after_minutes"),
        ("min_pending: 3", "min_pending"),
    ],
)
def test_bad_batching_settings_name_their_key(open_ws, setting: str, key: str):
    override = f"pipelines.auto_memory_cc.steps=[{{name: auto_memory, settings: {{{setting}}}}}]"
    with pytest.raises(ConfigError) as info:
        open_ws([], override)
    assert f"pipelines.auto_memory_cc.steps[0].settings.{key}" in str(info.value)


def test_a_bad_flush_cron_names_its_key(tmp_path: Path):
    settings = load_settings(overrides=["server.schedule.auto_memory_flush='every 15'"], env={})
    with pytest.raises(ConfigError, match=r"server\.schedule\.auto_memory_flush"):
        Scheduler(settings, lambda name: None, tmp_path / "scheduler.json")  # type: ignore[arg-type,return-value]


def test_defaults_batch_claude_code_sessions_but_not_the_plain_api(open_ws):
    reme = open_ws([])
    steps = {
        name: reme.settings.pipelines[name].steps for name in ("auto_memory", "auto_memory_cc")
    }
    assert steps["auto_memory"][0].settings == {}
    assert steps["auto_memory_cc"][1].settings == {"min_pending_turns": 6}
    assert reme.settings.server.schedule.auto_memory_flush == "*/15 * * * *"


# -- Claude Code sessions --------------------------------------------------------------------

CC_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "auto_memory" / "claude"
CC_SID = "7b1f3c2a-5d4e-4f60-9a8b-0c1d2e3f4a5b"


def cc_pipeline(tmp_path: Path, n: int) -> str:
    claude = tmp_path / "claude"
    if not claude.exists():
        shutil.copytree(CC_EXAMPLE, claude)
    reader = f"{{name: claude_code_transcript, settings: {{claude_dir: '{claude}'}}}}"
    writer = f"{{name: auto_memory, settings: {{min_pending_turns: {n}}}}}"
    return f"pipelines.auto_memory_cc.steps=[{reader}, {writer}]"


def test_a_claude_code_session_waits_until_its_session_end_flush(open_ws, root, tmp_path):
    # The sample session has 5 turns: fewer than 6, so the Stop-like call only saves them.
    reme = open_ws([draft([1])], cc_pipeline(tmp_path, 6))
    out = reme.run("auto_memory_cc", {"session_id": CC_SID, "now": at(50)}).outputs
    assert out["status"] == "deferred" and out["pending"] == 5 and notes(root) == []
    assert len(saved_ids(root, CC_SID)) == 5
    cursor = load_cursor(reme.state_dir, CC_SID)
    assert cursor.pipeline == "auto_memory_cc" and "larkspur" in (cursor.hint or "")
    # SessionEnd: flush. Claude Code has nothing new; the saved turns go in one call, with the
    # project hint the deferred call saw.
    out = reme.run("auto_memory_cc", {"session_id": CC_SID, "flush": True}).outputs
    assert out["status"] == "written" and out["turns"] == 5 and len(calls(reme)) == 1
    assert "larkspur" in calls(reme)[0]


def test_the_idle_flush_runs_a_claude_code_session_through_its_own_pipeline(
    open_ws, root, tmp_path
):
    reme = open_ws([draft([1])], cc_pipeline(tmp_path, 6))
    reme.run("auto_memory_cc", {"session_id": CC_SID, "now": at(50)})
    result = run_job(reme, "auto_memory_flush", now=reme_time(18, 0))
    # The auto_memory sweep leaves it to auto_memory_cc (its model and settings), which reads no
    # Claude Code file for a sweep.
    assert result.details["flushed"] == [CC_SID] and result.details["waiting"] == 0
    assert len(calls(reme)) == 1 and len(notes(root)) == 1
