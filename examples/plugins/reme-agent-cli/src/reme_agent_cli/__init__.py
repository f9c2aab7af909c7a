"""A reme agent wrapper that drives a command-line coding agent in non-interactive mode.

``components.agent_wrapper: {name: agent_cli}`` runs Claude Code (``claude -p``, the default
command) or any agent with the same calling convention (``settings.command``) where reme would
run its built-in ``toolloop``. Such an agent edits files with its own tools, which reme cannot
confine, so it never sees the workspace:

1. the notes the call may read (everything the confined ``FileTools`` list) are copied into a
   fresh sandbox folder, and the agent runs there (its working directory);
2. when it ends, every file it created, changed or deleted in the sandbox goes back through the
   same confined ``FileTools``: a path outside the call's ``allowed_paths`` (or not a note) is
   refused and recorded as a failed tool call, a change to a note that moved on meanwhile is a
   conflict (``expected_hash``), and nothing else of the workspace can change;
3. its JSON result gives the answer, the turns it used and how it stopped.

The agent's own model is its business: ``llm`` is ignored. The task's ``max_turns`` is passed as
``--max-turns``; an exit with an error status is ``stopped="error"``, and files it wrote before
failing are still applied (and listed in ``changed``), as the contract asks of every wrapper.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from reme_core.api import (
    AgentResult,
    AgentTask,
    AgentToolCall,
    AgentWrapper,
    ComponentSettings,
    FileTools,
    Llm,
    RemeError,
    content_hash,
    hookimpl,
)

DEFAULT_COMMAND = [
    "claude",
    "-p",
    "{prompt}",
    "--append-system-prompt",
    "{instructions}",
    "--max-turns",
    "{max_turns}",
    "--output-format",
    "json",
    "--permission-mode",
    "acceptEdits",
]


class CliAgentWrapper(AgentWrapper):
    """A CLI coding agent over a sandbox copy of the allowed notes."""

    name: ClassVar[str] = "agent_cli"

    class Settings(ComponentSettings):
        command: list[str] = Field(default_factory=lambda: list(DEFAULT_COMMAND), min_length=1)
        """The agent's command line; ``{prompt}``, ``{instructions}`` and ``{max_turns}`` are
        filled in. The first item is looked up on ``PATH``."""
        timeout_s: float = Field(600.0, gt=0)
        """The agent is killed past this (``stopped="error"``; its files still apply)."""
        max_file_bytes: int = Field(2 * 2**20, ge=1)
        """Notes larger than this are not copied into the sandbox."""

    settings: Settings

    def run(self, task: AgentTask, *, tools: FileTools, llm: Llm | None) -> AgentResult:
        with tempfile.TemporaryDirectory(prefix="reme-agent-cli-") as tmp:
            sandbox = Path(tmp)
            originals = _materialise(tools, sandbox, self.settings.max_file_bytes)
            outcome = self._launch(task, sandbox)
            calls, changed = _apply(tools, sandbox, originals)
        answer, stopped, error, turns = outcome
        return AgentResult(
            answer=answer,
            stopped=stopped,
            error=error,
            turns=min(turns, task.max_turns),
            tool_calls=calls,
            changed=changed,
        )

    def _launch(self, task: AgentTask, sandbox: Path) -> tuple[str, Any, str | None, int]:
        """Run the agent in ``sandbox``: (answer, stopped, error, turns)."""
        fill = {
            "prompt": task.prompt,
            "instructions": task.instructions,
            "max_turns": str(task.max_turns),
        }
        command = [part.format_map(fill) for part in self.settings.command]
        executable = shutil.which(command[0])
        if executable is None:
            return "", "error", f"{command[0]!r} is not on PATH (settings.command)", 0
        try:
            done = subprocess.run(
                [executable, *command[1:]],
                cwd=sandbox,
                capture_output=True,
                text=True,
                timeout=self.settings.timeout_s,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "REME_AGENT_SANDBOX": str(sandbox)},
            )
        except subprocess.TimeoutExpired:
            return "", "error", f"the agent ran past {self.settings.timeout_s:g} s", task.max_turns
        except OSError as exc:
            return "", "error", f"could not start the agent: {exc}", 0
        return _outcome(done, task.max_turns)


def _outcome(done: subprocess.CompletedProcess[str], max_turns: int) -> tuple[str, Any, Any, int]:
    """Claude Code's ``--output-format json`` result (``result``, ``subtype``, ``num_turns``,
    ``is_error``); a non-JSON output is taken as the plain answer."""
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = None
    if not isinstance(report, dict):
        if done.returncode != 0:
            reason = (done.stderr or done.stdout).strip()[-2000:] or f"exit {done.returncode}"
            return "", "error", f"the agent failed: {reason}", 0
        return done.stdout.strip(), "done", None, 1
    turns = int(report.get("num_turns") or 0)
    answer = str(report.get("result") or "")
    if report.get("subtype") == "error_max_turns":
        return answer, "max_turns", None, max_turns
    if done.returncode != 0 or report.get("is_error"):
        reason = answer or (done.stderr or "").strip()[-2000:] or f"exit {done.returncode}"
        return answer, "error", f"the agent failed: {reason}", turns
    return answer, "done", None, turns


def _materialise(tools: FileTools, sandbox: Path, max_bytes: int) -> dict[str, str]:
    """Copy every file the tools let this call read into ``sandbox``; workspace path ->
    content hash of the copy (what a change is checked against when it comes back)."""
    try:
        listing = tools.ls("", recursive=True)
    except RemeError:
        return {}  # nothing may be read
    originals: dict[str, str] = {}
    for entry in listing.entries:
        if entry.kind != "file" or (entry.size or 0) > max_bytes:
            continue
        try:
            read = tools.read(entry.path)
        except RemeError:
            continue  # binary, or refused: the agent does not see it
        if read.truncated:
            continue  # longer than one read: a partial copy written back would cut the note
        target = sandbox / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(read.content, encoding="utf-8")
        originals[entry.path] = read.content_hash
    return originals


def _sandbox_files(sandbox: Path) -> dict[str, Path]:
    found = {}
    for folder, dirs, names in os.walk(sandbox):
        dirs[:] = [d for d in dirs if not d.startswith(".")]  # the agent's own state (.claude/)
        for name in names:
            path = Path(folder, name)
            if not name.startswith(".") and not path.is_symlink():
                found[path.relative_to(sandbox).as_posix()] = path
    return found


def _apply(
    tools: FileTools, sandbox: Path, originals: dict[str, str]
) -> tuple[list[AgentToolCall], list[str]]:
    """Bring the sandbox's changes back through ``tools``, one recorded call each."""
    calls: list[AgentToolCall] = []
    changed: list[str] = []
    now = _sandbox_files(sandbox)
    for rel in sorted(now):
        try:
            content = now[rel].read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            calls.append(AgentToolCall(tool="write", args={"path": rel}, ok=False, error=str(exc)))
            continue
        before = originals.get(rel)
        if before == content_hash(content):
            continue  # untouched (a transcript or text file need not be a note to be seen)
        try:
            result = tools.write(rel, content, expected_hash=before, create_only=before is None)
        except RemeError as exc:
            calls.append(AgentToolCall(tool="write", args={"path": rel}, ok=False, error=str(exc)))
            continue
        if result.changed:
            calls.append(AgentToolCall(tool="write", args={"path": rel}, ok=True))
            changed.append(result.path)
    for rel in sorted(originals.keys() - now.keys()):
        try:
            tools.delete(rel, expected_hash=originals[rel])
        except RemeError as exc:
            calls.append(AgentToolCall(tool="delete", args={"path": rel}, ok=False, error=str(exc)))
            continue
        calls.append(AgentToolCall(tool="delete", args={"path": rel}, ok=True))
        changed.append(rel)
    return calls, changed


@hookimpl
def register_agent_wrappers(register: Callable[[type[AgentWrapper]], None]) -> None:
    """Register the CLI agent wrapper as ``agent_cli``."""
    register(CliAgentWrapper)
