"""Issue 20's probe families against a real `reme serve`, part one: the ``Family`` tally, the
history read by a read token, hostile names and a non-UTF-8 name on disk (families_web.py has
the studio login, Host, /docs and the log, and runs them all). Shared by
tests/adversarial/test_name_probes.py, test_host_probes.py and `benchmarks/adversarial.py`;
nothing here imports pytest.

Each family returns a ``Family``: probes tried, how many leaked a canary, changed the disk (or
the browser's session) when they should not have, and got a 5xx or no answer; ``failures`` says
which and why.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.adversarial import probes as P

ENV_SECRET = "wJalrXUtnFEMI-env-canary-8a2d"
CREDENTIALS_CANARY = "credentials-canary-77c1"
BINARY_CANARY = "binary-canary-0e5f"
NOTE_SECRET = "AKIAZ3PROBE7CANARY42"  # an AWS access key id: redacted as on ingest
NON_UTF8 = b"latin1-\xe9t\xe9.md"


@dataclass
class Family:
    name: str
    probes: int = 0
    leaked: int = 0
    changed: int = 0
    broken: int = 0
    failures: list[str] = field(default_factory=list)

    def check(
        self,
        label: str,
        status: int,
        text: str,
        canaries: list[str],
        *,
        changed: bool = False,
        refused: bool | None = None,
    ) -> None:
        """One probe's answer: ``refused`` None means any answer below 500 will do."""
        self.probes += 1
        leaks = P._leaks(text, canaries)
        problems = []
        if leaks:
            self.leaked += 1
            problems.append(f"leaked {leaks}")
        if changed:
            self.changed += 1
            problems.append("changed what it must not")
        if status >= 500 or status == 0:
            self.broken += 1
            problems.append(f"status {status}")
        elif refused is True and not 400 <= status < 500:
            problems.append(f"not refused (status {status})")
        elif refused is False and not 200 <= status < 400:
            problems.append(f"not answered (status {status})")
        if problems:
            self.failures.append(f"{label}: {', '.join(problems)}; {text[:160]!r}")


# -- MCP ------------------------------------------------------------------------------------


def mcp_calls(
    target: P.Target, token: str, calls: list[tuple[str, dict[str, Any]]]
) -> list[tuple[bool, str]]:
    """(is_error, all text) per tool call, in one MCP session; a protocol refusal is an error."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    answers: list[tuple[bool, str]] = []

    async def scenario() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(f"{target.url}/mcp", http_client=http)) as client,
        ):
            for op, body in calls:
                try:
                    result = await client.call_tool(op, body)
                except Exception as exc:
                    answers.append((True, str(exc)))
                    continue
                text = json.dumps(
                    [getattr(c, "text", "") for c in result.content], ensure_ascii=False
                ) + json.dumps(result.structured_content, default=str, ensure_ascii=False)
                answers.append((bool(result.is_error), text))

    anyio.run(scenario)
    return answers


def _disk(target: P.Target) -> dict[str, Any]:
    return P.disk_state(target.workspace, target.outside)


# -- (1) history ----------------------------------------------------------------------------


def plant_history_hostiles(target: P.Target) -> None:
    """Issue 20's hostile workspace, then two snapshots: a write and a pipeline run."""
    root = target.workspace
    os.link(root / ".reme" / "token", root / "digest" / "wiki" / "t.md")
    (root / ".env").write_text(f"AWS_SECRET_ACCESS_KEY={ENV_SECRET}\n")
    (root / "private").mkdir()
    (root / "private" / "credentials.json").write_text(json.dumps({"k": CREDENTIALS_CANARY}))
    (root / "digest" / "wiki" / "blob.md").write_bytes(b"\0\1\2" + BINARY_CANARY.encode())
    note = {"path": "digest/wiki/aws.md", "content": f"# AWS\naws_access_key_id {NOTE_SECRET}\n"}
    for op, body in [("write", note), ("auto_memory", {"session_id": "h1", "messages": []})]:
        answer = target.post(op, body)
        if answer.status_code != 200:
            raise RuntimeError(f"{op} for the history snapshot: {answer.text}")
    target.canaries += [ENV_SECRET, CREDENTIALS_CANARY, BINARY_CANARY, NOTE_SECRET]


