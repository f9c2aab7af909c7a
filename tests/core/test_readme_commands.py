"""Every command in README.md runs as a reader would type it.

Each fenced ```bash / ```sh / ```shell / ```console and ```python block is run (or marked skipped,
with a reason) in a fresh temporary "terminal":

- ``HOME`` is a temporary folder, so ``~/memory`` is too; it holds the example Claude Code session
  in ``~/.claude``. ``REME_WORKSPACE=~/memory``, as the Tour exports it, initialised unless the
  block runs ``reme init`` itself.
- The current folder holds a copy of ``examples/`` and a ``.venv`` whose ``bin/`` is the running
  interpreter's, so ``.venv/bin/reme`` is the ``reme`` under test (in CI, tox's). The README's
  install steps (``python3 -m venv .venv``, ``.venv/bin/pip install -e .``) are dropped: the
  test's environment is that install. ``PATH`` starts with the same ``bin/``.
- Shell commands run one at a time in bash (``set -o pipefail``); exported variables carry over
  to the next command. Each must exit 0, except a command whose comment reads ``# error: MESSAGE``
  (it must fail and print MESSAGE) or says ``needs a model`` (no model is configured here: it
  must fail and say so). No command may print a traceback. ``curl`` gets ``--fail``, so an HTTP
  error fails the command. Standard input is empty, except for a command whose comment says it
  ``asks``: the reader answers ``y``.
- Placeholders: ``RUN`` becomes the newest entry of ``reme history --json`` that is not a
  snapshot (reverting one also needs ``--force``); with none, the revert must be refused cleanly.
  ``SESSION_UUID`` becomes the example Claude Code session.
- Long-running commands (``reme serve``, ``reme watch``) start in the background; once ready
  (their "serving"/"watching" line), they are stopped as the README says (SIGTERM for the server,
  Ctrl-C for the watcher) and must exit 0, unless they end a block followed by blocks marked
  ``<!-- readme-test: another terminal -->``: those run first, while it is up. The README's port
  2333 becomes a free one (``REME_SERVER__PORT``).
- The fast configuration (the ``hash`` embedding instead of the bundled model) is used
  everywhere except in a block group that runs ``reme serve``: the server, the CLI search through
  it and the curl call run on the real defaults.

A block the test cannot run is marked, right before its fence, with
``<!-- readme-test: skip (REASON) -->``; ``test_every_block_is_run_or_skipped_with_a_reason``
makes sure nothing else is left out.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reme_core.workspace import init_workspace

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
EXAMPLES = ROOT / "examples"
CLAUDE_EXAMPLE = EXAMPLES / "auto_memory" / "claude"

SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python", "py"}
OTHER = {"", "text", "yaml", "json", "toml"}
"""Languages of blocks that are not run (a diagram, a config excerpt)."""
COMMAND_START = re.compile(r"^\s*(\$ |reme |\.venv/|curl |pip |python3? |tox )")
"""A line that reads as a command: it belongs in a shell block, not an ``OTHER`` one."""

FENCE = re.compile(r"^```\s*(\S*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*readme-test:\s*(.*?)\s*-->$")
SKIP = re.compile(r"^skip\s*\((.*\S.*)\)$")
ANOTHER_TERMINAL = "another terminal"
HEADING = re.compile(r"^#+\s+(.*)$")

INSTALLED = [
    re.compile(r"^python3? -m venv \.venv$"),
    re.compile(r"^\.venv/bin/pip install (-e|--editable) \.$"),
]
"""Install steps the test environment stands in for (it is the install under test)."""
LONG_RUNNING = re.compile(r"(?:^|[\s/])reme\s+(serve|watch)\b")
READY = {"serve": "reme serving ", "watch": "watching "}
STOP = {"serve": signal.SIGTERM, "watch": signal.SIGINT}
"""How the README says each is stopped: SIGTERM (or Ctrl-C) for the server, Ctrl-C the watcher."""
README_PORT = re.compile(r"\b2333\b")
FAST_ENV = {"REME_COMPONENTS__EMBEDDING__NAME": "hash"}
NEEDS_A_MODEL = "needs a model"

PRELUDE = """set -o pipefail
curl() { command curl --silent --show-error --fail "$@"; }
"""
COMMAND_TIMEOUT = 180
READY_TIMEOUT = 120
STOP_TIMEOUT = 90


@dataclass
class Block:
    line: int
    """1-based line of the opening fence."""
    lang: str
    text: str
    directive: str | None
    heading: str

    @property
    def runnable(self) -> bool:
        return self.lang in SHELL | PYTHON

    @property
    def skip_reason(self) -> str | None:
        match = SKIP.match(self.directive or "")
        return match.group(1).strip() if match else None

    @property
    def label(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.heading.lower()).strip("-") or "top"
        return f"{slug}-L{self.line}"


def parse_readme(text: str) -> tuple[list[Block], list[int]]:
    """The fenced blocks, and the lines of directives that precede no fence."""
    lines = text.splitlines()
    found: list[Block] = []
    orphans: list[int] = []
    heading = ""
    pending: tuple[int, str] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            start = i
            i += 1
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            directive = pending[1] if pending else None
            found.append(Block(start + 1, fence.group(1), "\n".join(body), directive, heading))
            pending = None
        elif DIRECTIVE.match(line.strip()):
            if pending:
                orphans.append(pending[0])
            pending = (i + 1, DIRECTIVE.match(line.strip()).group(1))  # type: ignore[union-attr]
        elif line.strip():
            if pending:
                orphans.append(pending[0])
                pending = None
            heading_match = HEADING.match(line)
            if heading_match:
                heading = heading_match.group(1)
        i += 1
    if pending:
        orphans.append(pending[0])
    return found, orphans


def shell_commands(block: Block) -> list[str]:
    """The block's commands: continuation lines joined, comment-only and blank lines left out."""
    commands: list[str] = []
    current = ""
    for line in block.text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if block.lang == "console" and not current:
            if not line.startswith("$ "):
                continue  # output shown after a prompt
            line = line[2:]
        current += line
        if line.endswith("\\"):
            current += "\n"
            continue
        commands.append(current)
        current = ""
    if current:
        commands.append(current)
    return commands


