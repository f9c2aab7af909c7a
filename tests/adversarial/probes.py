"""Hostile inputs for every path-bearing field of every operation, against a real `reme serve`.

Shared by the adversarial tests (tests/adversarial/) and `benchmarks/adversarial.py`, which
prints the summary table. Nothing here imports pytest.

The workspace is a copy of examples/workspace with canaries that no response may contain:
the server's own admin token (``.reme/token``), the token hashes (``.reme/tokens.json``), a
``.git/config`` and a file outside the workspace. Links point at each of them from inside.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from reme_core.workspace import init_workspace

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "workspace"
KEYWORD_ONLY_ENV = {"REME_COMPONENTS__EMBEDDING": "null", "REME_COMPONENTS__FILE_STORE": "null"}

OUTSIDE_CANARY = "canary-outside-7f3a9c"
GIT_CANARY = "canary-git-config-51d2"
EXISTING = "digest/procedure/deploy-process.md"
TWIN_NFC = "daily/café.md"

Expect = Literal["refused", "harmless"]
"""``refused``: a 4xx and not a byte changed; ``harmless``: any answer below 500 that leaks
nothing and changes nothing outside the workspace's notes."""


@dataclass(frozen=True)
class Probe:
    op: str
    field: str
    value: Any
    body: dict[str, Any] | str
    """A JSON object, or raw JSON text for bodies no encoder would produce."""
    expect: Expect
    label: str
    may_change: str | None = None
    """A folder (``ws/digest/``) where a harmless probe may legitimately write."""


@dataclass
class Outcome:
    probe: Probe
    status: int
    refused: bool
    leaked: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        if self.leaked or self.status >= 500 or self.error:
            return False
        if self.probe.expect == "refused":
            return self.refused and not self.changed
        allowed = self.probe.may_change
        return all(allowed is not None and path.startswith(allowed) for path in self.changed)


# -- the hostile values ---------------------------------------------------------------------


def hostile_paths(workspace: Path, outside: Path) -> list[tuple[str, str]]:
    """(label, value) for a single path field; each must be refused."""
    return [
        ("dotdot", "../outside/secret.md"),
        ("dotdot deep", "daily/../../outside/secret.md"),
        ("dotdot inside", "daily/../" + EXISTING),
        ("absolute outside", str(outside / "secret.md")),
        ("absolute etc", "/etc/passwd"),
        ("absolute into .reme", str(workspace / ".reme" / "token")),
        ("backslash dotdot", "..\\outside\\secret.md"),
        ("backslash deep", "daily\\..\\..\\outside\\secret.md"),
        ("NUL", "daily/a\x00.md"),
        (".reme token", ".reme/token"),
        (".reme tokens.json", ".reme/tokens.json"),
        ("./.reme", "./.reme/token"),
        ("history.git", ".reme/history.git/config"),
        (".git config", ".git/config"),
        ("symlink out", "daily/link-out.md"),
        ("symlink into .reme", "daily/link-token.md"),
        ("symlink into .git", "daily/link-git.md"),
        ("symlinked .reme folder", "daily/link-state/token"),
        ("hard link", "daily/hard-secret.md"),
        ("4096-char path", "a/" * 2046 + "x.md"),
        ("long name", "daily/" + "n" * 300 + ".md"),
    ]


def twin_paths() -> list[tuple[str, str]]:
    """Names that look like an existing note; reading them may succeed or 404, never leak."""
    return [
        ("unicode NFD twin", unicodedata.normalize("NFD", TWIN_NFC)),
        ("case twin", EXISTING.upper()),
        ("url-encoded dotdot", "%2e%2e/outside/secret.md"),
        ("trailing dot", EXISTING + "."),
    ]


GLOB_BOMBS = [
    "**?**?**?**?**?**?**?**?**Z",
    "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
    "**/" * 40 + "x",
    "[" * 2000,
    "x" * 100_000,
]


