"""The Claude Code plugin inside the real ``claude`` program, pinned, against a scripted model.

``integrations/claude_code/host/package.json`` pins ``@anthropic-ai/claude-code``; a session
fixture installs it with ``npm ci`` into ``$XDG_CACHE_HOME/reme/hosts/claude-code-<version>``
(else ``~/.cache/...``; reinstalled only when the lock file changes). Everything runs offline:
``reme serve`` on a one-note workspace (keyword search, no model) with a write-profile token, a
scripted Anthropic Messages server on 127.0.0.1 (scripted_anthropic.py) and ``claude -p`` with a
temporary HOME and CLAUDE_CONFIG_DIR, which the server shares (it reads transcripts from there).

The plugin is installed by Claude Code's own installer (``claude plugin marketplace add`` and
``claude plugin install --scope project`` into one project folder), after its validator passed
both manifests. One session runs in that folder and is resumed for every later turn: the scripted
model calls reme's search through the plugin's MCP entry and quotes what it returned; the
plugin's Stop/SessionEnd hook saves each turn under ``sessions/`` and ``daily/``, a resumed turn
only adds the new turns, and a turn run with the server down, a wrong token or a read-only token
still answers, tells Claude Code one ``reme:`` line (its debug log) and is saved by the next turn,
which also reports two lines the capture does not know, written into the host's transcript. A
half-written last line is tested at the hook level on a copy of that real transcript (the host
cannot be made to leave one). A png the host's Read tool opens is kept under ``resource/sessions/``
from the tool_result the host writes. Last, ``reme integrate claude-code`` (project and user scope)
connects the real host without the plugin, and ``--remove`` disconnects it.

Without node and npm the tests are skipped, unless REME_REQUIRE_HOSTS=1 (CI), where they fail.
"""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import KEYWORD_ONLY_ENV
from PIL import Image

