#!/usr/bin/env python3
"""Codex ``notify`` program: ask reme to save this Codex session after every turn.

Codex runs ``notify = [...]`` from its config.toml after each turn, with one more argument: a
JSON object (``type`` agent-turn-complete, ``thread-id``, ``turn-id``, ``cwd``,
``input-messages``, ``last-assistant-message``). The program must never slow down or break the
agent, so it only reads that argument, starts a detached copy of itself that makes the call, and
exits 0 at once, whatever happens. The detached copy runs ``auto_memory_codex {"session_id":
<thread-id>}`` on a running ``reme serve`` (or, with ``--local``, through the ``reme`` CLI on the
workspace); reme reads the session's rollout file incrementally, saves the new turns to
``sessions/<thread-id>.jsonl`` and summarises them into a ``daily/`` note once enough are
pending. Nothing is lost when a call fails: the turns stay in Codex's rollout file, the
session is remembered under the pending folder, and the next successful call retries it.
Every outcome is one line in the log, never output to the agent.

Only the Python standard library is used: Codex's environment need not have reme installed.

Options (``reme integrate codex`` writes them into the notify entry; each overrides the
environment):
  --url URL         the server (REME_URL; default: the url in WORKSPACE/.reme/server.json,
                    else http://127.0.0.1:2333)
  --workspace DIR   the workspace folder (REME_WORKSPACE): its server.json names the served
                    workspace, and --local runs there
  --local           no server: run ``reme run auto_memory_codex`` on the workspace (REME_BIN,
                    else ``reme`` on PATH)
  --log FILE        the log file (REME_NOTIFY_LOG; default ~/.reme/codex_notify.log)
  --then PROGRAM... the notify program that was there before (Codex runs only one): it is
                    started too, detached, with the same JSON argument (always last)
Environment: REME_TOKEN, a write-profile token (Codex loads it from $CODEX_HOME/.env, where
``reme integrate codex`` puts it; read from there too when Codex did not pass it on).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:2333"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
OPERATION = "auto_memory_codex"
SEND_FLAG = "--send"
CALL_TIMEOUT_S = 900
"""A pipeline run may call a model for a while; the detached process can afford to wait."""
LOG_LIMIT = 1 << 20
"""The log is rotated (one old copy kept) past this size, so it never grows without bound."""
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""The ids the server accepts (they name sessions/<id>.jsonl); others are not worth a call."""
MAX_RETRIES = 20
"""Sessions a failed call left pending that one successful call retries."""
OPTIONS = ("--url", "--workspace", "--log")


# -- arguments ---------------------------------------------------------------------------------


def parse(argv: list[str]) -> tuple[dict[str, str], bool, list[str], list[str]]:
    """(options, --local, the rest, the --then program); unknown options are kept in the rest,
    never an error."""
    options: dict[str, str] = {}
    local = False
    rest: list[str] = []
    then: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--then" and i + 1 < len(argv):
            then, rest = argv[i + 1 : -1], [*rest, argv[-1]]  # Codex's JSON comes last
            break
        if arg in OPTIONS and i + 1 < len(argv):
            options[arg[2:]] = argv[i + 1]
            i += 2
            continue
        if arg == "--local":
            local = True
        else:
            rest.append(arg)
        i += 1
    return options, local, rest, then


def session_id_from(payload: str) -> str | None:
    """The thread id of Codex's notification, when it is one the server accepts."""
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    value = data.get("thread-id") if isinstance(data, dict) else None
    if isinstance(value, str) and SESSION_ID.fullmatch(value) and ".." not in value:
        return value
    return None


# -- the notify program: parse, detach, exit 0 -------------------------------------------------


def detach(command: list[str]) -> None:
    """Start ``command`` in its own session with no stdio, so Codex never waits for it."""
    options: dict = {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL,
        "close_fds": True,
    }
    if os.name == "posix":
        options["start_new_session"] = True  # not killed with Codex's process group
    else:
        options["creationflags"] = 0x00000008 | 0x00000200  # DETACHED | NEW_PROCESS_GROUP
    subprocess.Popen(command, **options)