def split_comment(command: str) -> tuple[str, str]:
    """``command`` as (code, its trailing ``#`` comment), minding quotes."""
    quote: str | None = None
    i = 0
    while i < len(command):
        char = command[i]
        if quote:
            if char == "\\" and quote == '"':
                i += 1
            elif char == quote:
                quote = None
        elif char == "\\":
            i += 1
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or command[i - 1].isspace()):
            return command[:i].rstrip(), command[i + 1 :].strip()
        i += 1
    return command, ""


def drop_installs(code: str) -> str:
    """``code`` without the install steps the test environment stands in for."""
    parts = [part.strip() for part in code.split("&&")]
    return " && ".join(p for p in parts if not any(pattern.match(p) for pattern in INSTALLED))


def long_running(block: Block) -> str | None:
    """``serve`` or ``watch`` when the block's last command is that long-running command."""
    commands = shell_commands(block) if block.lang in SHELL else []
    if not commands:
        return None
    match = LONG_RUNNING.search(split_comment(commands[-1])[0])
    return match.group(1) if match else None


BLOCKS, ORPHAN_DIRECTIVES = parse_readme(README.read_text(encoding="utf-8"))
RUNNABLE = [b for b in BLOCKS if b.runnable]


def groups() -> list[list[Block]]:
    """Each runnable block with the ``another terminal`` blocks that follow it."""
    grouped: list[list[Block]] = []
    for block in RUNNABLE:
        if block.directive == ANOTHER_TERMINAL and grouped:
            grouped[-1].append(block)
        else:
            grouped.append([block])
    return grouped


def params() -> list:
    result = []
    for group in groups():
        reason = group[0].skip_reason
        marks = [pytest.mark.skip(reason=f"README: {reason}")] if reason else []
        result.append(pytest.param(group, id=group[0].label, marks=marks))
    return result


# -- structure -------------------------------------------------------------------------------