from reme_core.server.auth import TokenStore
from reme_core.workspace import parse_frontmatter
from tests.integrations import hosts
from tests.integrations.claude_host import (
    FACT,
    HOST_PIN,
    PACKAGE,
    PLUGIN,
    QUESTION,
    TOKEN_OF_FACT,
    TOOL,
    Served,
    Turn,
    ask,
    claude,
    clean_env,
    closed_port_url,
    daily_note,
    host_env,
    is_answer,
    logs,
    run_hook,
    saved_turns,
    turn_count,
    wait_for,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The pinned ``claude``, installed with ``npm ci`` from the committed lock file."""
    home, version = hosts.npm_install(HOST_PIN, PACKAGE, "claude-code")
    binary = home / "node_modules" / ".bin" / "claude"
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and version in done.stdout, done.stdout + done.stderr
    return binary


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``reme serve`` over a one-note workspace, sharing CLAUDE_CONFIG_DIR with the host (the
    server reads the transcript by session id from there); a write and a read token."""
    tmp = tmp_path_factory.mktemp("claude_host")
    workspace, home = hosts.one_note_workspace(tmp / "ws", FACT), tmp / "home"
    config_dir = home / ".claude"
    config_dir.mkdir(parents=True)
    env = clean_env(**KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC", CLAUDE_CONFIG_DIR=str(config_dir))
    with hosts.reme_served(workspace, tmp / "server.log", env, "write") as (server, token):
        _, read_token = TokenStore(workspace / ".reme").create("read", ["default"], "read only")
        yield Served(server["url"], token, read_token, workspace, config_dir, home, tmp)


# -- the plugin, installed by Claude Code's own installer ------------------------------------


class Installed(NamedTuple):
    project: Path
    listed: dict[str, Any]
    validated: list[dict[str, Any]]


@pytest.fixture(scope="session")
def installed(claude_bin: Path, served: Served) -> Installed:
    """The plugin validated (``claude plugin validate --strict``, both manifests), added as a
    marketplace and installed with project scope into one project folder, where later runs
    find it without ``--plugin-dir``."""
    env = host_env(served, "http://127.0.0.1:9")  # no model call is made here
    validated = []
    for manifest in ("plugin.json", "marketplace.json"):
        done = claude(
            claude_bin,
            ["plugin", "validate", "--strict", "--json", str(PLUGIN / ".claude-plugin" / manifest)],
            served.tmp,
            env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        validated.append(json.loads(done.stdout))
    project = served.tmp / "project"
    project.mkdir()
    for args in (
        ["plugin", "marketplace", "add", str(PLUGIN)],
        ["plugin", "install", "reme@reme", "--scope", "project"],
    ):
        done = claude(claude_bin, args, project, env)
        assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    done = claude(claude_bin, ["plugin", "list", "--json"], project, env)
    assert done.returncode == 0, done.stderr
    listed = {p["id"]: p for p in json.loads(done.stdout)}
    return Installed(project, listed, validated)


def test_claude_codes_validator_and_installer_take_the_plugin_as_one(installed: Installed) -> None:
    plugin, market = installed.validated
    assert plugin["success"] and plugin["manifest"]["type"] == "plugin", plugin
    assert plugin["manifest"]["errors"] == [] and plugin["manifest"]["warnings"] == []
    provides = plugin["provides"]
    assert sorted(h["event"] for h in provides["hooks"]) == ["SessionEnd", "Stop"]
    assert [s["name"] for s in provides["mcpServers"]] == ["reme"]
    assert provides["skills"] == ["reme:recall"]
    assert market["success"] and market["manifest"]["warnings"] == [], market
    entry = installed.listed.get("reme@reme")
    assert entry and entry["enabled"] and entry["scope"] == "project", installed.listed
    copy = Path(entry["installPath"])
    for part in (
        "hooks/hooks.json",
        "hooks/reme_stop_hook.py",
        ".mcp.json",
        "skills/recall/SKILL.md",
    ):
        assert (copy / part).is_file(), part
    # The host pin stays out of the plugin's root: the installer would `npm ci` it (385 MB).
    assert not (copy / "node_modules").exists() and not (copy / "package.json").exists()


# -- one session, resumed: recall, capture, only new turns, faults ---------------------------


class Session(NamedTuple):
    id: str
    first: Turn
    hook_log: Path


@pytest.fixture(scope="session")
def session(claude_bin: Path, served: Served, installed: Installed) -> Session:
    hook_log = served.tmp / "hook.log"
    turn = ask(
        claude_bin,
        served,
        installed.project,
        QUESTION,
        REME_URL=served.url,
        REME_TOKEN=served.token,
        REME_HOOK_LOG=str(hook_log),
    )
    assert turn.done.returncode == 0, turn.context()
    return Session(turn.output["session_id"], turn, hook_log)


def test_claude_recalls_from_reme_and_the_hook_saves_the_session(
    served: Served, session: Session
) -> None:
    turn = session.first
    # The host called reme's tool over MCP with the token: its result reached the model.
    results = turn.script.tool_results()
    assert results, f"no tool_result for {TOOL}\n{turn.context()}"
    assert TOKEN_OF_FACT in results[-1], f"tool_result without the fact: {results[-1]}"
    # The final answer carries the recalled fact.
    assert TOKEN_OF_FACT in turn.output["result"], turn.context()
    # Stop and SessionEnd ran the plugin's hook; it detached, so poll for what it wrote.
    sid = session.id
    saved = served.workspace / "sessions" / f"{sid}.jsonl"
    note = wait_for(lambda: turn_count(served, sid, 2) and daily_note(served.workspace, sid))
    assert note, f"no capture for {sid}\n{logs(served, session.hook_log)}"
    assert TOKEN_OF_FACT in saved.read_text(encoding="utf-8")
    text = note.read_text(encoding="utf-8")
    front, _ = parse_frontmatter(text)
    assert front.get("summarised") is False  # no model on the reme side: a verbatim excerpt
    assert front.get("source") == f"[[sessions/{sid}.jsonl]]"  # the link back
    assert QUESTION in text and TOKEN_OF_FACT in text
    # The hook told Claude Code how it went: one `reme:` line on its stderr (the debug log).
    relative = note.relative_to(served.workspace).as_posix()
    assert f"reme: {sid}: unsummarised {relative}" in turn.debug, turn.debug[-3000:]
    assert f"{sid}: unsummarised {relative}" in session.hook_log.read_text(encoding="utf-8")


def test_a_resumed_session_adds_only_its_new_turns(
    claude_bin: Path, served: Served, installed: Installed, session: Session
) -> None:
    sid = session.id
    assert wait_for(lambda: turn_count(served, sid, 2)), logs(served, session.hook_log)
    before = saved_turns(served, sid)
    second = "And who keeps the spare kiln key?"
    turn = ask(
        claude_bin,
        served,
        installed.project,
        second,
        resume=sid,
        REME_URL=served.url,
        REME_TOKEN=served.token,
        REME_HOOK_LOG=str(session.hook_log),
    )
    assert turn.done.returncode == 0 and turn.output["session_id"] == sid, turn.context()
    assert wait_for(lambda: turn_count(served, sid, 4)), logs(served, session.hook_log)
    after = saved_turns(served, sid)
    assert after[:2] == before  # append-only: the first turns untouched
    assert [t["role"] for t in after[2:]] == ["user", "assistant"]
    assert after[2]["content"] == second and TOKEN_OF_FACT in after[3]["content"]
    assert len({t["id"] for t in after}) == 4  # no turn twice
    note = daily_note(served.workspace, sid)
    assert note is not None
    text = note.read_text(encoding="utf-8")
    # Each saved turn quoted once, by its line anchor on the turn's own bullet (an answer that
    # quotes a hit from the first session's note may carry that note's anchors in its text).
    bullets = [line for line in text.splitlines() if line.startswith("- **")]
    for line in range(1, 5):
        anchor = f"[[sessions/{sid}.jsonl#L{line}]]"
        assert [anchor in bullet for bullet in bullets].count(True) == 1, text
    quoted = [line.strip() for line in text.splitlines()]  # the excerpt quotes each turn
    assert quoted.count(f"> {QUESTION}") == 1 and quoted.count(f"> {second}") == 1, text


def test_faults_answer_anyway_tell_claude_code_one_line_and_lose_no_turn(
    claude_bin: Path, served: Served, installed: Installed, session: Session
) -> None:
    sid = session.id
    hook_log = served.tmp / "faults.log"
    assert wait_for(lambda: len(saved_turns(served, sid)) >= 2), logs(served, session.hook_log)
    start = len(saved_turns(served, sid))
    down = closed_port_url()
    faults = [
        ("the server down", {"REME_URL": down, "REME_TOKEN": served.token}, "cannot call"),
        ("a wrong token", {"REME_URL": served.url, "REME_TOKEN": "reme_wrong"}, "HTTP 401"),
        ("a read token", {"REME_URL": served.url, "REME_TOKEN": served.read_token}, "HTTP 403"),
    ]
    prompts = []
    for index, (label, env, words) in enumerate(faults):
        prompt = f"Fault turn {index}: {label}. Where is the kiln key?"
        prompts.append(prompt)
        turn = ask(
            claude_bin,
            served,
            installed.project,
            prompt,
            resume=sid,
            REME_HOOK_LOG=str(hook_log),
            **env,
        )
        # The agent's answer comes back, exit 0, whatever the hook met.
        assert turn.done.returncode == 0, f"{label}\n{turn.context()}"
        assert turn.output["session_id"] == sid and turn.output["result"], turn.context()
        if label == "a read token":  # recall needs only read: the answer still quotes it
            assert TOKEN_OF_FACT in turn.output["result"], turn.context()
        # One clear line per hook run in Claude Code's debug log, and the same in the hook log.
        told = [line for line in turn.debug.splitlines() if f"reme: {sid}: not saved" in line]
        assert told and all(words in line for line in told), f"{label}\n{turn.debug[-4000:]}"
        assert f"{sid}: not saved" in hook_log.read_text(encoding="utf-8")
        assert len(saved_turns(served, sid)) == start, label  # nothing written this time
    # And lines the capture does not know (a newer shape, a corrupted line) in the host's own
    # transcript: Claude Code resumes past them; the capture reports them and saves the rest.
    source = next((served.config_dir / "projects").glob(f"*/{sid}.jsonl"))
    strange = {"type": "assistant", "uuid": f"strange-{sid}", "sessionId": sid}
    strange["message"] = {"role": "assistant", "content": {"kind": "text-v9", "body": "x"}}
    with source.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(strange) + "\n{not json\n")
    # The fault removed, the next turn saves every turn the faulty ones could not.
    last = "Fault removed: where is the kiln key now?"
    turn = ask(
        claude_bin,
        served,
        installed.project,
        last,
        resume=sid,
        REME_URL=served.url,
        REME_TOKEN=served.token,
        REME_HOOK_LOG=str(hook_log),
    )
    assert turn.done.returncode == 0 and turn.output["result"], turn.context()
    told = [line for line in turn.debug.splitlines() if "in a format reme does not know" in line]
    assert told and "2 new transcript line(s)" in told[0], turn.debug[-4000:]
    assert "type assistant, content is dict" in told[0]
    total = start + 2 * (len(faults) + 1)
    assert wait_for(lambda: turn_count(served, sid, total)), logs(served, hook_log)
    turns = saved_turns(served, sid)
    users = [t["content"] for t in turns[start:] if t["role"] == "user"]
    assert users == [*prompts, last]
    assert len({t["id"] for t in turns}) == total
    note = daily_note(served.workspace, sid)
    assert note is not None and all(p in note.read_text(encoding="utf-8") for p in prompts)


# -- the hook on a real transcript: a line it does not know, a half-written last line --------


def test_an_unknown_line_and_a_half_written_one_in_a_real_transcript(
    served: Served, session: Session
) -> None:
    """What the host cannot be made to write: its own transcript, copied under a new session
    id, with a line in a shape reme does not know and a last line cut in half."""
    source = next((served.config_dir / "projects").glob(f"*/{session.id}.jsonl"))
    lines = source.read_bytes().splitlines(keepends=True)
    answer = next(i for i, raw in enumerate(lines) if is_answer(raw))  # the first turn's answer
    sid = "c0ffee00-0000-4000-8000-00000000c0de"
    copy = source.with_name(f"{sid}.jsonl")
    strange = {  # a newer shape: content as an object
        "type": "assistant",
        "uuid": "strange-1",
        "message": {"role": "assistant", "content": {"kind": "text-v9", "body": "x"}},
    }
    head = b"".join(lines[:answer])
    cut = lines[answer][: len(lines[answer]) // 2]
    copy.write_bytes(head + json.dumps(strange).encode() + b"\n" + cut)
    hook_log = served.tmp / "real-transcript.log"
    env = clean_env(REME_URL=served.url, REME_TOKEN=served.token, REME_HOOK_LOG=str(hook_log))
    done = run_hook(sid, env)
    assert done.returncode == 0, done.stderr
    line = done.stderr.strip()
    assert line.startswith(f"reme: {sid}: ") and "\n" not in line, done.stderr
    assert f"a last line still being written ({len(cut)} bytes)" in line, line
    assert "1 new transcript line(s) in a format reme does not know" in line, line
    assert "type assistant, content is dict" in line, line
    assert json.loads(done.stdout) == {"systemMessage": line}  # shown to the user: new lines
    first = saved_turns(served, sid)
    assert [t["role"] for t in first] == ["user"]  # the answer is still being written
    # The rest of the line arrives: the next call saves the answer, and nothing twice.
    copy.write_bytes(copy.read_bytes() + lines[answer][len(cut) :])
    done = run_hook(sid, env)
    assert done.returncode == 0 and "still being written" not in done.stderr, done.stderr
    assert done.stdout == "", done.stdout  # the strange line is no news: no message this time
    assert "1 transcript line(s) in a format reme does not know" in done.stderr, done.stderr
    after = saved_turns(served, sid)
    assert after[:1] == first and [t["role"] for t in after] == ["user", "assistant"]
    assert TOKEN_OF_FACT in after[1]["content"]


def test_an_image_the_host_reads_is_kept_under_resource_and_linked_from_the_note(
    claude_bin: Path, served: Served, installed: Installed
) -> None:
    """The scripted model has Claude Code's Read tool open a png: the host writes the image into
    its transcript as a tool_result block, and the capture keeps those bytes."""
    chart = installed.project / "latency-chart.png"
    Image.new("RGB", (48, 32), (12, 140, 160)).save(chart)
    hook_log = served.tmp / "image-hook.log"
    turn = ask(
        claude_bin,
        served,
        installed.project,
        "What does latency-chart.png show?",
        tool="Read",
        arguments={"file_path": str(chart)},
        REME_URL=served.url,
        REME_TOKEN=served.token,
        REME_HOOK_LOG=str(hook_log),
    )
    assert turn.done.returncode == 0, turn.context()
    sid = turn.output["session_id"]
    assert wait_for(lambda: turn_count(served, sid, 3)), logs(served, hook_log)
    user, tool, _ = saved_turns(served, sid)
    kept = f"resource/sessions/{sid}/{tool['id']}-1.png"
    assert user["role"] == "user" and tool["role"] == "tool", tool
    assert tool["content"] == f"Read {chart} returned:\n[image: [[{kept}]]]", tool
    data = (served.workspace / kept).read_bytes()
    assert data.startswith(b"\x89PNG") and Image.open(io.BytesIO(data)).size == (48, 32)
    note = daily_note(served.workspace, sid)
    assert note is not None and f"[[{kept}]]" in note.read_text(encoding="utf-8")


# -- `reme integrate claude-code`, then the real host without the plugin ---------------------
# Last in this file: user scope edits the CLAUDE_CONFIG_DIR every test here shares, and --remove
# takes it out again.


def integrate(served: Served, cwd: Path, scope: str, *args: str) -> dict[str, Any]:
    env = clean_env(HOME=str(served.home), CLAUDE_CONFIG_DIR=str(served.config_dir))
    command = [*hosts.reme_command(), "integrate", "claude-code", "-w", str(served.workspace)]
    done = subprocess.run(
        [*command, "--scope", scope, "--json", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def user_files(served: Served) -> dict[str, Any]:
    """What user scope edits: ``.claude.json`` (Claude Code rewrites it on every run, so only
    its MCP servers are compared) and ``settings.json``."""
    state = served.config_dir / ".claude.json"
    servers = json.loads(state.read_text("utf-8")).get("mcpServers") if state.exists() else None
    settings = served.config_dir / "settings.json"
    return {"mcpServers": servers, "settings": settings.read_bytes() if settings.exists() else None}


@pytest.mark.parametrize("scope", ["project", "user"])
def test_reme_integrate_connects_the_real_claude_and_remove_restores(
    claude_bin: Path, served: Served, installed: Installed, scope: str
) -> None:
    project = served.tmp / f"integrated-{scope}"  # not the folder the plugin is installed in
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{\n  "model": "sonnet"\n}\n', "utf-8")
    before, before_user = snapshot(project), user_files(served)
    report = integrate(served, project, scope)
    assert report["status"] == "connected" and report["profile"] == "write", report
    if scope == "project":
        local = json.loads((project / ".claude" / "settings.local.json").read_text("utf-8"))
    else:
        local = json.loads((served.config_dir / "settings.json").read_text("utf-8"))
    secret = local["env"]["REME_TOKEN"]
    principal = TokenStore(served.workspace / ".reme").verify(secret)
    assert principal is not None and principal.token_id == report["token"]
    assert principal.profile == "write"  # the narrow token, never the admin one
    admin = (served.workspace / ".reme" / "token").read_text("utf-8").strip()
    written = [*snapshot(project).values(), *snapshot(served.config_dir).values()]
    assert all(admin.encode() not in data for data in written)
    # A real session there, no --plugin-dir and no REME_* in its environment: the MCP entry,
    # the token and the hooks all come from what `reme integrate` wrote.
    tool = "mcp__reme__search"
    hook_log = served.tmp / f"integrated-{scope}-hook.log"
    turn = ask(claude_bin, served, project, QUESTION, tool=tool, REME_HOOK_LOG=str(hook_log))
    assert turn.done.returncode == 0, turn.context()
    results = turn.script.tool_results()
    assert results and TOKEN_OF_FACT in results[-1], turn.context()
    assert TOKEN_OF_FACT in turn.output["result"], turn.context()
    sid = turn.output["session_id"]
    assert wait_for(lambda: turn_count(served, sid, 2)), logs(served, hook_log)
    assert f"reme: {sid}: " in turn.debug  # the integrated hook told Claude Code its outcome
    # --remove puts the files back and revokes the token ...
    removed = integrate(served, project, scope, "--remove")
    assert snapshot(project) == before and user_files(served) == before_user, removed
    assert TokenStore(served.workspace / ".reme").verify(secret) is None
    # ... and the real host no longer sees reme there: no tool offered, no hook run.
    turn = ask(claude_bin, served, project, QUESTION, tool=tool, REME_HOOK_LOG=str(hook_log))
    assert turn.done.returncode == 0, turn.context()
    offered = {t.get("name") for r in turn.script.messages_requests() for t in r.get("tools") or []}
    assert tool not in offered and not turn.script.tool_results(), sorted(offered)
    assert "reme_stop_hook.py" not in turn.debug
