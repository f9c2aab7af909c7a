#!/usr/bin/env python3
"""Claude Code Stop and SessionEnd hook: ask a running ``reme serve`` to save this session.

Claude Code runs this after every answer (``Stop``) and when a session ends (``SessionEnd``), with
a JSON object on stdin (``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``). The
hook must never slow down or break the agent, so it only reads stdin, forks a detached process
that makes the call, and exits 0, whatever happens. It waits for the call's outcome at most
REME_HOOK_WAIT_S (default 0.5 s): a refused or failed call (server down, a wrong or read-only
token) or a transcript line the server could not read answers within milliseconds, and then goes
to Claude Code as one ``reme:`` line on stderr (its debug log, ``claude --debug``) and, for a
problem, a ``systemMessage`` the user sees; a call still running then (a model summarising) goes
on alone and only its log line tells how it ended. The detached process POSTs ``auto_memory_cc {"session_id": ...}``; the server reads the transcript by session id
(incrementally) and saves the new turns to ``sessions/<id>.jsonl`` at once, but summarises them
into the note under ``daily/<date>/`` only once enough are pending (``min_pending_turns``), so one
model call covers several answers. At ``SessionEnd`` the call adds ``"flush": true``: whatever is
still pending is summarised then. Every outcome also goes to a log file; none fails the agent.

Only the Python standard library is used: Claude Code's environment need not have reme installed.

Environment:
  REME_URL        the server (default: the url in $REME_WORKSPACE/.reme/server.json, else
                  http://127.0.0.1:2333)
  REME_TOKEN      a bearer token with the write profile (default: the token file the server
                  named in $REME_WORKSPACE/.reme/server.json)
  REME_WORKSPACE  a workspace folder served by that server, as for the reme CLI (optional; its
                  server.json also tells which served workspace to write to)
  REME_HOOK_LOG   the log file (default ~/.reme/claude_code_hook.log)
  REME_HOOK_WAIT_S  seconds to wait for the outcome before leaving it to the log (default 0.5;
                  0 never waits)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:2333"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
OPERATION = "auto_memory_cc"
SEND_FLAG = "--send"
FLUSH_FLAG = "--flush"
FLUSH_EVENTS = ("SessionEnd",)
"""Hook events after which the session's pending turns are summarised at once."""
STDIN_WAIT_S = 0.5
"""Claude Code writes stdin at once and closes it; never wait longer for a stray pipe."""
STDIN_LIMIT = 1 << 20
CALL_TIMEOUT_S = 900
"""A pipeline run may call a model for a while; the detached process can afford to wait."""
WAIT_S = 0.5
"""How long the hook waits for the call's outcome: failures answer in milliseconds; a call that
summarises with a model takes longer and is left to finish alone (its line goes to the log)."""
MAX_WAIT_S = 5.0
"""The hook's own timeout in hooks.json is 10 s: a larger REME_HOOK_WAIT_S is cut to this."""
PREFIX = "reme: "
MAX_FD = 65536
LOG_LIMIT = 1 << 20
"""The log is rotated (one old copy kept) past this size, so it never grows without bound."""
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""The ids the server accepts (they name sessions/<id>.jsonl); others are not worth a call."""


# -- the hook: read stdin, detach, exit 0 ----------------------------------------------------


def read_stdin() -> bytes:
    """What Claude Code sent, without blocking on a pipe that is never closed."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        return b""
    fd = stream.fileno()
    if os.name != "posix":
        return stream.buffer.read(STDIN_LIMIT)  # select() does not take pipes on Windows
    import select

    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + STDIN_WAIT_S
    while size < STDIN_LIMIT:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def hook_input(raw: bytes) -> dict:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def session_id_from(raw: bytes) -> str | None:
    value = hook_input(raw).get("session_id")
    if isinstance(value, str) and SESSION_ID.fullmatch(value) and ".." not in value:
        return value
    return None


def flush_from(raw: bytes) -> bool:
    """Whether this event ends the session (its pending turns are summarised now)."""
    return hook_input(raw).get("hook_event_name") in FLUSH_EVENTS