def test_every_block_is_run_or_skipped_with_a_reason():
    problems = []
    previous: Block | None = None
    for block in BLOCKS:
        where = f"README.md:{block.line} ({block.lang or 'no language'})"
        if block.lang not in SHELL | PYTHON | OTHER:
            problems.append(f"{where}: unknown language; use one of {sorted(SHELL | PYTHON)}")
        elif not block.runnable:
            if block.directive is not None:
                problems.append(f"{where}: a readme-test directive on a block that never runs")
            commands = [line for line in block.text.splitlines() if COMMAND_START.match(line)]
            if commands:
                problems.append(f"{where}: commands outside a shell block: {commands[:2]}")
        elif block.directive is None or block.skip_reason:
            pass
        elif block.directive == ANOTHER_TERMINAL:
            if block.lang not in SHELL or previous is None or long_running(previous) is None:
                problems.append(
                    f"{where}: '{ANOTHER_TERMINAL}' needs a shell block right after one that "
                    "ends with a long-running command (reme serve, reme watch)"
                )
        else:
            problems.append(
                f"{where}: unknown directive {block.directive!r}: "
                f"'skip (REASON)' or '{ANOTHER_TERMINAL}'"
            )
        if block.runnable:
            previous = block
    problems += [
        f"README.md:{line}: a readme-test directive before no block" for line in ORPHAN_DIRECTIVES
    ]
    assert not problems, "\n".join(problems)
    assert any(long_running(b) == "serve" for b in RUNNABLE), "the README's reme serve is gone"


def test_no_command_hides_in_prose():
    """A full command (an HTTP call, a command substitution) in running text is run by nobody:
    it belongs in a fenced block."""
    text = README.read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    spans = re.findall(r"`([^`]+)`", prose)
    hidden = [s for s in spans if s.lstrip().startswith("curl ") or "$(" in s]
    assert not hidden, f"commands in README prose, not in a tested block: {hidden}"


def test_parsing_minds_quotes_continuations_and_installs():
    assert split_comment("printf '# a\\n' | reme write x.md  # note") == (
        "printf '# a\\n' | reme write x.md",
        "note",
    )
    assert split_comment("reme write x --content $'# T\\n'") == (
        "reme write x --content $'# T\\n'",
        "",
    )
    block = Block(1, "bash", "# intro\nreme a \\\n    --b c   # tail\n\nreme d", None, "")
    assert shell_commands(block) == ["reme a \\\n    --b c   # tail", "reme d"]
    assert drop_installs(
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/reme x"
    ) == (".venv/bin/reme x")
    assert drop_installs("python3 -m venv .venv && .venv/bin/pip install tox") == (
        ".venv/bin/pip install tox"
    )


# -- running ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Terminal:
    """A reader's shell in ``project`` with a temporary HOME; exports carry over between runs."""

    root: Path
    env: dict[str, str]
    port: int
    started: list[tuple[str, subprocess.Popen, Path]] = field(default_factory=list)

    @property
    def cwd(self) -> Path:
        return self.root / "project"

    @property
    def exports(self) -> Path:
        return self.root / "exports.sh"

    def _script(self, body: str) -> str:
        return f"{PRELUDE}source {shlex.quote(str(self.exports))}\n{body}\n"

    def run(self, code: str, answer: str | None = None) -> subprocess.CompletedProcess[str]:
        tail = f"__rc=$?\nexport -p > {shlex.quote(str(self.exports))}\nexit $__rc"
        return subprocess.run(
            ["bash", "-c", self._script(f"{code}\n{tail}")],
            cwd=self.cwd,
            env=self.env,
            input=answer or "",
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )

    def start(self, kind: str, code: str) -> tuple[subprocess.Popen, Path]:
        log = self.root / f"{kind}-{len(self.started)}.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                ["bash", "-c", self._script(f"exec {code}")],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.started.append((kind, process, log))
        deadline = time.monotonic() + READY_TIMEOUT
        while READY[kind] not in log.read_text(errors="replace"):
            assert process.poll() is None, (
                f"{code!r} exited {process.returncode}:\n{log.read_text()}"
            )
            assert time.monotonic() < deadline, f"{code!r} not ready:\n{log.read_text()}"
            time.sleep(0.1)
        return process, log

    def stop(self, kind: str, process: subprocess.Popen, log: Path) -> None:
        process.send_signal(STOP[kind])
        try:
            code = process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            pytest.fail(f"reme {kind} did not stop on {STOP[kind].name}:\n{log.read_text()}")
        output = log.read_text(errors="replace")
        assert code == 0, f"reme {kind} exited {code} on {STOP[kind].name}:\n{output}"
        assert "Traceback" not in output, output
        if kind == "serve":
            assert "reme server stopped" in output, output

    def close(self) -> None:
        for _, process, _ in self.started:
            if process.poll() is None:
                process.kill()
                process.wait()


