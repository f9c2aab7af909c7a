"""The reme memory provider inside the real Hermes Agent, pinned, against a scripted model.

``integrations/hermes/requirements.txt`` pins ``hermes-agent``; a session fixture installs it,
reme (editable, this checkout) and ``reme-hermes`` (editable) into
``$XDG_CACHE_HOME/reme/hosts/hermes-<version>`` (else ``~/.cache/...``; pip_hosts.py). Each
scenario gives Hermes its own HERMES_HOME, set up with ``reme-hermes install`` (which copies the
plugin folder to ``$HERMES_HOME/plugins/reme/`` and sets ``memory.provider: reme`` through
Hermes' own config writer) and a ``model`` entry pointing at a scripted Chat Completions server
on 127.0.0.1 (scripted_openai_chat.py; Hermes streams). Hermes runs non-interactively:
``hermes chat -Q -q QUESTION`` (``--resume ID`` for the second session) and ``hermes -z``.
Hermes' own loader (``plugins.memory.load_memory_provider``) finds the provider; the scripted
model calls its ``reme_search`` tool, then answers with what it returned.

Without PyPI the fixture skips, unless REME_REQUIRE_HOSTS=1 (CI), where it fails.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from conftest import KEYWORD_ONLY_ENV

from reme_core.workspace import parse_frontmatter
from tests.integrations import hosts, pip_hosts
from tests.integrations.scripted_openai_chat import Script, ScriptedServer, text_of

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
INTEGRATION = ROOT / "integrations" / "hermes"
REQUIREMENTS = INTEGRATION / "requirements.txt"
FACT = "The larkspur kiln key hangs behind the blue enamel door, tag 7Q-ORCHID."
TOKEN_OF_FACT = "7Q-ORCHID"
QUESTION = "Where does the larkspur kiln key hang?"
FOLLOW_UP = "And which door was that again?"
SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
"""Said in the second session: reme's capture must not write it anywhere."""
TOOL = "reme_search"
HERMES_TIMEOUT_S = 300
SESSION_LINE = re.compile(r"session_id:\s*(\S+)")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without REME_*, HERMES_* or model-provider settings, plus ``extra``."""
    prefixes = ("HERMES_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_", "NOUS_", "GEMINI_")
    return hosts.clean_env(prefixes, **KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC", **extra)


class Hermes(NamedTuple):
    bin: Path
    version: str


@pytest.fixture(scope="session")
def hermes() -> Hermes:
    """The pinned ``hermes`` with reme and reme-hermes in its venv (and no torch at all)."""
    version = pip_hosts.pinned(REQUIREMENTS, "hermes-agent")
    python = pip_hosts.pip_venv("hermes", version, REQUIREMENTS, [ROOT, INTEGRATION])
    probe = (
        "import importlib.metadata as m, importlib.util as u, reme_hermes, reme_core.api; "
        "print(m.version('hermes-agent'), u.find_spec('torch') is not None)"
    )
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [version, "False"], done.stdout
    return Hermes(python.with_name("hermes"), version)


class Served(NamedTuple):
    url: str
    token: str
    workspace: Path
    log: Path
    tmp: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``reme serve`` over a one-note workspace, with a write-profile token for Hermes."""
    tmp = tmp_path_factory.mktemp("hermes_host")
    workspace = hosts.one_note_workspace(tmp / "ws", FACT)
    log = tmp / "server.log"
    with hosts.reme_served(workspace, log, clean_env(), "write") as (server, token):
        assert server["auth"] is True  # so an answered call proves the provider sent the token
        yield Served(server["url"], token, workspace, log, tmp)


