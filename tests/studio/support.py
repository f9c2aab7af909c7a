"""What the studio tests (and ``docs/screenshots.py``) share: a demo workspace with history, a
hostile note and a review proposal; a real ``reme serve`` over it; and the one way Chromium is
launched (Debian's package, never a downloaded build)."""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import FAKE_VECTORS, KEYWORD_ONLY_ENV, copy_example

from reme_core import hookimpl
from reme_core.components import Step
from reme_core.review import Reviewer
from reme_core.runtime import STATE_DIR, Reme
from reme_core.server.auth import TOKEN_FILE, TokenStore
from reme_core.server.serve import Server
from reme_core.service.operations import OPERATIONS
from reme_core.settings import load_settings
from tests.server.api_support import plugins

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

XSS_NOTE = "digest/wiki/hostile-note.md"
XSS_TEXT = """---
name: Hostile note
tags: [security]
---
# Hostile note

<script>window.__xss = "script tag"</script>
<img src="x" onerror="window.__xss = 'onerror'">
<a href="javascript:window.__xss='raw link'">raw html link</a>

[a javascript link](javascript:window.__xss='markdown%20link')

![an image](javascript:window.__xss='image')

It links to [[larkspur-architecture]] and to [[nowhere-at-all]].
"""
CONFLICT_NOTE = "digest/wiki/release-plan.md"
CONFLICT_TEXT = """---
name: Release plan
tags: [release]
---
# Release plan

Ship v2 after the audit. See [[larkspur-architecture]].
"""
RUN_NOTE = "digest/wiki/tagged-by-run.md"
RUN_MESSAGE = "reme run auto_tag\n\nCREATE digest/wiki/tagged-by-run.md"
PROBLEM_FILE = "resource/scanned-receipt.md"
"""Not text (NUL bytes): the index reports it as a problem, which Status links to."""


def browser_ready() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install 'reme[test]')"
    return None


def launch(playwright: Any) -> Any:
    """Debian's Chromium, headless; Playwright never downloads a browser here."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)


def csrf_of(html: str) -> str:
    found = re.search(r'<meta name="csrf-token" content="([^"]*)">', html)
    assert found is not None, "the page has no CSRF token"
    return found.group(1)


def build_workspace(root: Path) -> dict[str, str]:
    """The example workspace plus the notes and history the studio tests walk through.
    Returns the ids it made: ``run`` (a run that created RUN_NOTE), and ``proposal_<name>``
    for each of PROPOSALS (when the review queue exists)."""
    copy_example(root)
    made: dict[str, str] = {}
    settings = load_settings(overrides=[f"workspace={root}"], env=KEYWORD_ONLY_ENV)
    with Reme(settings, plugins(DemoPlugin())) as reme:
        reme.index(vectors="skip")
        reme.history.record("reme: snapshot of changes made outside reme")
        reme.files.write(XSS_NOTE, XSS_TEXT)
        reme.files.write(CONFLICT_NOTE, CONFLICT_TEXT)
        (root / PROBLEM_FILE).write_bytes(b"%PDF-1.4\x00\x01\x02 not a note\n")
        reme.history.snapshot()
        with reme.history.batch():  # as a pipeline run does: its writes are one entry
            reme.files.write(
                RUN_NOTE,
                "---\nname: Tagged by a run\ntags: [demo]\n---\n# Tagged\n\nMade by a run.\n",
            )
            run = reme.history.record(RUN_MESSAGE)
        assert run is not None
        made["run"] = run
        if "review_list" in OPERATIONS:
            made.update({f"proposal_{k}": v for k, v in _propose(reme).items()})
    return made


class ProposingStep(Step):
    """A step whose proposals approve with the default reviewer (the target must be as it was):
    the review walk needs proposals without a model."""

    name = "studio_demo"
    reviewer = Reviewer()

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        return {}


class DemoPlugin:
    @hookimpl
    def register_steps(self, register):  # type: ignore[no-untyped-def]
        register(ProposingStep)


PROPOSALS = {
    "approve": (
        "CREATE",
        "digest/wiki/proposed-runbook.md",
        "# Runbook\n\nRestart pgbouncer first.\n",
    ),
    "reject": ("CREATE", "digest/wiki/proposed-rumour.md", "# Rumour\n\nThe VPS moves to k8s.\n"),
    "bulk_1": ("TAG", "digest/procedure/db-migrations.md", None),
    "bulk_2": ("TAG", "digest/wiki/postgres-tuning.md", None),
}
"""name -> (verb, target, new text; None: the target with a tag line added)."""


def _propose(reme: Reme) -> dict[str, str]:
    """Pending proposals for the review walk: one to approve, one to reject, two TAGs to approve
    in bulk by verb."""
    from reme_core.review import ReviewApi
    from reme_core.workspace.hashing import content_hash

    api, ids = ReviewApi(reme), {}
    for name, (verb, target, text) in PROPOSALS.items():
        path = reme.root / target
        before = path.read_text(encoding="utf-8") if path.exists() else None
        content = text if text is not None else (before or "") + "\nTags reviewed: ops.\n"
        proposal = api.propose(
            pipeline="dream",
            step=ProposingStep.name,
            run_id="studio-demo",
            verb=verb,
            target=target,
            content=content,
            before=before,
            base_hash=content_hash(before.encode("utf-8")) if before is not None else None,
            sources=["daily/2026-11-02/session-deploy-failure.md"],
            note=f"{verb.lower()} proposed by the demo",
        )
        ids[name] = proposal.id
    return ids


@dataclass
class Studio:
    url: str
    root: Path
    tokens: dict[str, str]
    """admin (the local .reme/token), read, write."""
    made: dict[str, str]
    messages: list[str] = field(default_factory=list)
    """What ``reme serve`` printed."""

    def login_url(self, who: str = "admin", path: str = "/") -> str:
        return f"{self.url}{path}?token={self.tokens[who]}"


@contextmanager
def studio_server(
    base: Path, *overrides: str, vectors: bool = True, scheduler: bool = False
) -> Iterator[Studio]:
    """A real ``reme serve`` (HTTP; no MCP; the scheduler only if asked) over a demo workspace
    on a free port."""
    root = base / "workspace"
    made = build_workspace(root)
    store = TokenStore(root / STATE_DIR)
    tokens = {
        "read": store.create("read", ["default"], "studio test")[1],
        "write": store.create("write", ["default"], "studio test")[1],
    }
    settings = load_settings(
        overrides=[
            f"workspace={root}",
            "server.port=0",
            *(FAKE_VECTORS if vectors else []),
            *overrides,
        ],
        env=KEYWORD_ONLY_ENV,
    )
    messages: list[str] = []
    server = Server(
        settings,
        plugins=plugins(DemoPlugin()),
        echo=messages.append,
        log_level="warning",
        with_mcp=False,
        with_scheduler=scheduler,
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        assert server.ready.wait(60) and server.url is not None, messages
        tokens["admin"] = (root / STATE_DIR / TOKEN_FILE).read_text(encoding="utf-8").strip()
        yield Studio(server.url, root, tokens, made, messages)
    finally:
        server.stop()
        thread.join(60)


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def require_browser() -> bool:
    """CI sets REME_REQUIRE_BROWSER=1: there a missing Chromium fails instead of skipping."""
    return os.environ.get("REME_REQUIRE_BROWSER") == "1"
