"""Codex's notify program (integrations/codex/reme_codex_notify.py) against a real ``reme serve``.

The server runs over a temporary workspace (keyword search, no model: the daily note is a
verbatim excerpt) with CODEX_HOME pointing at a copy of the real rollout under
examples/auto_memory/codex/. The program runs as Codex runs it: a fresh Python (``-S``, so it
cannot import anything installed) with Codex's JSON notification as its last argument. It must
exit 0 at once whatever happens; the call is made by a detached copy, whose outcome is one line
in the log.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.workspace import init_workspace, parse_frontmatter
from tests.integrations import hosts

ROOT = Path(__file__).resolve().parents[2]
NOTIFY = ROOT / "integrations" / "codex" / "reme_codex_notify.py"
EXAMPLE = ROOT / "examples" / "auto_memory" / "codex"
SID = "01a23d2d-20d8-78d3-af70-63f1e6350dbe"
DAY = "sessions/2026/12/03"
ROLLOUT = f"{DAY}/rollout-2026-12-03T18-31-37-{SID}.jsonl"
RETURNS_WITHIN_S = 1.0
LOG_TIMEOUT_S = 20


class Served(NamedTuple):
    url: str
    write: str
    read: str
    workspace: Path
    codex: Path
    tmp: Path


def token(workspace: Path, profile: str) -> str:
    ws = str(workspace)
    done = subprocess.run(
        [*hosts.reme_command(), "token", "create", "--profile", profile, "--json", "-w", ws],
        env=hosts.clean_env(("CODEX_",)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["secret"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("codex_notify")
    workspace = tmp / "ws"
    init_workspace(workspace)
    codex = tmp / "codex"
    shutil.copytree(EXAMPLE, codex)
    env = hosts.clean_env(
        ("CODEX_",), **KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC", CODEX_HOME=str(codex)
    )
    with hosts.reme_served(workspace, tmp / "server.log", env, "write") as (server, secret):
        yield Served(server["url"], secret, token(workspace, "read"), workspace, codex, tmp)


def new_session(served: Served) -> str:
    """A second session: a copy of the sample rollout under a new thread id."""
    sid = f"0c0ffee0-{time.monotonic_ns() % 10**4:04d}-4222-8333-444455556666"
    target = (served.codex / ROLLOUT).with_name(f"rollout-2026-12-03T19-00-00-{sid}.jsonl")
    shutil.copy(EXAMPLE / ROLLOUT, target)  # as shipped, not as an earlier test extended it
    return sid


def notification(session_id: object) -> str:
    return json.dumps(
        {
            "type": "agent-turn-complete",
            "thread-id": session_id,
            "turn-id": "01a23d2d-2113-78d0-908f-25788fc5cc72",
            "cwd": "/home/mira/larkspur",
            "client": "codex_exec",
            "input-messages": ["Where does the larkspur kiln key hang?"],
            "last-assistant-message": "Behind the blue enamel door.",
        }
    )


def run_notify(served: Served, payload: str, *options: str, token: str | None = None) -> Path:
    """Run the program as Codex does; it must exit 0 at once. Returns its log file."""
    log = served.tmp / f"notify-{time.monotonic_ns()}.log"
    env = hosts.clean_env(("CODEX_",), REME_NOTIFY_LOG=str(log), HOME=str(served.tmp))
    if token is not None:
        env["REME_TOKEN"] = token
    args = [*options, payload]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-S", str(NOTIFY), *args], env=env, capture_output=True, timeout=10
    )
    took = time.monotonic() - started
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b"", done
    assert took < RETURNS_WITHIN_S, f"the notify program took {took:.2f}s"
    return log


def log_lines(log: Path, count: int = 1) -> list[str]:
    deadline = time.monotonic() + LOG_TIMEOUT_S
    while time.monotonic() < deadline:
        if log.is_file():
            lines = log.read_text(encoding="utf-8").splitlines()
            if len(lines) >= count:
                return lines
        time.sleep(0.05)
    raise AssertionError(f"no {count} line(s) in {log} after {LOG_TIMEOUT_S}s")


def saved(served: Served, session_id: str) -> list[dict]:
    path = served.workspace / "sessions" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_turn_is_saved_with_a_note_and_the_next_only_adds_new_turns(served: Served):
    log = run_notify(served, notification(SID), "--url", served.url, token=served.write)
    (line,) = log_lines(log)
    # No model: the note is a verbatim excerpt ("unsummarised") that links the saved turns.
    assert f"{SID}: unsummarised daily/2026-12-03/" in line, line
    turns = saved(served, SID)
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
    note = line.split(" unsummarised ", 1)[1].strip()
    text = (served.workspace / note).read_text(encoding="utf-8")
    front, _ = parse_frontmatter(text)
    assert front["session_id"] == SID and f"[[sessions/{SID}.jsonl#L1]]" in text
    # The next turn: only its lines are new.
    item = {
        "timestamp": "2026-12-03T18:50:00.000Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "and the spare key?"}],
        },
    }
    with open(served.codex / ROLLOUT, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(item) + "\n")
    log = run_notify(served, notification(SID), "--url", served.url, token=served.write)
    (line,) = log_lines(log)
    assert f"{SID}: unsummarised {note}" in line, line  # the same note, one turn more
    assert [t["content"] for t in saved(served, SID)][4:] == ["and the spare key?"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_server_down_logs_one_line_and_the_next_call_catches_up(served: Served):
    sid = new_session(served)
    down = f"http://127.0.0.1:{free_port()}"
    log = run_notify(served, notification(sid), "--url", down, token=served.write)
    (line,) = log_lines(log)
    assert f"{sid}: cannot call {down}" in line and "wait in Codex's rollout" in line, line
    assert not (served.workspace / "sessions" / f"{sid}.jsonl").exists()
    pending = log.with_name(log.stem + ".pending")
    assert [p.name for p in pending.iterdir()] == [sid]
    # Another session's next turn reaches the server: the one left behind is retried too.
    other = new_session(served)
    args = ("--url", served.url, "--log", str(log))
    run_notify(served, notification(other), *args, token=served.write)
    lines = log_lines(log, 3)
    assert f"{other}: unsummarised" in lines[1] and f"{sid}: (retried) unsummarised" in lines[2], (
        lines
    )
    assert len(saved(served, sid)) == 4 and list(pending.iterdir()) == []


@pytest.mark.parametrize(
    ("which", "expected"),
    [
        ("wrong", "HTTP 401 (the token is wrong or revoked)"),
        ("read", "HTTP 403 (the token may not write here)"),
        ("none", "HTTP 401"),
    ],
)
def test_a_bad_token_logs_one_line_and_loses_nothing(served: Served, which: str, expected: str):
    sid = new_session(served)
    secret = {"wrong": "reme_" + "x" * 43, "read": served.read, "none": None}[which]
    log = run_notify(served, notification(sid), "--url", served.url, token=secret)
    (line,) = log_lines(log)
    assert line.split(" ", 1)[1].startswith(f"{sid}: {served.url} answered {expected}"), line
    assert not (served.workspace / "sessions" / f"{sid}.jsonl").exists()
    assert (log.with_name(log.stem + ".pending") / sid).exists()


def test_the_token_is_read_from_codex_env_file(served: Served, tmp_path: Path):
    """Codex passes on what it loaded from $CODEX_HOME/.env; the program reads it there too."""
    sid = new_session(served)
    home = tmp_path / "codex_home"
    home.mkdir()
    (home / ".env").write_text(f"# reme\nREME_TOKEN={served.write}\n", encoding="utf-8")
    log = served.tmp / f"env-{sid}.log"
    env = hosts.clean_env(("CODEX_",), REME_NOTIFY_LOG=str(log), CODEX_HOME=str(home))
    done = subprocess.run(
        [sys.executable, "-S", str(NOTIFY), "--url", served.url, notification(sid)],
        env=env,
        capture_output=True,
        timeout=10,
    )
    assert done.returncode == 0
    (line,) = log_lines(log)
    assert f"{sid}: unsummarised" in line, line


@pytest.mark.parametrize("payload", ["", "not json", notification("../etc"), notification(7)])
def test_a_notification_without_a_usable_thread_id_is_logged(served: Served, payload: str):
    log = run_notify(served, payload, "--url", served.url, token=served.write)
    (line,) = log_lines(log)
    assert "no usable thread-id in Codex's notification" in line, line


def test_local_mode_runs_the_reme_cli_on_the_workspace(tmp_path: Path):
    """``--local``: no server; the program runs ``reme run auto_memory_codex`` itself."""
    workspace = tmp_path / "ws"
    init_workspace(workspace)
    codex = tmp_path / "codex"
    shutil.copytree(EXAMPLE, codex)
    log = tmp_path / "local.log"
    program = Path(sys.executable).with_name("reme")
    if not program.exists():
        pytest.skip("no reme program beside this Python")
    env = hosts.clean_env(
        ("CODEX_",),
        **KEYWORD_ONLY_ENV,
        REME_TIMEZONE="UTC",
        REME_NOTIFY_LOG=str(log),
        REME_BIN=str(program),
        CODEX_HOME=str(codex),
    )
    args = ["--local", "--workspace", str(workspace), notification(SID)]
    done = subprocess.run(
        [sys.executable, "-S", str(NOTIFY), *args], env=env, capture_output=True, timeout=10
    )
    assert done.returncode == 0 and done.stdout == b""
    deadline = time.monotonic() + 60
    while not log.is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    (line,) = log_lines(log)
    assert f"{SID}: unsummarised daily/2026-12-03/" in line, line
    assert len((workspace / "sessions" / f"{SID}.jsonl").read_text().splitlines()) == 4


def test_the_previous_notify_program_still_runs_with_the_same_argument(served: Served):
    out = served.tmp / f"previous-{time.monotonic_ns()}.txt"
    previous = ["python3", "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])", str(out)]
    payload = notification(SID)
    log = run_notify(served, payload, "--url", served.url, "--then", *previous, token=served.write)
    log_lines(log)
    deadline = time.monotonic() + LOG_TIMEOUT_S
    while not (out.is_file() and out.read_text(encoding="utf-8")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.read_text(encoding="utf-8") == payload


def test_an_unknown_rollout_line_is_named_in_the_log(served: Served):
    sid = new_session(served)
    rollout = (served.codex / ROLLOUT).with_name(f"rollout-2026-12-03T19-00-00-{sid}.jsonl")
    with open(rollout, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"timestamp": "2026-12-03T19:00:00Z", "type": "v9", "payload": {}}))
        fh.write("\n")
    log = run_notify(served, notification(sid), "--url", served.url, token=served.write)
    (line,) = log_lines(log)
    assert f"{sid}: unsummarised daily/" in line, line  # the known turns are saved
    assert "1 line(s) of the rollout in a format this reme does not know" in line, line
    assert "type 'v9'" in line and len(saved(served, sid)) == 4


def test_an_image_left_out_is_named_in_the_log_and_its_turn_saved(served: Served):
    sid = new_session(served)
    rollout = (served.codex / ROLLOUT).with_name(f"rollout-2026-12-03T19-00-00-{sid}.jsonl")
    lying = "data:image/png;base64,R0lGODlhAQABAAAAACw="  # a gif's bytes, named a png
    output = {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [{"type": "input_image", "image_url": lying, "detail": "high"}],
    }
    with open(rollout, "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {"timestamp": "2026-12-03T19:00:00Z", "type": "response_item", "payload": output}
            )
            + "\n"
        )
    log = run_notify(served, notification(sid), "--url", served.url, token=served.write)
    (line,) = log_lines(log)
    assert "; 1 image(s) not kept (turn codex-" in line, line
    assert line.endswith(": the bytes are not image/png)"), line
    assert saved(served, sid)[-1]["role"] == "tool" and len(saved(served, sid)) == 5
