"""reme inside a real AgentScope agent, pinned, against a scripted model.

``integrations/agentscope/requirements.txt`` pins ``agentscope``; a session fixture installs it,
reme (editable, this checkout) and ``reme-agentscope`` (editable) into
``$XDG_CACHE_HOME/reme/hosts/agentscope-<version>`` (else ``~/.cache/...``; pip_hosts.py). Each
scenario runs in a subprocess with that venv's python, offline:

- an ``agentscope.agent.Agent`` (2.x's ReAct agent) with an ``OpenAIChatModel`` that streams from
  a scripted Chat Completions server on 127.0.0.1 (scripted_openai_chat.py), and
  ``RemeLongTermMemory`` as its middleware and tools (agentscope_agent.py): the scripted model
  calls ``retrieve_from_memory``, whose answer only the workspace holds, then answers with it;
  the reply is recorded under ``sessions/`` and ``daily/``. Once embedded (reme in the agent's
  process), once over HTTP to ``reme serve`` with a write token (the server log shows the calls);
- a session resumed from its saved ``AgentState`` captures only its new turns (the question said
  again is a second turn, the first session's turns are not written twice);
- faults lose no turn: a wrong token, reme down and a read-only token each give one log line and
  the agent still answers; the turns wait in the memory's spool, and the next capture with a write
  token saves all of them;
- ``reme_agentscope.ReMeLight`` driven as an agent drives ReMe's (agentscope_light.py), and its
  signatures checked against ReMe's (remelight_signatures.json, from reme-ai 0.3.1.10: the
  installed reme-ai 0.4.2.0 has no ReMeLight any more).

QwenPaw (``qwenpaw`` 2.2.2.post1) is not installed here: it pins ``agentscope==2.0.10`` and
``reme-ai==0.4.1.11``, so it cannot share this venv. It gets its own venv and reme through its
memory-backend plugin (integrations/qwenpaw/), tested in test_qwenpaw_host.py.
"""

from __future__ import annotations

import ast
import json
import subprocess
from collections.abc import Iterator
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
INTEGRATION = ROOT / "integrations" / "agentscope"
REQUIREMENTS = INTEGRATION / "requirements.txt"
SIGNATURES = HERE / "remelight_signatures.json"
FACT = "The larkspur kiln key hangs behind the blue enamel door, tag 7Q-ORCHID."
TOKEN_OF_FACT = "7Q-ORCHID"
QUESTION = "Where does the larkspur kiln key hang?"
TOOL = "retrieve_from_memory"
RUN_TIMEOUT_S = 300


def clean_env(**extra: str) -> dict[str, str]:
    return hosts.clean_env(("OPENAI_", "AGENTSCOPE_"), **KEYWORD_ONLY_ENV, **extra)


@pytest.fixture(scope="session")
def agentscope_python() -> Path:
    """The python of the venv with the pinned agentscope, reme and reme-agentscope."""
    version = pip_hosts.pinned(REQUIREMENTS, "agentscope")
    python = pip_hosts.pip_venv("agentscope", version, REQUIREMENTS, [ROOT, INTEGRATION])
    probe = (
        "import importlib.util, agentscope, reme_agentscope; "
        "print(agentscope.__version__, importlib.util.find_spec('torch') is not None)"
    )
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [version, "False"], done.stdout  # no torch came in at all
    return python