def history_family(target: P.Target) -> Family:
    plant_history_hostiles(target)
    family = Family("history (read token)")
    before = _disk(target)
    listed = target.post("history", {"limit": 500}, token=target.reader)
    family.check("http history", listed.status_code, listed.text, target.canaries, refused=False)
    runs = [e["run"] for e in listed.json().get("entries", [])] if listed.is_success else []
    if len(runs) < 2:
        family.failures.append(f"the history has {len(runs)} entries; the probes see nothing")
    for run in runs:
        shown = target.post("history_show", {"run": run}, token=target.reader)
        family.check(
            f"http history_show {run}",
            shown.status_code,
            shown.text,
            target.canaries,
            refused=False,
        )
    refused_paths = ["digest/wiki/t.md", ".env", "private/credentials.json", "digest/wiki/blob.md"]
    for path in refused_paths:
        answer = target.post("history", {"path": path}, token=target.reader)
        family.check(f"http history path={path}", answer.status_code, answer.text, target.canaries)
    calls = [("history", {"limit": 500}), *(("history_show", {"run": r}) for r in runs)]
    calls += [("history", {"path": path}) for path in refused_paths]
    for (op, body), (error, text) in zip(
        calls, mcp_calls(target, target.reader, calls), strict=True
    ):
        family.check(
            f"mcp {op} {body}",
            400 if error else 200,
            text,
            target.canaries,
            refused=None if "path" in body else False,
        )
    if _disk(target) != before:
        family.changed += 1
        family.failures.append("a reader's history calls changed the disk")
    return family


# -- a browser, for the studio's pages ----------------------------------------------------------

TYPED = {
    "Sec-Fetch-Site": "none",
    "Sec-Fetch-Mode": "navigate",
    "Sec-Fetch-Dest": "document",
    "Sec-Fetch-User": "?1",
    "Accept": "text/html,*/*;q=0.8",
}
IMAGE = {
    "Sec-Fetch-Site": "same-origin",
    "Sec-Fetch-Mode": "no-cors",
    "Sec-Fetch-Dest": "image",
    "Accept": "image/*,*/*;q=0.8",
}
CROSS_SITE = {**TYPED, "Sec-Fetch-Site": "cross-site"}
SAME_ORIGIN_LINK = {**TYPED, "Sec-Fetch-Site": "same-origin"}


def _browser(target: P.Target) -> httpx.Client:
    return httpx.Client(base_url=target.url, timeout=60, follow_redirects=False)


def _session(client: httpx.Client) -> str | None:
    return next((v for k, v in client.cookies.items() if k.startswith("reme_studio_")), None)


def _profile(client: httpx.Client) -> str | None:
    page = client.get("/studio/browse")
    for name in ("admin", "write", "read"):
        if f'class="badge profile-{name}"' in page.text:
            return name
    return None


def _field(html: str, name: str) -> str:
    found = re.search(f'name="{name}" value="([^"]*)"', html)
    return found.group(1) if found else ""


# -- (3) names ------------------------------------------------------------------------------


def bad_names() -> list[tuple[str, str]]:
    """(label, path) that every tool must refuse with 422 before any I/O."""
    folder = "digest/wiki/"
    return [
        ("control \\x01", folder + "a\x01b.md"),
        ("escape \\x1b", folder + "a\x1b[31mred.md"),
        ("DEL", folder + "a\x7fb.md"),
        ("tab", folder + "a\tb.md"),
        ("newline", folder + "new\nline.md"),
        ("carriage return", folder + "a\rb.md"),
        ("U+202E", folder + "evil\u202egpj.md"),
        ("U+2066", folder + "a\u2066b.md"),
        ("zero-width space", folder + "a\u200bb.md"),
        ("zero-width joiner", folder + "a\u200db.md"),
        ("BOM", folder + "\ufeffa.md"),
        ("lone surrogate", folder + "\udcff.md"),
        ("256-byte name", folder + "n" * 253 + ".md"),
        ("85 CJK characters", folder + "漢" * 85 + ".md"),
    ]


def long_names() -> list[tuple[str, str]]:
    """Names of 242-255 bytes: under NAME_MAX, so written (not a 500 from the temp name)."""
    folder = "digest/wiki/"
    return [
        ("242-byte name", folder + "n" * 239 + ".md"),
        ("250-byte name", folder + "m" * 247 + ".md"),
        ("255-byte name", folder + "o" * 252 + ".md"),
        ("84 CJK characters", folder + "字" * 84 + ".md"),
    ]