def detach(session_id: str, flush: bool = False) -> int | None:
    """Make the call in a detached process; returns the read end of a pipe on which it reports
    its outcome (POSIX), or None. The process must not hold Claude Code's stdout or stderr:
    Claude Code waits for them to close, so it would wait for the whole call."""
    if os.name != "posix":
        options: dict = {
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.DEVNULL,
            "stderr": subprocess.DEVNULL,
            "close_fds": True,
            "creationflags": 0x00000008 | 0x00000200,  # DETACHED | NEW_PROCESS_GROUP
        }
        command = [sys.executable, os.path.abspath(__file__), SEND_FLAG, session_id]
        subprocess.Popen([*command, FLUSH_FLAG] if flush else command, **options)
        return None
    # fork, not a new interpreter: a fresh Python takes 30 ms on an idle machine and over
    # 0.5 s on a loaded one, and the outcome of a refused call should reach Claude Code.
    read_end, write_end = os.pipe()
    if os.fork() != 0:
        os.close(write_end)
        return read_end
    try:  # the child: its own session (not killed with Claude Code's group), no stdio
        os.close(read_end)
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, write_end)  # any other pipe of Claude Code's: as close_fds would
        os.closerange(write_end + 1, MAX_FD)
        try:
            line, problem = call(session_id, flush)
        except Exception as exc:  # the last guard: whatever went wrong ends up in the log
            line, problem = f"{session_id}: not saved, unexpected error: {exc!r}", True
        log(line)
        with contextlib.suppress(OSError):  # the hook stopped waiting: the log has the line
            os.write(write_end, (json.dumps({"line": line, "problem": problem}) + "\n").encode())
    finally:
        os._exit(0)


def wait_budget() -> float:
    try:
        value = float(os.environ.get("REME_HOOK_WAIT_S", "").strip() or WAIT_S)
    except ValueError:
        return WAIT_S
    return min(max(value, 0.0), MAX_WAIT_S) if value == value else WAIT_S  # NaN: the default


def outcome(read_end: int | None, budget: float) -> dict | None:
    """The ``{"line", "problem"}`` the detached call reports, if it comes within ``budget``."""
    if read_end is None or budget <= 0:
        return None
    import select

    deadline = time.monotonic() + budget
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([read_end], [], [], left)[0]:
            return None
        chunk = os.read(read_end, 65536)
        if not chunk:
            break  # the call ended without a word: the log has whatever happened
        data += chunk
    try:
        found = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("line"), str) else None


def tell_host(found: dict) -> None:
    """One line to Claude Code: stderr (its debug log, ``--debug``), and for a problem also
    ``systemMessage`` on stdout, which Claude Code shows the user (exit 0: never blocking)."""
    line = PREFIX + found["line"]
    print(line, file=sys.stderr)
    if found.get("problem"):
        print(json.dumps({"systemMessage": line}))


def hook() -> None:
    try:
        raw = read_stdin()
    except Exception as exc:  # a broken stdin is not the agent's problem
        report(f"cannot read the hook input: {exc!r}", problem=True)
        return
    session_id = session_id_from(raw)
    if session_id is None:
        report(f"no usable session_id in the hook input: {raw[:200]!r}", problem=True)
        return
    try:
        read_end = detach(session_id, flush_from(raw))
    except Exception as exc:
        report(f"{session_id}: cannot start the background call: {exc!r}", problem=True)
        return
    try:
        found = outcome(read_end, wait_budget())
    finally:
        if read_end is not None:
            os.close(read_end)  # the call goes on; a late outcome goes to the log only
    if found is not None:
        with contextlib.suppress(Exception):  # Claude Code closed our stdout: the log has it
            tell_host(found)


# -- the detached call -----------------------------------------------------------------------


def server_target() -> tuple[str, str | None, str | None]:
    """(url, token, workspace name): the environment first, then what ``reme serve`` wrote
    into the workspace folder named by $REME_WORKSPACE."""
    discovery: dict = {}
    folder = os.environ.get("REME_WORKSPACE", "").strip()
    if folder:
        try:
            path = Path(folder).expanduser() / ".reme" / "server.json"
            loaded = json.loads(path.read_text(encoding="utf-8"))
            discovery = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            discovery = {}
    url = os.environ.get("REME_URL", "").strip() or discovery.get("url") or DEFAULT_URL
    token = os.environ.get("REME_TOKEN", "").strip() or None
    if token is None and isinstance(discovery.get("token_file"), str):
        try:
            token = Path(discovery["token_file"]).read_text(encoding="utf-8").strip() or None
        except OSError:
            token = None
    name = discovery.get("workspace")
    return str(url).rstrip("/"), token, name if isinstance(name, str) and name else None