def hermes_home(hermes: Hermes, folder: Path, *install_args: str) -> Path:
    """A HERMES_HOME with the provider installed by ``reme-hermes install``."""
    folder.mkdir(parents=True)
    done = subprocess.run(
        [
            str(hermes.bin.with_name("reme-hermes")),
            "--hermes-home",
            str(folder),
            "install",
            *install_args,
        ],
        env=clean_env(HOME=str(folder.parent)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (folder / "plugins" / "reme" / "__init__.py").is_file(), done.stdout
    config = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
    assert config["memory"]["provider"] == "reme", config  # Hermes' own writer set it
    return folder


class Run(NamedTuple):
    stdout: str
    stderr: str
    session_id: str | None
    script: Script
    context: str


def run_hermes(hermes: Hermes, home: Path, args: list[str], **env: str) -> Run:
    """Hermes with ``args`` against a fresh scripted model; asserts it answered (rc 0)."""
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    config_path = home / "config.yaml"
    with ScriptedServer(script) as model:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
        config["model"] = {
            "provider": "custom",
            "base_url": f"{model.url}/v1",
            "default": "gpt-scripted",
            "api_key": "sk-scripted-dummy",
        }
        config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
        started = time.monotonic()
        done = subprocess.run(
            [str(hermes.bin), *args],
            cwd=home.parent,
            env=clean_env(
                HOME=str(home.parent),
                HERMES_HOME=str(home),
                NO_PROXY="127.0.0.1,localhost",
                **env,
            ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=HERMES_TIMEOUT_S,
        )
        elapsed = time.monotonic() - started
    found = SESSION_LINE.search(done.stdout + done.stderr)
    log = home / "logs" / "reme.log"
    context = (
        f"hermes took {elapsed:.1f}s, rc {done.returncode}\n"
        f"requests: {[r.path for r in script.requests]}\n"
        f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}\n"
        f"reme.log:\n{log.read_text(encoding='utf-8') if log.exists() else '(none)'}"
    )
    assert done.returncode == 0, context
    assert TOOL in script.offered_tools(), f"{script.offered_tools()}\n{context}"
    return Run(done.stdout, done.stderr, found.group(1) if found else None, script, context)


def ask(hermes: Hermes, home: Path, *extra: str, **env: str) -> Run:
    return run_hermes(hermes, home, ["chat", "-Q", "-q", QUESTION, *extra], **env)


def user_texts(script: Script) -> list[str]:
    """Every user message the host sent the model, with any context it put into it."""
    return [
        text_of(m.get("content"))
        for body in script.chat_requests()
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "user"
    ]


def transcript(workspace: Path, session_id: str) -> list[dict[str, str]]:
    path = workspace / "sessions" / f"hermes-{session_id}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return [json.loads(line) for line in lines if line.strip()]


def daily_note(workspace: Path, reme_session: str) -> tuple[dict, str] | None:
    for path in sorted((workspace / "daily").glob("*/*.md")):
        text = path.read_text(encoding="utf-8")
        front, _ = parse_frontmatter(text)
        if front.get("session_id") == reme_session:
            return front, text
    return None


def reme_log(home: Path) -> list[str]:
    path = home / "logs" / "reme.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_hermes_recalls_from_reme_and_captures_each_session_once(
    hermes: Hermes, served: Served
) -> None:
    home = hermes_home(hermes, served.tmp / "http" / "hermes", "--url", served.url)
    first = ask(hermes, home, REME_TOKEN=served.token)
    # Recall before the reply: the provider's prefetch put the note into the user's message.
    recalled = [t for t in user_texts(first.script) if "<memory-context>" in t]
    assert recalled and TOKEN_OF_FACT in recalled[0], first.context
    # Recall as a tool: the model called reme_search, its result carried the fact, the answer too.
    results = first.script.tool_outputs()
    assert results and TOKEN_OF_FACT in results[-1] and "notes/kiln.md" in results[-1]
    assert TOKEN_OF_FACT in first.stdout, first.context
    # The server answered the provider's calls, and it requires a token.
    server_log = served.log.read_text(errors="replace")
    assert '"POST /api/v1/search HTTP/1.1" 200' in server_log, server_log[-3000:]
    assert '"POST /api/v1/auto_memory HTTP/1.1" 200' in server_log, server_log[-3000:]
    # Capture: the transcript under sessions/ and a daily/ note that links back to it.
    assert first.session_id, first.context
    saved = transcript(served.workspace, first.session_id)
    assert [t["role"] for t in saved] == ["user", "assistant"], saved
    assert saved[0]["content"] == QUESTION and TOKEN_OF_FACT in saved[1]["content"]
    assert "<memory-context>" not in saved[0]["content"]  # recall is not saved back
    reme_session = f"hermes-{first.session_id}"
    found = daily_note(served.workspace, reme_session)
    assert found, f"no daily note for {reme_session}\n{first.context}"
    front, text = found
    assert front["source"] == f"[[sessions/{reme_session}.jsonl]]"  # the link back
    assert f"[[sessions/{reme_session}.jsonl#L1]]" in text and QUESTION in text
    assert any(f"{reme_session}: unsummarised daily/" in line for line in reme_log(home))

    # The second session resumes the first: Hermes hands the provider all four turns, reme
    # keeps only the two new ones.
    second = run_hermes(
        hermes,
        home,
        [
            "chat",
            "-Q",
            "-q",
            f"{FOLLOW_UP} My GitHub token is {SECRET}.",
            "--resume",
            first.session_id,
        ],
        REME_TOKEN=served.token,
    )
    assert TOKEN_OF_FACT in second.stdout, second.context
    saved_again = transcript(served.workspace, first.session_id)
    assert saved_again[:2] == saved, saved_again  # append-only: the first turns untouched
    assert saved_again[2]["content"].startswith(FOLLOW_UP), saved_again
    for path in [
        *(served.workspace / "sessions").glob("*"),
        *(served.workspace / "daily").rglob("*.md"),
    ]:
        assert SECRET not in path.read_text(encoding="utf-8"), path  # redacted before disk
    assert len(saved_again) == 4, saved_again
    assert any(f"{reme_session}:" in line and "(2 new turn(s))" in line for line in reme_log(home))
    assert not list((home / "reme" / "pending").glob("*.json"))  # nothing left waiting


def test_faults_leave_the_reply_and_lose_no_turn(hermes: Hermes, served: Served) -> None:
    """Server down, a wrong token, a read-only token: Hermes answers each time, the provider
    logs one line per failure, and the next good capture saves every turn it kept."""
    home = hermes_home(hermes, served.tmp / "faults" / "hermes", "--url", served.url)
    spool = home / "reme" / "pending"

    # 1. Nothing listens at the url: no recall, the reply still comes, the turns are kept.
    with ScriptedServer(Script(tool="none", arguments={})) as closed:
        dead_url = closed.url
    down = run_hermes(hermes, home, ["-z", QUESTION], REME_URL=dead_url, REME_TOKEN=served.token)
    assert down.stdout.strip(), down.context  # an answer, from the model without memory
    assert TOKEN_OF_FACT not in down.stdout
    failures = [line for line in reme_log(home) if "cannot reach reme" in line]
    assert failures and all(line.split()[1] == "WARNING" for line in failures), down.context
    # One line for the cause (recall and the tool call met the same), one for the kept turns.
    assert len(failures) == 2, failures
    assert any(
        "not saved" in line and "sent again at the next capture" in line for line in failures
    )
    assert len(list(spool.glob("*.json"))) == 1

    # 2. A wrong token: 401, said once per kind of call, the answer still comes.
    wrong = run_hermes(hermes, home, ["-z", QUESTION], REME_TOKEN="reme_wrong_token")
    assert wrong.stdout.strip(), wrong.context
    refused = [line for line in reme_log(home) if "refused the token (HTTP 401" in line]
    assert refused, wrong.context
    assert len(list(spool.glob("*.json"))) == 2

    # 3. A read-only token: recall works, capture is refused (403) and kept.
    created = subprocess.run(
        [
            *hosts.reme_command(),
            "token",
            "create",
            "--profile",
            "read",
            "--json",
            "-w",
            str(served.workspace),
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    read_token = json.loads(created.stdout)["secret"]
    read_only = run_hermes(hermes, home, ["chat", "-Q", "-q", QUESTION], REME_TOKEN=read_token)
    assert TOKEN_OF_FACT in read_only.stdout, read_only.context
    assert any("refused auto_memory (HTTP 403" in line for line in reme_log(home))
    kept = sorted(p.stem for p in spool.glob("*.json"))
    assert len(kept) == 3, kept
    assert read_only.session_id and f"hermes-{read_only.session_id}" in kept
    for name in kept:
        assert not transcript(served.workspace, name.removeprefix("hermes-"))

    # 4. The next session with a good token sends what the failures kept, then its own turns.
    good = ask(hermes, home, REME_TOKEN=served.token)
    assert TOKEN_OF_FACT in good.stdout, good.context
    assert not list(spool.glob("*.json")), reme_log(home)
    for name in [*kept, f"hermes-{good.session_id}"]:
        turns = transcript(served.workspace, name.removeprefix("hermes-"))
        assert [t["role"] for t in turns] == ["user", "assistant"], (name, turns)
        assert turns[0]["content"] == QUESTION
        assert daily_note(served.workspace, name), name


def test_embedded_mode_recalls_and_captures_in_hermes_process(
    hermes: Hermes, tmp_path: Path
) -> None:
    """No server: reme runs inside Hermes on a local workspace folder."""
    workspace = hosts.one_note_workspace(tmp_path / "ws", FACT)
    home = hermes_home(
        hermes, tmp_path / "hermes", "--mode", "embedded", "--workspace", str(workspace)
    )
    assert json.loads((home / "reme.json").read_text())["mode"] == "embedded"
    run = ask(hermes, home)
    results = run.script.tool_outputs()
    assert results and TOKEN_OF_FACT in results[-1], run.context
    assert TOKEN_OF_FACT in run.stdout, run.context
    assert not (workspace / ".reme" / "server.json").exists()  # nothing served it
    assert run.session_id, run.context
    saved = transcript(workspace, run.session_id)
    assert [t["content"] for t in saved][:1] == [QUESTION], (saved, run.context)
    found = daily_note(workspace, f"hermes-{run.session_id}")
    assert found and found[0]["source"] == f"[[sessions/hermes-{run.session_id}.jsonl]]"


def test_reme_integrate_hermes_connects_the_real_hermes(hermes: Hermes, served: Served) -> None:
    """``reme integrate hermes`` alone (plugin folder, config.yaml, reme.json, the token in
    .env): Hermes loads what it wrote, takes the token from its .env, recalls and captures."""
    home = served.tmp / "integrate" / "hermes"
    env = clean_env(HERMES_HOME=str(home), HOME=str(home.parent))
    command = [*hosts.reme_command(), "integrate", "hermes", "-w", str(served.workspace)]
    done = subprocess.run(
        [*command, "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["status"] == "connected"
    run = ask(hermes, home)  # no REME_TOKEN here: Hermes reads it from $HERMES_HOME/.env
    assert TOKEN_OF_FACT in run.stdout, run.context
    assert run.script.tool_outputs() and TOKEN_OF_FACT in run.script.tool_outputs()[-1]
    assert run.session_id and transcript(served.workspace, run.session_id), run.context
    removed = subprocess.run(
        [*command, "--remove", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert removed.returncode == 0, removed.stdout + removed.stderr
    config = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    assert "provider" not in (config.get("memory") or {}), config  # the test's model entry stays
    assert not (home / "plugins" / "reme" / "__init__.py").exists()