def name_probes() -> list[P.Probe]:
    table: list[P.Probe] = []
    for label, path in bad_names():
        body = {"path": path, "content": "# probe\n"}
        table.append(P.Probe("write", "path", path, body, "refused", label))
        moved = {"src": P.EXISTING, "dst": path}
        table.append(P.Probe("move", "dst", path, moved, "refused", label))
    for number, (label, path) in enumerate(long_names()):
        body = {"path": path, "content": "# long\n"}
        table.append(P.Probe("write", "path", path, body, "harmless", label, "ws/digest/"))
        moved = {"src": path, "dst": f"digest/wiki/long-moved-{number}.md"}
        table.append(P.Probe("move", "src", path, moved, "harmless", label, "ws/digest/"))
        back = {"src": f"digest/wiki/long-moved-{number}.md", "dst": path}
        table.append(P.Probe("move", "dst", path, back, "harmless", label, "ws/digest/"))
    return table


def _from_outcomes(family: Family, surface: str, outcomes: list[P.Outcome]) -> None:
    for outcome in outcomes:
        family.probes += 1
        family.leaked += bool(outcome.leaked)
        family.changed += bool(outcome.changed) and outcome.probe.expect == "refused"
        family.broken += outcome.status >= 500 or bool(outcome.error)
    family.failures += [f"{surface} {line}" for line in P.failures(outcomes)]


def names_family(target: P.Target) -> Family:
    family = Family("names (write/move)")
    table = name_probes()
    _from_outcomes(family, "http", P.run_http(target, table))
    for _, path in long_names():  # the MCP pass writes them again from nothing
        target.post("delete", {"path": path})
    # The MCP SDK's client cannot encode a lone surrogate (UnicodeEncodeError ends the session),
    # so that name is an HTTP probe only.
    sendable = [p for p in table if p.label != "lone surrogate"]
    _from_outcomes(family, "mcp", P.run_mcp(target, sendable))
    return family


def non_utf8_family(target: P.Target) -> Family:
    """A name that is not UTF-8, made outside reme: every surface answers, none with a 5xx."""
    family = Family("non-UTF-8 name on disk")
    wiki = os.fsencode(target.workspace / "digest" / "wiki")
    with open(os.path.join(wiki, NON_UTF8), "wb") as made:
        made.write(b"# latin-1\nmade outside reme\n")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list", {"path": "digest/wiki", "recursive": True}),
        ("list", {"path": "", "recursive": True}),
        ("search", {"query": "latin"}),
        ("write", {"path": "digest/wiki/after-latin1.md", "content": "# after\n"}),
        ("reindex", {}),
        ("status", {}),
    ]
    reported = False
    for op, body in calls:
        answer = target.post(op, body)
        family.check(f"http {op}", answer.status_code, answer.text, target.canaries, refused=False)
        reported |= op == "status" and "latin1-" in answer.text
    status = httpx.get(
        f"{target.url}/status", timeout=60, headers={"Authorization": f"Bearer {target.admin}"}
    )
    family.check("GET /status", status.status_code, status.text, target.canaries, refused=False)
    with _browser(target) as client:
        client.get(f"/?token={target.admin}", headers=TYPED)
        for page in ("/studio/browse?path=digest/wiki", "/studio/tree", "/studio/status"):
            answer = client.get(page)
            family.check(
                f"studio {page}", answer.status_code, answer.text, target.canaries, refused=False
            )
    mcp = [("list", {"path": "digest/wiki", "recursive": True}), ("status", {})]
    for (op, _), (error, text) in zip(mcp, mcp_calls(target, target.admin, mcp), strict=True):
        family.check(f"mcp {op}", 400 if error else 200, text, target.canaries, refused=False)
    if not reported:
        family.failures.append("status does not report the non-UTF-8 name as a problem")
    return family


def table(families: list[Family]) -> str:
    lines = [
        "| family | probes | leaked | changed disk/session wrongly | 5xx / reset | failures |",
        "|---|---|---|---|---|---|",
    ]
    for f in families:
        row = (
            f"| {f.name} | {f.probes} | {f.leaked} | {f.changed} | {f.broken} | {len(f.failures)} |"
        )
        lines.append(row)
    return "\n".join(lines)
