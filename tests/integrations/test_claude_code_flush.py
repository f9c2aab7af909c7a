"""The Claude Code hook at SessionEnd: the same detached call, asking the server to flush.

A Stop sends ``{"session_id"}`` (the server may only save the turns, deferring the summary);
SessionEnd adds ``"flush": true`` so what is still pending is summarised as the session ends.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.integrations.test_claude_code import (
    HOOK_RETURNS_WITHIN_S,
    PLUGIN,
    clean_env,
    read_request,
    run_hook,
    wait_for,
)


def call_with(stdin: dict, answer: dict, tmp_path: Path) -> tuple[dict, str]:
    """Run the hook against a one-shot server; return the body it sent and the hook's log."""
    log = tmp_path / "hook.log"
    reply = json.dumps(answer).encode()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(5)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        env = clean_env(REME_URL=url, REME_TOKEN="t", REME_HOOK_LOG=str(log))
        done, elapsed = run_hook(json.dumps(stdin).encode(), env)
        assert done.returncode == 0 and done.stderr == b"" and elapsed < HOOK_RETURNS_WITHIN_S
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(5)
            head, body = read_request(conn)
            head_line = f"HTTP/1.1 200 OK\r\nContent-Length: {len(reply)}\r\n\r\n"
            conn.sendall(head_line.encode() + reply)
    assert head.startswith(b"POST /api/v1/auto_memory_cc HTTP/1.1\r\n")
    wait_for(lambda: log.is_file() and "s1:" in log.read_text(encoding="utf-8"))
    return json.loads(body), log.read_text(encoding="utf-8")


def test_session_end_asks_the_server_to_flush(tmp_path: Path):
    answer = {"outputs": {"status": "updated", "note": "daily/2026-11-02/session-x.md"}}
    event = {"session_id": "s1", "hook_event_name": "SessionEnd", "reason": "exit"}
    body, log = call_with(event, answer, tmp_path)
    assert body == {"session_id": "s1", "flush": True}
    assert "s1: updated daily/2026-11-02/session-x.md" in log


def test_a_deferred_stop_is_logged_with_its_pending_turns(tmp_path: Path):
    answer = {"outputs": {"status": "deferred", "note": None, "pending": 4}}
    body, log = call_with({"session_id": "s1", "hook_event_name": "Stop"}, answer, tmp_path)
    assert body == {"session_id": "s1"}  # a Stop never flushes
    assert "s1: deferred (4 turn(s) saved, waiting to be summarised)" in log


def test_the_plugin_runs_the_hook_at_stop_and_at_session_end():
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    for event in ("Stop", "SessionEnd"):
        (command,) = [h["command"] for group in hooks[event] for h in group["hooks"]]
        assert command == 'python3 "${CLAUDE_PLUGIN_ROOT}/hooks/reme_stop_hook.py"'
