"""compact_tool_result: long outputs cut in context, spilled whole to tool_results/, expired."""

from __future__ import annotations

import os
import time
from pathlib import Path

from reme_core.light import AgentContext
from reme_core.runtime import Reme
from tests.light.msgs import assistant, tool, user

LINES = "".join(f"line {n}: some build output with détails 中文 {n * 7}\n" for n in range(1, 2001))


def loop(*outputs: str) -> list[dict]:
    """A tool loop whose results the model has seen (it answered after the last one)."""
    messages: list[dict] = [user("run the build")]
    for n, output in enumerate(outputs):
        messages += [assistant(None, [(f"call_{n}", "shell")]), tool(f"call_{n}", output)]
    return [*messages, assistant("done")]


def test_round_trip_spill_holds_the_exact_original_and_the_hint_says_where_to_read_on(
    context: AgentContext, reme: Reme, root: Path
):
    messages = loop(LINES)
    messages[2]["name"] = "shell"
    out = context.compact_tool_result(messages, recent_n=0, old_max_bytes=3000)
    cut = out[2]
    assert cut["tool_call_id"] == "call_0" and cut["name"] == "shell" and cut["role"] == "tool"
    assert (root / "tool_results" / "call_0.txt").read_text("utf-8") == LINES
    head, _, hint = cut["content"].rpartition("\n\n[")
    assert len(head.encode()) <= 3000 and LINES.startswith(head)
    assert "tool_results/call_0.txt" in hint
    next_line = int(hint.rsplit("line ", 1)[1].rstrip(".]"))
    # Reading on from the named line through the file tools gives back everything.
    rest = reme.files.read("tool_results/call_0.txt", start_line=next_line)
    shown = "".join(LINES.splitlines(keepends=True)[: next_line - 1])
    assert shown + rest.content == LINES[: len(shown) + len(rest.content)]
    assert LINES.startswith(shown) and rest.content.startswith(f"line {next_line}:")
    assert messages[2]["content"] == LINES  # the caller's list is not changed


def test_recent_results_are_cut_lightly_and_old_ones_hard(context: AgentContext):
    out = context.compact_tool_result(
        loop(LINES, LINES, LINES), recent_n=1, recent_max_bytes=40_000, old_max_bytes=2000
    )
    sizes = [len(m["content"].encode()) for m in out if m["role"] == "tool"]
    assert sizes[0] < 2400 and sizes[1] < 2400
    assert 39_000 < sizes[2] < 40_500
    short = context.compact_tool_result(loop("ok"), recent_n=0, old_max_bytes=100)
    assert short[2]["content"] == "ok"


def test_unanswered_results_count_as_recent_even_with_recent_n_zero(context: AgentContext):
    messages = [*loop(LINES)[:-1], assistant(None, [("x", "shell"), ("y", "shell")])]
    messages += [tool("x", LINES), tool("y", LINES)]
    out = context.compact_tool_result(
        messages, recent_n=0, recent_max_bytes=50_000, old_max_bytes=1000
    )
    tool_sizes = [len(m["content"].encode()) for m in out if m["role"] == "tool"]
    assert tool_sizes[0] < 1400 and all(s > 49_000 for s in tool_sizes[1:])


def test_a_result_that_ages_is_cut_again_from_its_spill_file(context: AgentContext, root: Path):
    first = context.compact_tool_results(loop(LINES), recent_n=1, recent_max_bytes=20_000)
    assert first.spilled == ["tool_results/call_0.txt"]
    # Later the same (already cut) message is old: it shrinks, and no second file appears.
    second = context.compact_tool_results(
        [*first.messages, user("next")], recent_n=0, old_max_bytes=1500
    )
    assert second.spilled == [] and second.cut == ["call_0"]
    content = second.messages[2]["content"]
    assert len(content.encode()) < 1900 and "tool_results/call_0.txt" in content
    assert sorted(p.name for p in (root / "tool_results").iterdir()) == ["call_0.txt"]
    # Running again changes nothing: the cut is stable.
    third = context.compact_tool_results(second.messages, recent_n=0, old_max_bytes=1500)
    assert third.cut == [] and third.messages == second.messages


def test_the_same_id_with_another_output_gets_its_own_file(context: AgentContext, root: Path):
    context.compact_tool_result(loop(LINES), recent_n=0)
    other = LINES.replace("build", "deploy")
    out = context.compact_tool_result(loop(other), recent_n=0)
    files = sorted(p.name for p in (root / "tool_results").iterdir())
    assert len(files) == 2 and "call_0.txt" in files
    (second,) = [f for f in files if f != "call_0.txt"]
    assert (root / "tool_results" / second).read_text("utf-8") == other
    assert f"tool_results/{second}" in out[2]["content"]


def test_an_output_that_mentions_a_spill_path_is_not_mistaken_for_a_cut(context: AgentContext):
    sneaky = "x" * 100 + "\n\n[see tool_results/call_0.txt for more]"
    out = context.compact_tool_result(loop(sneaky), recent_n=0, old_max_bytes=5000)
    assert out[2]["content"] == sneaky


def test_expired_spill_files_are_removed_and_live_ones_kept(context: AgentContext, root: Path):
    kept = context.compact_tool_results(loop(LINES), recent_n=0)
    folder = root / "tool_results"
    stale = folder / "old-call.txt"
    stale.write_text("old output", encoding="utf-8")
    week_ago = time.time() - 7 * 86400
    os.utime(stale, (week_ago, week_ago))
    os.utime(folder / "call_0.txt", (week_ago, week_ago))
    # call_0 is still referenced by the messages: cutting them again touches it.
    report = context.compact_tool_results(kept.messages, recent_n=0, retention_days=3)
    assert report.removed == ["tool_results/old-call.txt"]
    assert (folder / "call_0.txt").exists() and not stale.exists()
    untouched = context.compact_tool_results([user("hi")], retention_days=None)
    assert untouched.removed == []


def test_list_content_and_unsafe_ids(context: AgentContext, root: Path):
    message = {
        "role": "tool",
        "tool_call_id": "../../etc/passwd",
        "content": [{"type": "text", "text": LINES}],
    }
    calls = [user("q"), assistant(None, [("../../etc/passwd", "t")]), message, assistant("ok")]
    out = context.compact_tool_result(calls, recent_n=0)
    assert out[2]["tool_call_id"] == "../../etc/passwd"
    files = list((root / "tool_results").iterdir())
    assert len(files) == 1 and files[0].read_text("utf-8") == LINES
    assert files[0].parent == root / "tool_results"


def test_cleanup_never_follows_a_linked_folder_out_of_the_workspace(
    context: AgentContext, root: Path, tmp_path: Path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "keep.txt"
    victim.write_text("not reme's", encoding="utf-8")
    week_ago = time.time() - 7 * 86400
    os.utime(victim, (week_ago, week_ago))
    (root / "tool_results").symlink_to(outside, target_is_directory=True)
    report = context.compact_tool_results([user("hi")], retention_days=1)
    assert report.removed == [] and victim.exists()
