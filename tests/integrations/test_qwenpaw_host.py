"""reme inside a real QwenPaw, pinned, against a scripted model.

``integrations/qwenpaw/requirements.txt`` pins ``qwenpaw``; a session fixture installs it alone
into ``$XDG_CACHE_HOME/reme/hosts/qwenpaw-<version>`` (pip_hosts.py): the plugin reaches reme
over HTTP, so reme is not in QwenPaw's venv (QwenPaw pins agentscope 2.0.10 and reme-ai
0.4.1.11, which reme-agentscope's agentscope 2.0.11 cannot share). Each test sets QwenPaw up in a
fresh ``$QWENPAW_WORKING_DIR`` with QwenPaw's own CLI, as its README tells a user to:
``qwenpaw init --defaults``, ``qwenpaw models add-provider/add-model`` for the scripted Chat
Completions server on 127.0.0.1 (scripted_openai_chat.py), ``qwenpaw plugin install
integrations/qwenpaw/reme-memory``, and the agent's ``running.memory_manager_backend`` set to ``reme`` with
reme serve's url (the token in ``$REME_TOKEN``). Then qwenpaw_agent.py runs one turn through
QwenPaw's plugin loader, ``Workspace`` and runtime (what ``qwenpaw app`` does per chat request):
the scripted model calls QwenPaw's ``memory_search`` tool, reme answers with the fact only the
workspace holds, the answer carries it, and QwenPaw's auto-memory worker hands the turn to reme,
which writes the transcript under ``sessions/`` and a note under ``daily/``. Also: two turns of one
chat (one transcript, new turns only), a wrong token and reme down (one line, a reply, the turn
kept in the plugin's spool), a read-only token (recall works; the kept turn is saved by the next
capture, with a write token), a misspelt backend setting.

Last, QwenPaw's served path: ``qwenpaw app`` (its own uvicorn web server, on 127.0.0.1, runs
offline and headless) takes two chat requests of one session over its HTTP API (``POST
/api/console/chat``, the web console's streamed route): both answers carry the recalled fact and
one transcript holds each question once, without the first-run guidance QwenPaw's bootstrap hook
puts in front of the first message on that path (the plugin leaves it out).

Not driven: ``qwenpaw task`` (the headless CLI) builds its agent with no workspace, so no memory
manager at all, QwenPaw's own included.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.workspace import parse_frontmatter
from tests.integrations import hosts, pip_hosts
from tests.integrations.scripted_openai_chat import Script, ScriptedServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
INTEGRATION = ROOT / "integrations" / "qwenpaw"
REQUIREMENTS = INTEGRATION / "requirements.txt"
PLUGIN = INTEGRATION / "reme-memory"  # what `qwenpaw plugin install` copies
FACT = "The larkspur kiln key hangs behind the blue enamel door, tag 7Q-ORCHID."
TOKEN_OF_FACT = "7Q-ORCHID"
QUESTION = "Where does the larkspur kiln key hang?"
TOOL = "memory_search"
RUN_TIMEOUT_S = 300


def clean_env(**extra: str) -> dict[str, str]:
    return hosts.clean_env(("OPENAI_", "QWENPAW_", "COPAW_"), **KEYWORD_ONLY_ENV, **extra)


@pytest.fixture(scope="session")
def qwenpaw_python() -> Path:
    version = pip_hosts.pinned(REQUIREMENTS, "qwenpaw")
    python = pip_hosts.pip_venv("qwenpaw", version, REQUIREMENTS, [])
    probe = "import importlib.metadata as m; print(m.version('qwenpaw'), m.version('agentscope'))"
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == version, done.stdout
    return python


Served = hosts.Served


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``reme serve`` over a one-note workspace, with a write-profile token for QwenPaw."""
    folder = tmp_path_factory.mktemp("qwenpaw_host")
    with hosts.served_one_note(folder, FACT, clean_env(REME_TIMEZONE="UTC")) as served:
        yield served