def _read_ops() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("read", "path", {}),
        ("stat", "path", {}),
        ("list", "path", {"recursive": True}),
        ("traverse", "path", {"depth": 3}),
    ]


def _write_ops() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("write", "path", {"content": "# probe\n"}),
        ("edit", "path", {"old": "deploy", "new": "probe"}),
        ("frontmatter", "path", {"set": {"name": "probe"}}),
        ("move", "src", {"dst": "digest/wiki/probe-moved.md"}),
        ("move", "dst", {"src": EXISTING}),
        ("delete", "path", {}),
        ("auto_resource", "path", {}),
    ]


def probes(workspace: Path, outside: Path) -> list[Probe]:
    """The whole table: every path-bearing field times every hostile value, plus limits."""
    table: list[Probe] = []
    for op, name, base in [*_read_ops(), *_write_ops()]:
        for label, value in hostile_paths(workspace, outside):
            table.append(Probe(op, name, value, {**base, name: value}, "refused", label))
    for op, name, base in _read_ops():
        for label, value in twin_paths():
            table.append(Probe(op, name, value, {**base, name: value}, "harmless", label))
    for label, value in hostile_paths(workspace, outside):
        body = {"query": "deploy", "paths": [value]}
        table.append(Probe("search", "paths", value, body, "harmless", label))
    # Under the caps a bomb is matched in linear time (answered); over them it is a 422.
    for pattern in GLOB_BOMBS:
        body = {"query": "deploy", "paths": [pattern]}
        table.append(Probe("search", "paths", pattern[:40], body, "harmless", "glob bomb"))
    # Scope names and session ids become folder and file names.
    for label, value in [
        ("dotdot", "../../../outside"),
        ("into .reme", "../../../.reme"),
        ("absolute", str(outside)),
        ("NUL", "a\x00b"),
        ("slash", "a/b"),
    ]:
        # A scope name becomes one folder name under digest/personal/ (slugged), never a path.
        memory = {"content": "probe memory", "user_name": value}
        table.append(
            Probe(
                "memory_add", "user_name", value, memory, "harmless", label, "ws/digest/personal/"
            )
        )
        listed = {"user_name": value}
        table.append(Probe("memory_list", "user_name", value, listed, "harmless", label))
        session = {"session_id": value, "messages": [{"role": "user", "content": "hi"}]}
        table.append(Probe("auto_memory", "session_id", value, session, "refused", label))
        for op in ("auto_memory_cc", "auto_memory_codex"):
            table.append(Probe(op, "session_id", value, {"session_id": value}, "refused", label))
    huge = [
        ("search", "limit", {"query": "deploy", "limit": 10**9}),
        ("search", "limit", {"query": "deploy", "limit": -1}),
        ("traverse", "depth", {"path": EXISTING, "depth": 10**6}),
        ("traverse", "max_nodes", {"path": EXISTING, "max_nodes": 10**9}),
        ("read", "start_line", {"path": EXISTING, "start_line": 10**18}),
        ("list", "path", {"path": "x" * 100_000}),
        ("search", "paths", {"query": "deploy", "paths": ["daily/"] * 10_000}),
    ]
    for op, name, body in huge:
        table.append(Probe(op, name, body[name], body, "refused", "huge"))
    # Sent as raw text: the client's own encoder would refuse to nest this deep.
    deep = '{"path": "daily/deep.md", "content": ' + "[" * 50_000 + '"x"' + "]" * 50_000 + "}"
    table.append(Probe("write", "content", "[[[...]]]", deep, "refused", "deep JSON"))
    nested = '{"k": ' * 2000 + "1" + "}" * 2000
    deep_set = '{"path": "' + EXISTING + '", "set": {"deep": ' + nested + "}}"
    table.append(Probe("frontmatter", "set", "{k:{k:...}}", deep_set, "refused", "deep YAML"))
    return table


# -- the served workspace -------------------------------------------------------------------