def notify(options: dict[str, str], local: bool, rest: list[str], then: list[str]) -> None:
    payload = rest[-1] if rest else ""
    if then:
        try:
            detach([*then, payload])
        except Exception as exc:
            log(options, f"cannot start the previous notify program {then[0]!r}: {exc!r}")
    session_id = session_id_from(payload)
    if session_id is None:
        log(options, f"no usable thread-id in Codex's notification: {payload[:200]!r}")
        return
    flags = [f"--{k}={v}" for k, v in options.items()] + (["--local"] if local else [])
    try:
        detach([sys.executable, os.path.abspath(__file__), SEND_FLAG, session_id, *flags])
    except Exception as exc:
        remember(options, session_id)
        log(options, f"{session_id}: cannot start the background call: {exc!r}")


# -- the detached call -------------------------------------------------------------------------


def env_file_token() -> str | None:
    """REME_TOKEN from $CODEX_HOME/.env (Codex normally passes it on in the environment)."""
    home = os.environ.get("CODEX_HOME", "").strip() or str(Path.home() / ".codex")
    try:
        lines = (Path(home).expanduser() / ".env").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and key.strip() == "REME_TOKEN":
            return value.strip().strip("'\"") or None
    return None


def server_target(options: dict[str, str]) -> tuple[str, str | None, str | None]:
    """(url, token, workspace name): options, then the environment, then server.json."""
    discovery: dict = {}
    folder = options.get("workspace") or os.environ.get("REME_WORKSPACE", "").strip()
    if folder:
        try:
            path = Path(folder).expanduser() / ".reme" / "server.json"
            loaded = json.loads(path.read_text(encoding="utf-8"))
            discovery = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            discovery = {}
    url = (
        options.get("url")
        or os.environ.get("REME_URL", "").strip()
        or discovery.get("url")
        or DEFAULT_URL
    )
    token = os.environ.get("REME_TOKEN", "").strip() or env_file_token()
    name = discovery.get("workspace")
    return str(url).rstrip("/"), token, name if isinstance(name, str) and name else None