def opener_for(url: str) -> urllib.request.OpenerDirector:
    """No proxy for a server on this machine: urllib would send even 127.0.0.1 through
    $HTTP_PROXY unless $NO_PROXY lists it."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host in LOOPBACK:
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def send(session_id: str, flush: bool = False) -> None:
    """``--send``: make the call in this process (Windows, or by hand); the line goes to the
    log and to stdout."""
    line, _ = call(session_id, flush)
    log(line)
    with contextlib.suppress(OSError, ValueError):
        print(line)


def call(session_id: str, flush: bool = False) -> tuple[str, bool]:
    """``(the line that tells the outcome, whether it is a problem to show the user)``."""
    url, token, workspace = server_target()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if workspace:
        headers["X-Reme-Workspace"] = workspace
    payload: dict = {"session_id": session_id}
    if flush:
        payload["flush"] = True
    body = json.dumps(payload).encode("utf-8")
    request = urllib.request.Request(
        f"{url}/api/v1/{OPERATION}", data=body, headers=headers, method="POST"
    )
    try:
        with opener_for(url).open(request, timeout=CALL_TIMEOUT_S) as response:
            result = json.loads(response.read().decode("utf-8") or "null")
    except urllib.error.HTTPError as exc:
        detail = " ".join(exc.read().decode("utf-8", "replace")[:500].split())
        return f"{session_id}: not saved, {url} answered HTTP {exc.code}: {detail}", True
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"{session_id}: not saved, cannot call {url}: {exc}", True
    outputs = result.get("outputs") if isinstance(result, dict) else None
    outputs = outputs if isinstance(outputs, dict) else {}
    status, note, pending = outputs.get("status"), outputs.get("note"), outputs.get("pending")
    line = f"{session_id}: {status or 'done'}" + (f" {note}" if note else "")
    if status == "deferred" and isinstance(pending, int):
        line += f" ({pending} turn(s) saved, waiting to be summarised)"
    read = outputs.get("claude_code")
    read = read if isinstance(read, dict) else {}
    unknown, partial = read.get("unknown_lines"), read.get("partial_bytes")
    if isinstance(partial, int) and partial > 0:
        line += f"; a last line still being written ({partial} bytes) waits for the next call"
    images = read.get("images")
    if isinstance(images, dict) and images.get("omitted"):  # the turns are saved without them
        line += f"; {images['omitted']} image(s) not kept ({images.get('first_omitted')})"
    if not isinstance(unknown, dict) or not unknown.get("count"):
        return line, False
    where = f"first at byte {unknown.get('first')}: {unknown.get('reason')}"
    if unknown.get("new"):  # news for the user; lines already reported are only logged
        line += (
            f"; {unknown['new']} new transcript line(s) in a format reme does not know, "
            f"skipped and read again on every call ({where})"
        )
        return line, True
    line += f"; {unknown['count']} transcript line(s) in a format reme does not know ({where})"
    return line, False


# -- logging ---------------------------------------------------------------------------------


def report(message: str, problem: bool = False) -> None:
    """A line about the hook itself: the log and Claude Code both get it."""
    log(message)
    with contextlib.suppress(Exception):
        tell_host({"line": message, "problem": problem})


def log(message: str) -> None:
    """One line in the log file; logging must not fail the hook either."""
    try:
        given = os.environ.get("REME_HOOK_LOG", "").strip()
        path = Path(given).expanduser() if given else Path.home() / ".reme" / "claude_code_hook.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > LOG_LIMIT:
            os.replace(path, path.with_name(path.name + ".1"))
        stamp = dt.datetime.now().astimezone().isoformat(timespec="seconds")
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {message}\n")
    except Exception:
        pass


def main(argv: list[str]) -> int:
    if len(argv) in (2, 3) and argv[0] == SEND_FLAG and argv[2:] in ([], [FLUSH_FLAG]):
        try:
            send(argv[1], flush=argv[2:] == [FLUSH_FLAG])
        except Exception as exc:  # the last guard: whatever went wrong ends up in the log
            log(f"{argv[1]}: not saved, unexpected error: {exc!r}")
        return 0
    hook()
    return 0  # always: a hook that fails or blocks would get in the agent's way


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
