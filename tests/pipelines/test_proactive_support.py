"""Shared set-up for the proactive tests: a workspace whose daily notes open, resolve and raise
again one follow-up, the recording model, and helpers to read what a run left.

(Named ``test_*`` so it sits with the proactive tests; it holds no tests itself.)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from conftest import KEYWORD_ONLY_ENV

from reme_core.runtime import Reme
from reme_core.workspace import init_workspace
from tests.fake_llm import RecordingLlm, llm_setting, plugins_with, write_script

TOPICS = "daily/_proactive.yaml"
NOTE = "daily/_proactive.md"
CURSOR = ".reme/proactive/cursor.json"
DEPLOY = "daily/2026-11-02/deploy.md"
HEALTHZ = "daily/2026-11-03/healthz.md"
AGAIN = "daily/2026-11-05/outage.md"
QUESTION = "Check whether the v0.9.4 deploy fixed the 502s on /healthz"


def daily(title: str, body: str) -> str:
    return f"---\nname: {title}\n---\n\n# {title}\n\n{body}\n"


NOTES = {
    DEPLOY: daily(
        "Deploy v0.9.4",
        "Deployed v0.9.4 for the 502s. Still to check tomorrow: are the 502s on /healthz gone?",
    ),
    HEALTHZ: daily("Healthz", "Checked /healthz after the v0.9.4 deploy: 200s, the 502s are gone."),
    AGAIN: daily(
        "Outage", "The 502s on /healthz are back since this morning; v0.9.4 did not fix it."
    ),
}


def new(text: str = QUESTION, *notes: str, kind: str = "task") -> dict[str, Any]:
    return {"new": [{"text": text, "kind": kind, "notes": list(notes or [DEPLOY])}]}


def event(kind: str, topic: str, note: str, **extra: Any) -> dict[str, Any]:
    return {kind: [{"topic": topic, "note": note, **extra}]}


class Workspace:
    """A workspace under ``tmp_path`` that reopens on a fresh script for each run."""

    def __init__(self, tmp_path: Path, *overrides: str, step: dict[str, Any] | None = None):
        self.root = tmp_path / "ws"
        self.script_file = tmp_path / "script.json"
        settings = {"output_retries": 0, "retries": 0, **(step or {})}
        self.overrides = [
            f"pipelines.proactive.steps=[{{name: proactive, settings: {json.dumps(settings)}}}]",
            *overrides,
        ]
        init_workspace(self.root)
        self.reme: Reme | None = None

    def write(self, rel: str, text: str | None = None) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(NOTES[rel] if text is None else text, encoding="utf-8")

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def open(self, script: Sequence[Any] = (), *, llm: bool = True) -> Reme:
        self.close()
        write_script(self.script_file.parent, script, self.script_file.name)
        overrides = list(self.overrides)
        if llm:
            overrides.append(llm_setting(self.script_file))
        self.reme = Reme.open(
            self.root, plugins=plugins_with(RecordingLlm), env=KEYWORD_ONLY_ENV, overrides=overrides
        )
        return self.reme

    def run(self, *answers: Any, **params: Any) -> Any:
        return self.open(answers).run("proactive", {"today": "2026-11-06", **params})

    @property
    def llm(self) -> RecordingLlm:
        assert self.reme is not None and isinstance(self.reme.llm, RecordingLlm)
        return self.reme.llm

    def topics(self) -> list[dict[str, Any]]:
        return yaml.safe_load(self.read(TOPICS))["topics"]

    def cursor(self) -> dict[str, Any] | None:
        path = self.root / CURSOR
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def tree(self) -> dict[str, bytes]:
        """Every workspace file's bytes, and the cursor's (what a rejected run must not change)."""
        files = {
            str(p.relative_to(self.root)): p.read_bytes()
            for p in sorted(self.root.rglob("*"))
            if p.is_file() and p.relative_to(self.root).parts[0] not in (".reme", ".git")
        }
        cursor = self.root / CURSOR
        files[CURSOR] = cursor.read_bytes() if cursor.exists() else b""
        return files

    def close(self) -> None:
        if self.reme is not None:
            self.reme.close()
            self.reme = None