def opener_for(url: str) -> urllib.request.OpenerDirector:
    """No proxy for a server on this machine: urllib would send even 127.0.0.1 through
    $HTTP_PROXY unless $NO_PROXY lists it."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host in LOOPBACK:
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def call_server(options: dict[str, str], session_id: str) -> tuple[bool, str]:
    """(whether reme saved the session, the log line)."""
    url, token, workspace = server_target(options)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if workspace:
        headers["X-Reme-Workspace"] = workspace
    body = json.dumps({"session_id": session_id}).encode("utf-8")
    request = urllib.request.Request(
        f"{url}/api/v1/{OPERATION}", data=body, headers=headers, method="POST"
    )
    try:
        with opener_for(url).open(request, timeout=CALL_TIMEOUT_S) as response:
            result = json.loads(response.read().decode("utf-8") or "null")
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:300].strip()
        why = {401: "the token is wrong or revoked", 403: "the token may not write here"}
        hint = f" ({why[exc.code]})" if exc.code in why else ""
        return False, f"{url} answered HTTP {exc.code}{hint}: {detail}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"cannot call {url}: {reason}"
    outputs = result.get("outputs") if isinstance(result, dict) else None
    return True, outcome(outputs if isinstance(outputs, dict) else {})


def call_local(options: dict[str, str], session_id: str) -> tuple[bool, str]:
    """The same through the ``reme`` CLI on the workspace (no server)."""
    program = os.environ.get("REME_BIN", "").strip() or shutil.which("reme")
    if not program:
        return False, "--local: no reme program (set REME_BIN or put reme on PATH)"
    command = [program, "run", OPERATION, "--param", f"session_id={session_id}", "--json"]
    folder = options.get("workspace") or os.environ.get("REME_WORKSPACE", "").strip()
    if folder:
        command += ["-w", folder]
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"cannot run {program}: {exc}"
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return False, f"reme run exited {done.returncode}: {lines[-1] if lines else ''}"
    try:
        result = json.loads(done.stdout)
    except ValueError:
        result = {}
    outputs = result.get("outputs") if isinstance(result, dict) else None
    return True, outcome(outputs if isinstance(outputs, dict) else {})


def outcome(outputs: dict) -> str:
    status, note, pending = outputs.get("status"), outputs.get("note"), outputs.get("pending")
    line = f"{status or 'done'}" + (f" {note}" if note else "")
    if status == "deferred" and isinstance(pending, int):
        line += f" ({pending} turn(s) saved, waiting to be summarised)"
    codex = outputs.get("codex")
    images = codex.get("images") if isinstance(codex, dict) else None
    if isinstance(images, dict) and images.get("omitted"):  # the turns are saved without them
        line += f"; {images['omitted']} image(s) not kept ({images.get('first_omitted')})"
    unknown = codex.get("unknown_lines") if isinstance(codex, dict) else None
    if isinstance(unknown, dict) and unknown.get("count"):
        line += (
            f"; {unknown['count']} line(s) of the rollout in a format this reme does not know "
            f"(first at byte {unknown.get('first')}: {unknown.get('reason')}), kept in Codex's "
            "file and read again on every capture"
        )
    return line


def send(options: dict[str, str], local: bool, session_id: str) -> None:
    call = call_local if local else call_server
    ok, line = call(options, session_id)
    if not ok:
        remember(options, session_id)
        log(options, f"{session_id}: {line}; its turns wait in Codex's rollout for the next call")
        return
    forget(options, session_id)
    log(options, f"{session_id}: {line}")
    for other in pending(options)[:MAX_RETRIES]:  # sessions an earlier failure left behind
        if other == session_id:
            continue
        ok, line = call(options, other)
        if not ok:
            log(options, f"{other}: retry failed: {line}")
            return
        forget(options, other)
        log(options, f"{other}: (retried) {line}")


# -- the pending folder and the log ----------------------------------------------------------


def log_file(options: dict[str, str]) -> Path:
    given = options.get("log") or os.environ.get("REME_NOTIFY_LOG", "").strip()
    return Path(given).expanduser() if given else Path.home() / ".reme" / "codex_notify.log"


def pending_dir(options: dict[str, str]) -> Path:
    """One empty file per session whose last call failed (files: no lock is needed)."""
    path = log_file(options)
    return path.with_name(path.stem + ".pending")


def remember(options: dict[str, str], session_id: str) -> None:
    try:
        folder = pending_dir(options)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / session_id).touch()
    except OSError:
        pass  # the rollout file still holds the turns; the session's next turn retries it


def forget(options: dict[str, str], session_id: str) -> None:
    with contextlib.suppress(OSError):
        (pending_dir(options) / session_id).unlink(missing_ok=True)


def pending(options: dict[str, str]) -> list[str]:
    try:
        found = sorted(pending_dir(options).iterdir(), key=lambda p: p.stat().st_mtime)
    except OSError:
        return []
    return [p.name for p in found if SESSION_ID.fullmatch(p.name)]


def log(options: dict[str, str], message: str) -> None:
    """One line in the log file; logging must not fail the program either."""
    try:
        path = log_file(options)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > LOG_LIMIT:
            os.replace(path, path.with_name(path.name + ".1"))
        stamp = dt.datetime.now().astimezone().isoformat(timespec="seconds")
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {message}\n")
    except Exception:
        pass


def main(argv: list[str]) -> int:
    expanded: list[str] = []
    for i, arg in enumerate(argv):  # the detached copy gets --name=value
        if arg == "--then":  # the previous program's arguments are its own
            expanded += argv[i:]
            break
        name, sep, value = arg.partition("=")
        expanded += [name, value] if sep and name in OPTIONS else [arg]
    options, local, rest, then = parse(expanded)
    if len(rest) == 2 and rest[0] == SEND_FLAG:
        try:
            send(options, local, rest[1])
        except Exception as exc:  # the last guard: whatever went wrong ends up in the log
            remember(options, rest[1])
            log(options, f"{rest[1]}: unexpected error: {exc!r}")
        return 0
    try:
        notify(options, local, rest, then)
    except Exception as exc:
        log(options, f"unexpected error: {exc!r}")
    return 0  # always: a notify program that fails would get in the agent's way


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