@dataclass
class Target:
    url: str
    workspace: Path
    outside: Path
    admin: str
    reader: str
    canaries: list[str]

    def post(self, op: str, body: dict[str, Any] | str, token: str | None = None) -> httpx.Response:
        headers = {
            "Authorization": f"Bearer {token or self.admin}",
            "Content-Type": "application/json",
        }
        content = body if isinstance(body, str) else json.dumps(body)
        url = f"{self.url}/api/v1/{op}"
        return httpx.post(url, content=content, headers=headers, timeout=60)


def prepare(base: Path) -> tuple[Path, Path]:
    """A copy of the example workspace and a folder beside it, with links across the line."""
    workspace = base / "ws"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(".reme"))
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n{OUTSIDE_CANARY} deploy\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text(f"[core]\n\tcanary = {GIT_CANARY}\n")
    daily = workspace / "daily"
    os.symlink("../../outside/secret.md", daily / "link-out.md")
    os.symlink("../.reme/token", daily / "link-token.md")
    os.symlink("../.git/config", daily / "link-git.md")
    os.symlink("../.reme", daily / "link-state")
    os.link(outside / "secret.md", daily / "hard-secret.md")
    (workspace / TWIN_NFC).write_text("# Café\nThe deploy café.\n")
    init_workspace(workspace)
    return workspace, outside


def _serve_command(workspace: Path) -> list[str]:
    code = "from reme_core.cli import main; main()"
    return [sys.executable, "-c", code, "serve", "-w", str(workspace), "--port", "0"]


@contextmanager
def served(base: Path, log: Path | None = None) -> Iterator[Target]:
    """A real `reme serve` subprocess (keyword search) over the prepared workspace.

    With ``log``, the server runs at log level info (uvicorn's access log included) and its
    stdout and stderr go to that file, for the probes that read what it logs."""
    from reme_core.server.auth import TokenStore
    from reme_core.server.discovery import read_discovery

    workspace, outside = prepare(base)
    if log is not None:
        # The admin token exists before this start, as on every start but the first: only the
        # start that creates it may print it (issue 20, defect 7), so the log must not hold it.
        TokenStore(workspace / ".reme").ensure_local_token()
    # A file, not a pipe, when the server logs every request: a pipe nobody reads fills up.
    sink = log.open("w") if log is not None else None
    process = subprocess.Popen(
        [*_serve_command(workspace), "--log-level", "info" if log else "warning"],
        stdout=sink or subprocess.DEVNULL,
        stderr=sink or subprocess.PIPE,
        text=True,
        env={**os.environ, **KEYWORD_ONLY_ENV},
    )
    try:
        deadline = time.monotonic() + 60
        while (found := read_discovery(workspace)) is None:
            if process.poll() is not None or time.monotonic() > deadline:
                said = log.read_text() if log else process.communicate()[1]
                raise RuntimeError(f"reme serve did not start: {said}")
            time.sleep(0.05)
        state = workspace / ".reme"
        admin = (state / "token").read_text().strip()
        _, reader = TokenStore(state).create("read", ["default"])
        hashes = json.loads((state / "tokens.json").read_text())
        canaries = [admin, reader, OUTSIDE_CANARY, GIT_CANARY, *_hash_values(hashes)]
        yield Target(found.url, workspace, outside, admin, reader, canaries)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        if sink is not None:
            sink.close()


def _hash_values(data: Any) -> list[str]:
    found: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if isinstance(value, str) and len(value) >= 32:
                found.append(value)
            if isinstance(key, str) and len(key) >= 32:
                found.append(key)
            found += _hash_values(value)
    elif isinstance(data, list):
        for item in data:
            found += _hash_values(item)
    return found


# -- running the table ----------------------------------------------------------------------

_VOLATILE = {"catalog", "journal", "server", "bm25", "graph", "tags", "history.git", "logs"}