def qwenpaw(python: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(python), "-m", "qwenpaw", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, f"qwenpaw {' '.join(args)}: rc {done.returncode}\n{done.stderr}"
    return done.stdout


def set_up(python: Path, home: Path, model_url: str, backend: dict[str, Any], token: str) -> dict:
    """A QwenPaw home as a user sets it up: QwenPaw's CLI, then the agent's memory backend."""
    env = clean_env(
        QWENPAW_WORKING_DIR=str(home / "qwenpaw"),
        QWENPAW_SECRET_DIR=str(home / "secret"),
        REME_TOKEN=token,
        NO_PROXY="127.0.0.1,localhost",
        HOME=str(home),
    )
    qwenpaw(python, env, "init", "--defaults", "--accept-security")
    qwenpaw(python, env, "models", "add-provider", "scripted", "-n", "Scripted", "-u", model_url)
    qwenpaw(python, env, "models", "add-model", "scripted", "-m", "gpt-scripted", "-n", "gpt")
    provider = home / "secret" / "providers" / "custom" / "scripted.json"
    data = json.loads(provider.read_text(encoding="utf-8"))
    data["api_key"] = "sk-scripted-dummy"  # `models config-key` asks for it interactively
    provider.write_text(json.dumps(data), encoding="utf-8")
    installed = qwenpaw(python, env, "plugin", "install", str(PLUGIN))
    assert "Plugin validation successful" in installed and "rejected" not in installed, installed
    agent_json = home / "qwenpaw" / "workspaces" / "default" / "agent.json"
    agent = json.loads(agent_json.read_text(encoding="utf-8"))
    agent["active_model"] = {"provider_id": "scripted", "model": "gpt-scripted"}
    agent["running"]["memory_manager_backend"] = "reme"
    agent["running"]["memory_backend_configs"] = {"reme": backend}
    agent_json.write_text(json.dumps(agent, indent=2), encoding="utf-8")
    return env


def _turns(
    python: Path,
    env: dict[str, str],
    tmp: Path,
    script: Script,
    questions: tuple[str, ...],
    session: str,
    manager: str | None,
) -> dict[str, Any]:
    """qwenpaw_agent.py over the QwenPaw home in ``tmp``: ``questions`` in one chat session."""
    spec = {
        "agent_dir": str(tmp / "qwenpaw" / "workspaces" / "default"),
        "questions": list(questions),
        "session_id": session,
    }
    asked = len(script.chat_requests())
    done = subprocess.run(
        [str(python), str(HERE / "qwenpaw_agent.py"), json.dumps(spec)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    context = (
        f"rc {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-4000:]}"
    )
    assert done.returncode == 0, context
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["_stderr"], result["_context"] = done.stderr, context
    assert "reme-memory" in result["plugins"], context
    assert result["manager"] == manager and result["backend"] == "reme", context
    assert len(script.chat_requests()) > asked, f"QwenPaw never called the model\n{context}"
    if manager is not None:
        assert TOOL in script.offered_tools(), script.offered_tools()
    return result


def ask(
    python: Path,
    tmp: Path,
    served: Served,
    token: str,
    backend: dict[str, Any] | None = None,
    manager: str | None = "RemeMemoryManager",
    questions: tuple[str, ...] = (QUESTION,),
    session: str = "kiln-1",
) -> tuple[dict[str, Any], Script]:
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    with ScriptedServer(script) as model:
        env = set_up(python, tmp, f"{model.url}/v1", backend or {"url": served.url}, token)
        result = _turns(python, env, tmp, script, questions, session, manager)
    return result, script


def ask_then_recover(
    python: Path,
    tmp: Path,
    served: Served,
    token: str,
    backend: dict[str, Any],
    session: str,
    between: Callable[[dict[str, Any]], None],
    tool_outputs: list[str] | None = None,
) -> dict[str, Any]:
    """A turn with ``token`` and ``backend``, checked by ``between``, then, in the same QwenPaw
    home, a turn of session ``<session>-next`` with the write token and reme serve's url, whose
    result is returned."""
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    with ScriptedServer(script) as model:
        env = set_up(python, tmp, f"{model.url}/v1", backend, token)
        between(_turns(python, env, tmp, script, (QUESTION,), session, "RemeMemoryManager"))
        if tool_outputs is not None:  # what the tool answered in that first turn
            tool_outputs.extend(script.tool_outputs())
        agent_json = tmp / "qwenpaw" / "workspaces" / "default" / "agent.json"
        agent = json.loads(agent_json.read_text(encoding="utf-8"))
        agent["running"]["memory_backend_configs"] = {"reme": {"url": served.url}}
        agent_json.write_text(json.dumps(agent, indent=2), encoding="utf-8")
        env = {**env, "REME_TOKEN": served.token}
        return _turns(python, env, tmp, script, (QUESTION,), f"{session}-next", "RemeMemoryManager")


def spooled(tmp: Path, session: str) -> list[str]:
    """The user turns of ``session`` waiting in the plugin's spool (the agent's reme-spool/)."""
    path = tmp / "qwenpaw" / "workspaces" / "default" / "reme-spool" / f"qwenpaw-{session}.json"
    if not path.is_file():
        return []
    pending = json.loads(path.read_text(encoding="utf-8"))
    return [t["content"] for t in pending["messages"] if t["role"] == "user"]


def test_qwenpaw_recalls_and_records_through_reme_serve(
    qwenpaw_python: Path, served: Served, tmp_path: Path
) -> None:
    result, script = ask(qwenpaw_python, tmp_path, served, served.token)
    context = result["_context"]
    outputs = script.tool_outputs()
    assert outputs, f"no tool answer for {TOOL}\n{context}"
    assert TOKEN_OF_FACT in outputs[-1] and "notes/kiln.md" in outputs[-1], outputs[-1]
    assert TOKEN_OF_FACT in result["answer"], context
    assert [t["status"] for t in result["tasks"]] == ["completed"], result["tasks"]
    # Named by QwenPaw's chat session (the request's), not its agent's per-request uuid.
    transcript = served.workspace / "sessions" / "qwenpaw-kiln-1.jsonl"
    assert transcript.is_file(), sorted(p.name for p in (served.workspace / "sessions").glob("*"))
    assert transcript.name in result["tasks"][0]["result"], result["tasks"]
    turns = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    assert turns[0]["role"] == "user" and turns[0]["content"] == QUESTION, turns[0]
    assert TOKEN_OF_FACT in turns[-1]["content"], turns[-1]
    notes = list((served.workspace / "daily").glob("*/*.md"))
    assert len(notes) == 1, notes
    meta, _ = parse_frontmatter(notes[0].read_text(encoding="utf-8"))
    assert meta["source"] == f"[[sessions/{transcript.name}]]", meta
    server_log = served.log.read_text(errors="replace")
    assert '"POST /api/v1/search HTTP/1.1" 200' in server_log, server_log[-3000:]
    assert '"POST /api/v1/auto_memory HTTP/1.1" 200' in server_log, server_log[-3000:]


def test_qwenpaw_with_a_wrong_token_still_answers(
    qwenpaw_python: Path, served: Served, tmp_path: Path
) -> None:
    """reme refuses both calls: the tool answers with the error, the model still gets its turn,
    capture logs one warning line, and nothing is written."""
    before = sorted((served.workspace / "sessions").glob("*.jsonl"))
    result, script = ask(qwenpaw_python, tmp_path, served, "reme_wrong")
    outputs = script.tool_outputs()
    assert outputs and "HTTP 401" in outputs[-1], outputs
    assert result["answer"].startswith("From the workspace: Error: memory search failed"), result
    warnings = [line for line in result["_stderr"].splitlines() if "reme capture skipped" in line]
    assert len(warnings) == 1 and "HTTP 401" in warnings[0], result["_stderr"][-3000:]
    assert "turn(s) kept in" in warnings[0], warnings
    assert [t["status"] for t in result["tasks"]] == ["completed"], result["tasks"]
    assert sorted((served.workspace / "sessions").glob("*.jsonl")) == before
    assert spooled(tmp_path, "kiln-1") == [QUESTION]  # kept for the next capture


def test_qwenpaw_with_a_bad_reme_setting_starts_without_memory(
    qwenpaw_python: Path, served: Served, tmp_path: Path
) -> None:
    """An unknown setting stops the backend with one line naming it; QwenPaw's memory service is
    optional, so the agent starts and answers without long-term memory."""
    backend = {"url": served.url, "capture_evry": 2}
    result, script = ask(qwenpaw_python, tmp_path, served, served.token, backend, manager=None)
    assert "unknown setting(s) ['capture_evry']" in result["_stderr"], result["_stderr"][-3000:]
    assert TOOL not in script.offered_tools(), script.offered_tools()
    assert result["answer"], result["_context"]


def test_a_second_turn_captures_only_its_new_turns(
    qwenpaw_python: Path, served: Served, tmp_path: Path
) -> None:
    """Two turns of one QwenPaw session: each capture hands reme only the turn it follows, so the
    transcript holds each question once, in order."""
    before = set((served.workspace / "sessions").glob("qwenpaw-*.jsonl"))
    second = "And what is the tag on the kiln key?"
    result, _ = ask(
        qwenpaw_python,
        tmp_path,
        served,
        served.token,
        questions=(QUESTION, second),
        session="kiln-2",
    )
    assert [t["status"] for t in result["tasks"]] == ["completed", "completed"], result["tasks"]
    assert all(TOKEN_OF_FACT in answer for answer in result["answers"]), result["answers"]
    new = sorted(set((served.workspace / "sessions").glob("qwenpaw-*.jsonl")) - before)
    assert [p.name for p in new] == ["qwenpaw-kiln-2.jsonl"], new  # one chat, one transcript
    turns = [json.loads(line) for line in new[0].read_text(encoding="utf-8").splitlines()]
    asked = [t["content"] for t in turns if t["role"] == "user"]
    assert asked == [QUESTION, second], turns


def test_qwenpaw_with_reme_down_still_answers(
    qwenpaw_python: Path, served: Served, tmp_path: Path
) -> None:
    """Nothing listens at the url: the tool says reme cannot be reached, the agent still answers,
    capture logs one line."""
    with socket.socket() as probe:  # a port that was free a moment ago, nothing on it now
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"
    result, script = ask(
        qwenpaw_python, tmp_path, served, served.token, {"url": down, "timeout": 5}
    )
    outputs = script.tool_outputs()
    assert outputs and f"cannot reach reme at {down}" in outputs[-1], outputs
    assert result["answer"].startswith("From the workspace: Error: memory search failed"), result
    warnings = [line for line in result["_stderr"].splitlines() if "reme capture skipped" in line]
    assert len(warnings) == 1 and "cannot reach reme" in warnings[0], result["_stderr"][-3000:]
    assert [t["status"] for t in result["tasks"]] == ["completed"], result["tasks"]
    assert spooled(tmp_path, "kiln-1") == [QUESTION]  # kept for the next capture


def test_a_server_that_never_answers_holds_the_reply_only_for_the_search_bound(
    qwenpaw_python: Path, served: Served, tmp_path: Path
) -> None:
    """reme accepts the connection and never answers: the search (in the reply) fails after the
    default search_timeout, 10 s, not the 30 s of timeout, and the agent still answers; the
    capture (QwenPaw's background worker) fails after its timeout with one line and keeps the
    turn, which the next capture with a good server saves."""

    def hung(first: dict[str, Any]) -> None:
        assert first["answer"].startswith("From the workspace: Error: memory search failed"), first
        warnings = [
            line for line in first["_stderr"].splitlines() if "reme capture skipped" in line
        ]
        assert len(warnings) == 1, first["_stderr"][-3000:]
        assert "did not answer auto_memory within 3 s" in warnings[0], warnings
        assert [t["status"] for t in first["tasks"]] == ["completed"], first["tasks"]
        assert spooled(tmp_path, "kiln-hung") == [QUESTION], first["_context"]

    with hosts.silent_server() as silent:
        script_outputs: list[str] = []
        last = ask_then_recover(
            qwenpaw_python,
            tmp_path,
            served,
            served.token,
            {"url": silent, "timeout": 3},
            "kiln-hung",
            hung,
            script_outputs,
        )
    assert any("did not answer search within 10 s" in o for o in script_outputs), script_outputs
    assert TOKEN_OF_FACT in last["answer"], last["_context"]
    assert spooled(tmp_path, "kiln-hung") == []
    path = served.workspace / "sessions" / "qwenpaw-kiln-hung.jsonl"
    assert _user_turns(path) == [QUESTION], path


APP_START_S = 180
CAPTURE_WAIT_S = 60


def _answer_of(sse: str) -> str:
    """The assistant's text in the final ``response`` event of a console chat's SSE stream."""
    texts: list[str] = []
    for line in sse.splitlines():
        if not line.startswith("data: "):
            continue
        event = json.loads(line[len("data: ") :])
        if isinstance(event, dict) and event.get("object") == "response":
            texts = [
                str(part.get("text") or "")
                for item in event.get("output") or []
                if item.get("type") == "message" and item.get("role") == "assistant"
                for part in item.get("content") or []
                if part.get("type") == "text"
            ]
    return "\n".join(texts)


def _chat(base: str, session: str, question: str) -> str:
    """``POST /api/console/chat`` (QwenPaw's web console's chat route) with one user message;
    the whole SSE stream, read to its end."""
    body = {
        "input": [{"role": "user", "content": [{"type": "text", "text": question}]}],
        "session_id": session,
        "user_id": "reme-test",
        "channel": "console",
    }
    request = urllib.request.Request(
        f"{base}/api/console/chat",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=RUN_TIMEOUT_S) as response:
        assert response.status == 200, response.status
        return response.read().decode("utf-8")


def _user_turns(path: Path) -> list[str]:
    if not path.is_file():
        return []
    turns = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [t["content"] for t in turns if t["role"] == "user"]


def test_qwenpaw_app_serves_a_chat_that_recalls_and_captures(
    qwenpaw_python: Path, served: Served, tmp_path: Path
) -> None:
    """``qwenpaw app`` (its own web server, on 127.0.0.1) with the plugin installed: two chat
    requests of one session over its HTTP API (``POST /api/console/chat``, streamed) recall the
    fact through ``memory_search`` and reme, and QwenPaw's auto-memory worker captures each turn
    into one transcript, new turns only, without QwenPaw's first-run guidance (its bootstrap
    hook puts it in front of the first message on this path)."""
    second = "And what is the tag on the kiln key?"
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    transcript = served.workspace / "sessions" / "qwenpaw-kiln-app.jsonl"
    log_path = tmp_path / "app.log"
    with ScriptedServer(script) as model:
        env = set_up(qwenpaw_python, tmp_path, f"{model.url}/v1", {"url": served.url}, served.token)
        port = hosts.free_port()
        command = [str(qwenpaw_python), "-m", "qwenpaw", "app", "--host", "127.0.0.1"]
        with log_path.open("wb") as log:
            app = subprocess.Popen(
                [*command, "--port", str(port)],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + APP_START_S
            while True:
                text = log_path.read_text(errors="replace")
                assert app.poll() is None, f"qwenpaw app exited:\n{text[-4000:]}"
                assert time.monotonic() < deadline, f"qwenpaw app did not start:\n{text[-4000:]}"
                try:
                    with urllib.request.urlopen(f"{base}/api/healthz", timeout=5) as health:
                        if "default" in json.loads(health.read()).get("agents_loaded", []):
                            break
                except OSError:
                    pass
                time.sleep(0.5)
            answers = []
            for n, question in enumerate((QUESTION, second), start=1):
                answers.append(_answer_of(_chat(base, "kiln-app", question)))
                deadline = time.monotonic() + CAPTURE_WAIT_S  # the worker runs after the reply
                while len(_user_turns(transcript)) < n:
                    assert time.monotonic() < deadline, log_path.read_text(errors="replace")[-4000:]
                    time.sleep(0.2)
        finally:
            app.terminate()
            try:
                app.wait(timeout=30)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()
    log = log_path.read_text(errors="replace")
    assert "reme capture skipped" not in log, log[-4000:]
    assert TOOL in script.offered_tools(), script.offered_tools()
    outputs = script.tool_outputs()
    assert outputs and TOKEN_OF_FACT in outputs[-1] and "notes/kiln.md" in outputs[-1], outputs
    assert all(TOKEN_OF_FACT in answer for answer in answers), answers
    assert _user_turns(transcript) == [QUESTION, second], transcript.read_text(encoding="utf-8")
    notes = [
        path
        for path in (served.workspace / "daily").glob("*/*.md")
        if parse_frontmatter(path.read_text(encoding="utf-8"))[0].get("source")
        == f"[[sessions/{transcript.name}]]"
    ]
    assert len(notes) == 1, notes
    assert "BOOTSTRAP" not in notes[0].read_text(encoding="utf-8")
    server_log = served.log.read_text(errors="replace")
    assert '"POST /api/v1/search HTTP/1.1" 200' in server_log, server_log[-3000:]
    assert '"POST /api/v1/auto_memory HTTP/1.1" 200' in server_log, server_log[-3000:]


def test_a_read_only_token_recalls_and_the_next_capture_saves_the_kept_turn(
    qwenpaw_python: Path, served: Served, tmp_path: Path
) -> None:
    """A read token: recall works, reme refuses the capture (one line), the turn waits in the
    spool; the next capture, of another session with a write token, saves it too."""
    env = clean_env()
    read_only = hosts.new_token(served.workspace, env, "read")

    def refused(first: dict[str, Any]) -> None:
        assert TOKEN_OF_FACT in first["answer"], first["_context"]  # recall works, read token
        stderr = first["_stderr"]
        warnings = [line for line in stderr.splitlines() if "reme capture skipped" in line]
        assert len(warnings) == 1 and "HTTP 403" in warnings[0], stderr[-3000:]
        assert not (served.workspace / "sessions" / "qwenpaw-kiln-ro.jsonl").exists()
        assert spooled(tmp_path, "kiln-ro") == [QUESTION]

    then = ask_then_recover(
        qwenpaw_python, tmp_path, served, read_only, {"url": served.url}, "kiln-ro", refused
    )
    assert TOKEN_OF_FACT in then["answer"], then["_context"]
    assert "reme capture skipped" not in then["_stderr"], then["_stderr"][-3000:]
    for session in ("kiln-ro", "kiln-ro-next"):
        saved = served.workspace / "sessions" / f"qwenpaw-{session}.jsonl"
        assert _user_turns(saved) == [QUESTION], session
    assert not spooled(tmp_path, "kiln-ro")