def example_session() -> str:
    (transcript,) = CLAUDE_EXAMPLE.glob("projects/*/*.jsonl")
    return transcript.stem


def newest_run(terminal: Terminal) -> str | None:
    """The newest history entry ``reme revert`` takes without ``--force`` (not a snapshot)."""
    listed = terminal.run("reme history --json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    entries = [e for e in json.loads(listed.stdout) if e.get("kind") != "snapshot"]
    return entries[0]["run"] if entries else None


def tail(text: str, size: int = 4000) -> str:
    return text if len(text) <= size else "..." + text[-size:]


def run_shell_command(terminal: Terminal, command: str, keep_running: bool) -> None:
    code, comment = split_comment(command)
    code = README_PORT.sub(str(terminal.port), drop_installs(code))
    if not code:
        return
    code = re.sub(r"\bSESSION_UUID\b", example_session(), code)
    refused = False
    if re.search(r"\bRUN\b", code):
        run = newest_run(terminal)
        refused = run is None  # nothing to revert: it must say so, not crash
        code = re.sub(r"\bRUN\b", run or "0000000", code)
    kind = LONG_RUNNING.search(code)
    if kind:
        process, log = terminal.start(kind.group(1), code)
        if not keep_running:
            terminal.stop(kind.group(1), process, log)
        return
    if comment.startswith("error:"):
        expected: str | None = comment
    elif NEEDS_A_MODEL in comment:
        expected = NEEDS_A_MODEL
    else:
        expected = "error" if refused else None
    result = terminal.run(code, answer="y\n" if re.search(r"\basks\b", comment) else None)
    output = result.stdout + result.stderr
    report = f"README command {command!r} ran {code!r}: exit {result.returncode}\n{tail(output)}"
    assert "Traceback" not in output, report
    if expected is None:
        assert result.returncode == 0, report
    else:
        assert result.returncode != 0, f"expected a failure saying {expected!r}; {report}"
        assert expected in output, f"expected {expected!r} in the output; {report}"


def run_python_block(terminal: Terminal, block: Block) -> None:
    script = terminal.root / f"readme_L{block.line}.py"
    script.write_text(block.text + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=terminal.cwd,
        env=terminal.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
    )
    assert result.returncode == 0, (
        f"README.md:{block.line} exit {result.returncode}:\n{tail(result.stderr)}"
    )


def make_terminal(base: Path, group: list[Block]) -> Terminal:
    home = base / "home"
    project = base / "project"
    home.mkdir()
    shutil.copytree(
        EXAMPLES, project / "examples", ignore=shutil.ignore_patterns(".reme", "__pycache__")
    )
    (project / ".venv").mkdir()
    (project / ".venv" / "bin").symlink_to(Path(sys.executable).parent, target_is_directory=True)
    shutil.copytree(CLAUDE_EXAMPLE, home / ".claude")
    if not any("reme init" in block.text for block in group):
        init_workspace(home / "memory")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("REME_", "XDG_")) and key != "CLAUDE_CONFIG_DIR"
    }
    port = free_port()
    env.update(
        HOME=str(home),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', os.defpath)}",
        REME_WORKSPACE=str(home / "memory"),
        REME_SERVER__PORT=str(port),
    )
    if not any(long_running(block) == "serve" for block in group):
        env.update(FAST_ENV)
    (base / "exports.sh").write_text("")
    return Terminal(base, env, port)


@pytest.mark.slow
@pytest.mark.parametrize("group", params())
def test_readme_block_runs(group: list[Block], tmp_path: Path):
    if any("curl " in block.text for block in group) and shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    terminal = make_terminal(tmp_path, group)
    try:
        for index, block in enumerate(group):
            if block.lang in PYTHON:
                run_python_block(terminal, block)
                continue
            commands = shell_commands(block)
            for position, command in enumerate(commands):
                keep = index == 0 and len(group) > 1 and position == len(commands) - 1
                run_shell_command(terminal, command, keep_running=keep)
        for kind, process, log in terminal.started:
            if process.poll() is None:
                terminal.stop(kind, process, log)
    finally:
        terminal.close()