def disk_state(workspace: Path, outside: Path) -> dict[str, bytes | str]:
    """Every note and file that a probe must not change: the workspace (but for .reme's
    derived state), the token files, .git and the folder outside."""
    out: dict[str, bytes | str] = {}
    for top in (workspace, outside):
        for folder, dirs, files in os.walk(top):
            rel_folder = os.path.relpath(folder, top.parent)
            if f"{os.sep}.reme" in f"{os.sep}{rel_folder}":
                dirs[:] = []
                continue
            for name in files:
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, top.parent)
                out[rel] = (
                    ("link:" + os.readlink(path))
                    if os.path.islink(path)
                    else Path(path).read_bytes()
                )
            for name in dirs:
                out[os.path.relpath(os.path.join(folder, name), top.parent) + "/"] = "dir"
    for name in ("token", "tokens.json"):
        out[f"ws/.reme/{name}"] = (workspace / ".reme" / name).read_bytes()
    return out


def _diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _leaks(text: str, canaries: list[str]) -> list[str]:
    return [c[:12] + "..." for c in canaries if c and c in text]


def run_http(target: Target, table: list[Probe], token: str | None = None) -> list[Outcome]:
    outcomes = []
    for probe in table:
        before = disk_state(target.workspace, target.outside)
        try:
            response = target.post(probe.op, probe.body, token)
            status, text = response.status_code, response.text
            error = ""
        except httpx.HTTPError as exc:
            status, text, error = 0, "", f"{type(exc).__name__}: {exc}"
        after = disk_state(target.workspace, target.outside)
        outcomes.append(
            Outcome(
                probe,
                status,
                refused=400 <= status < 500,
                leaked=_leaks(text, target.canaries),
                changed=_diff(before, after),
                error=error,
            )
        )
    return outcomes


def run_mcp(target: Target, table: list[Probe]) -> list[Outcome]:
    """The same probes as MCP tool calls in one session (the SDK's client)."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    outcomes: list[Outcome] = []

    async def scenario() -> None:
        headers = {"Authorization": f"Bearer {target.admin}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(f"{target.url}/mcp", http_client=http)) as client,
        ):
            for probe in table:
                if isinstance(probe.body, str):
                    continue  # raw JSON bodies are an HTTP matter
                before = disk_state(target.workspace, target.outside)
                try:
                    result = await client.call_tool(probe.op, probe.body)
                    text = json.dumps(
                        [getattr(c, "text", "") for c in result.content], ensure_ascii=False
                    ) + json.dumps(result.structured_content, default=str)
                    refused, status, error = (
                        bool(result.is_error),
                        400 if result.is_error else 200,
                        "",
                    )
                except Exception as exc:  # a protocol-level refusal (invalid params) counts too
                    text, status = str(exc), 400
                    refused, error = True, ""
                after = disk_state(target.workspace, target.outside)
                outcomes.append(
                    Outcome(
                        probe,
                        status,
                        refused=refused,
                        leaked=_leaks(text, target.canaries),
                        changed=_diff(before, after),
                        error=error,
                    )
                )

    anyio.run(scenario)
    return outcomes


def summary(rows: dict[str, list[Outcome]]) -> str:
    """The table the benchmark prints and the closing note quotes."""
    lines = [
        "| surface | probes tried | refused (4xx) | answered harmlessly | leaked | changed disk | 5xx / reset |",
        "|---|---|---|---|---|---|---|",
    ]
    for surface, outcomes in rows.items():
        refused = sum(o.refused for o in outcomes)
        leaked = sum(bool(o.leaked) for o in outcomes)
        changed = sum(bool(o.changed) and o.probe.expect == "refused" for o in outcomes)
        broken = sum(o.status >= 500 or bool(o.error) for o in outcomes)
        lines.append(
            f"| {surface} | {len(outcomes)} | {refused} | {len(outcomes) - refused} | "
            f"{leaked} | {changed} | {broken} |"
        )
    return "\n".join(lines)


def failures(outcomes: list[Outcome]) -> list[str]:
    return [
        f"{o.probe.op}.{o.probe.field}={o.probe.label}: status {o.status}, leaked {o.leaked}, "
        f"changed {o.changed[:3]}, {o.error}"
        for o in outcomes
        if not o.ok
    ]