def run_in_venv(python: Path, script: str, arg: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [str(python), str(HERE / script), arg],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    context = (
        f"rc {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    )
    assert done.returncode == 0, context
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["_stderr"] = done.stderr
    result["_context"] = context
    return result


def ask_agent(python: Path, memory: dict[str, str]) -> tuple[dict[str, Any], Script]:
    """The agent answers QUESTION with ``memory`` (``workspace`` or ``url`` + ``token``, a
    ``spool`` folder; ``state_in`` / ``state_out`` to resume and save the agent's session)."""
    script = Script(tool=TOOL, arguments={"keywords": ["larkspur", "kiln", "key"]})
    with ScriptedServer(script) as model:
        spec = {"model_url": f"{model.url}/v1", "question": QUESTION, "stream": True, **memory}
        env = clean_env(REME_TIMEZONE="UTC", NO_PROXY="127.0.0.1,localhost")
        result = run_in_venv(python, "agentscope_agent.py", json.dumps(spec), env)
    bodies = script.chat_requests()
    assert bodies, f"the agent never called the model\n{result['_context']}"
    assert all(body.get("stream") is True for body in bodies)  # the agent streamed
    assert TOOL in script.offered_tools(), script.offered_tools()
    return result, script


def assert_recalled(result: dict[str, Any], script: Script) -> None:
    outputs = script.tool_outputs()
    assert outputs, f"no tool answer for {TOOL}\n{result['_context']}"
    assert TOKEN_OF_FACT in outputs[-1] and "notes/kiln.md" in outputs[-1], outputs[-1]
    assert TOKEN_OF_FACT in result["answer"], result["_context"]


def assert_captured(workspace: Path, session_id: str) -> None:
    """The reply is saved: the transcript under sessions/, a daily note linking back to it."""
    transcript = workspace / "sessions" / f"agentscope-{session_id}.jsonl"
    assert transcript.is_file(), sorted(p.name for p in (workspace / "sessions").glob("*"))
    turns = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    assert turns[0]["role"] == "user" and turns[0]["content"] == QUESTION, turns[0]
    assert TOKEN_OF_FACT in turns[-1]["content"], turns[-1]
    assert not any("<system-reminder>" in t["content"] for t in turns)  # the agent's own hints
    notes = list((workspace / "daily").glob("*/*.md"))
    assert len(notes) == 1, notes
    meta, _ = parse_frontmatter(notes[0].read_text(encoding="utf-8"))
    assert meta["source"] == f"[[sessions/agentscope-{session_id}.jsonl]]", meta


def test_agent_recalls_and_records_in_an_embedded_workspace(
    agentscope_python: Path, tmp_path: Path
) -> None:
    workspace = hosts.one_note_workspace(tmp_path / "ws", FACT)
    result, script = ask_agent(agentscope_python, {"workspace": str(workspace)})
    assert result["tools"] == ["retrieve_from_memory", "record_to_memory"]
    assert_recalled(result, script)
    assert_captured(workspace, result["session_id"])


Served = hosts.Served


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``reme serve`` over a one-note workspace, with a write-profile token for the agent."""
    folder = tmp_path_factory.mktemp("agentscope_host")
    with hosts.served_one_note(folder, FACT, clean_env(REME_TIMEZONE="UTC")) as served:
        yield served


def test_agent_recalls_and_records_over_http_with_the_token(
    agentscope_python: Path, served: Served
) -> None:
    result, script = ask_agent(agentscope_python, {"url": served.url, "token": served.token})
    assert_recalled(result, script)
    assert_captured(served.workspace, result["session_id"])
    server_log = served.log.read_text(errors="replace")
    assert '"POST /api/v1/search HTTP/1.1" 200' in server_log, server_log[-3000:]
    assert '"POST /api/v1/auto_memory HTTP/1.1" 200' in server_log, server_log[-3000:]


def saved_turns(workspace: Path, session_id: str) -> list[dict[str, Any]]:
    path = workspace / "sessions" / f"agentscope-{session_id}.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def spooled(spool: Path) -> dict[str, list[str]]:
    """The user turns waiting in the memory's spool, by session."""
    out: dict[str, list[str]] = {}
    for path in sorted(spool.glob("*.json")):
        kept = json.loads(path.read_text(encoding="utf-8"))
        out[kept["session_id"]] = [m["content"] for m in kept["messages"] if m["role"] == "user"]
    return out


def capture_warnings(result: dict[str, Any]) -> list[str]:
    return [line for line in result["_stderr"].splitlines() if "reme capture" in line]


def test_a_resumed_session_captures_only_its_new_turns(
    agentscope_python: Path, tmp_path: Path
) -> None:
    """The second session resumes the first (its saved AgentState, context included) and is
    asked the same question again: the transcript keeps the first session's lines as they were
    and gains only the second's turns; the question said twice is two turns."""
    workspace = hosts.one_note_workspace(tmp_path / "ws", FACT)
    state = tmp_path / "state.json"
    memory = {"workspace": str(workspace), "spool": str(tmp_path / "spool")}
    first, script = ask_agent(agentscope_python, {**memory, "state_out": str(state)})
    assert_recalled(first, script)
    assert_captured(workspace, first["session_id"])
    path = workspace / "sessions" / f"agentscope-{first['session_id']}.jsonl"
    before = path.read_text(encoding="utf-8").splitlines()
    second, _ = ask_agent(agentscope_python, {**memory, "state_in": str(state)})
    assert second["session_id"] == first["session_id"], second["_context"]
    assert TOKEN_OF_FACT in second["answer"], second["_context"]
    after = path.read_text(encoding="utf-8").splitlines()
    assert after[: len(before)] == before  # the first session's lines, untouched
    added = [json.loads(line) for line in after[len(before) :]]
    assert [t["role"] for t in added] == ["user", "assistant"], added
    assert added[0]["content"] == QUESTION and TOKEN_OF_FACT in added[1]["content"], added
    users = [
        t["content"] for t in saved_turns(workspace, first["session_id"]) if t["role"] == "user"
    ]
    assert users == [QUESTION, QUESTION]
    assert capture_warnings(first) == capture_warnings(second) == []
    assert not list((tmp_path / "spool").glob("*.json"))


def test_faults_never_fail_the_agent_and_lose_no_turn(
    agentscope_python: Path, served: Served, tmp_path: Path
) -> None:
    """A wrong token, reme down, then a read-only token: each time the agent answers, capture
    logs one line and the turn waits in the spool; the next capture with a write token saves
    every kept session, each turn once, and empties the spool."""
    spool = tmp_path / "spool"
    sessions = served.workspace / "sessions"
    before = sorted(sessions.glob("*.jsonl"))
    read_only = hosts.new_token(served.workspace, clean_env(REME_TIMEZONE="UTC"), "read")
    faults = [
        ({"url": served.url, "token": "reme_wrong"}, "HTTP 401"),
        ({"url": hosts.closed_port_url(), "token": served.token}, "cannot reach reme"),
        ({"url": served.url, "token": read_only}, "HTTP 403"),
    ]
    kept: list[str] = []
    for memory, reason in faults:
        result, script = ask_agent(agentscope_python, {**memory, "spool": str(spool)})
        context = result["_context"]
        if memory["token"] == read_only:
            assert_recalled(result, script)  # a read token may search
        else:
            assert result["answer"].startswith("From the workspace: Error: memory search failed")
            assert reason in script.tool_outputs()[-1], script.tool_outputs()
        warnings = capture_warnings(result)
        assert len(warnings) == 1, context
        assert reason in warnings[0] and "kept in" in warnings[0], warnings[0]
        assert "reme capture skipped" in warnings[0], warnings[0]
        kept.append(f"agentscope-{result['session_id']}")
        assert spooled(spool) == {session: [QUESTION] for session in kept}, context
        assert sorted(sessions.glob("*.jsonl")) == before  # nothing reached the workspace
    last, script = ask_agent(
        agentscope_python, {"url": served.url, "token": served.token, "spool": str(spool)}
    )
    assert_recalled(last, script)
    assert capture_warnings(last) == [], last["_context"]
    assert spooled(spool) == {}
    for session in [*kept, f"agentscope-{last['session_id']}"]:
        turns = saved_turns(served.workspace, session.removeprefix("agentscope-"))
        assert [t["content"] for t in turns if t["role"] == "user"] == [QUESTION], session
        assert TOKEN_OF_FACT in turns[-1]["content"] or "Error" in turns[-1]["content"], turns
        notes = [
            n
            for n in (served.workspace / "daily").glob("*/*.md")
            if parse_frontmatter(n.read_text(encoding="utf-8"))[0].get("source")
            == f"[[sessions/{session}.jsonl]]"
        ]
        assert len(notes) == 1, session


def test_remelight_manager_in_an_agentscope_venv(agentscope_python: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "light"
    got = run_in_venv(agentscope_python, "agentscope_light.py", str(workspace), clean_env())
    context = got["_context"]
    # Tool outputs: cut in the caller's Msg, the whole output in tool_results/.
    assert got["tool_cut"] == {
        "same_objects": True,
        "output_bytes": got["tool_cut"]["output_bytes"],
        "mentions_spill": True,
        "spills": ["call_1.txt"],
    }, context
    assert got["tool_cut"]["output_bytes"] < 3500
    assert len((workspace / "tool_results" / "call_1.txt").read_text()) > 100_000
    # check_context cuts between whole messages, keeping the latest.
    assert got["check"] == {"compact": 11, "keep": 1, "valid": True, "in_order": True,
                            "keeps_last": True}, context  # fmt: skip
    assert got["check_under"] == [0, 12, True]
    assert got["compact"]["dict_keys"] == ["history_compact", "is_valid", "user_message"]
    assert "otter-lamp" in got["compact"]["summary"], context
    # The hook kept the latest messages, summarised the rest, and persisted them in the
    # background: await_summary_tasks reports the transcript and the daily note written.
    hook = got["hook"]
    assert 0 < hook["kept"] < hook["given"] and hook["kept_last"] and hook["tasks"] == 1, hook
    assert hook["summary"].strip(), hook
    assert got["await"].startswith("Summary task completed: saved "), got["await"]
    assert "sessions/agentscope-light-1.jsonl" in got["await"], got["await"]
    assert (workspace / "sessions" / "agentscope-light-1.jsonl").is_file()
    assert got["search"]["is_tool_response"], got["search"]
    assert "sessions/agentscope-light-1.jsonl#L" in got["search"]["text"], got["search"]
    assert got["search_empty"] == "Error: No query provided."
    assert got["in_memory"]["removed"] == 2 and got["in_memory"]["size"] == 2
    assert got["in_memory"]["first_is_summary"] and got["in_memory"]["dialog_files"], got
    assert got["bad_input"] == "messages must be a list of agentscope Msg objects, not str"
    assert got["closed"] is True
    assert_same_signatures(got["signatures"])


def assert_same_signatures(ours: dict[str, Any]) -> None:
    """Every public method of ReMe's ReMeLight is here: same kind (coroutine, static, property),
    the same parameters in the same order and kind, with equal defaults; anything added after
    them is keyword-only with a default, so no call written for ReMe's changes meaning."""
    reference = json.loads(SIGNATURES.read_text(encoding="utf-8"))["methods"]
    for name, theirs in reference.items():
        assert name in ours, f"ReMeLight.{name} is missing"
        mine = ours[name]
        if "property" in theirs["decorators"]:
            assert mine.get("property"), f"{name} must be a property"
            continue
        assert mine["async"] == theirs["async"], f"{name}: async {mine['async']}"
        assert mine["static"] == ("staticmethod" in theirs["decorators"]), name
        wanted = theirs["parameters"]
        given = mine["parameters"]
        for want, have in zip(wanted, given, strict=False):
            where = f"ReMeLight.{name}({want['name']})"
            assert have["name"] == want["name"] and have["kind"] == want["kind"], (where, have)
            assert ("default" in have) == ("default" in want), where
            if "default" in want:
                assert ast.literal_eval(have["default"]) == _value(want["default"]), (where, have)
        assert len(given) >= len(wanted), f"{name}: parameters {given}"
        for extra in given[len(wanted) :]:
            assert extra["kind"] == "KEYWORD_ONLY" and "default" in extra, (name, extra)


def _value(source: str) -> Any:
    """A default as ReMe's source writes it (``128 * 1024``, ``'default'``, ``None``)."""
    tree = ast.parse(source, mode="eval")
    allowed = (ast.Expression, ast.Constant, ast.BinOp, ast.Mult, ast.UnaryOp, ast.USub)
    assert all(isinstance(node, allowed) for node in ast.walk(tree)), source
    return eval(compile(tree, "<default>", "eval"), {"__builtins__": {}})


def test_a_server_that_never_answers_holds_the_reply_only_for_the_bounds(
    agentscope_python: Path, served: Served, tmp_path: Path
) -> None:
    """A reme server that accepts the connection and never answers: with the default bounds the
    search fails after 10 s and the capture after 5 s (not the HTTP client's 60), the agent
    answers, capture logs one line and the turn waits in the spool; the next capture with a good
    server saves it and empties the spool."""
    spool = tmp_path / "spool"
    with hosts.silent_server() as silent:
        result, script = ask_agent(
            agentscope_python, {"url": silent, "token": served.token, "spool": str(spool)}
        )
    assert result["answer"].startswith("From the workspace: Error: memory search failed")
    assert "did not answer search within 10 s" in script.tool_outputs()[-1], script.tool_outputs()
    warnings = capture_warnings(result)
    assert len(warnings) == 1, result["_context"]
    assert "did not answer auto_memory within 5 s" in warnings[0], warnings[0]
    assert "kept in" in warnings[0], warnings[0]
    session = f"agentscope-{result['session_id']}"
    assert spooled(spool) == {session: [QUESTION]}, result["_context"]
    last, script = ask_agent(
        agentscope_python, {"url": served.url, "token": served.token, "spool": str(spool)}
    )
    assert_recalled(last, script)
    assert capture_warnings(last) == [], last["_context"]
    assert spooled(spool) == {}
    users = [t["content"] for t in saved_turns(served.workspace, result["session_id"])]
    assert users[0] == QUESTION and "Error" in users[-1], users
