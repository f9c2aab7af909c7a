"""Shared set-up for the dream tests: a small workspace, the recording model, helpers.

(Named ``test_*`` so it sits with the dream tests; it holds no tests itself.)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conftest import KEYWORD_ONLY_ENV

from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.workspace import init_workspace
from tests.fake_llm import RecordingLlm, llm_setting, plugins_with, write_script


def plugins() -> Plugins:
    """The shipped plugins and the recording model, collected (the CLI tests install it)."""
    loaded = plugins_with(RecordingLlm)
    loaded.collect()
    return loaded


def steps(extract: dict[str, Any] | None = None, integrate: dict[str, Any] | None = None) -> str:
    """The dream pipeline without auto_tag (written elsewhere), with deterministic retries."""
    extract = {"output_retries": 0, "extract_retries": 0, **(extract or {})}
    integrate = {"output_retries": 0, "max_decision_retries": 0, **(integrate or {})}
    return (
        "pipelines.dream.steps=["
        f"{{name: dream_extract, settings: {json.dumps(extract)}}}, "
        f"{{name: dream_integrate, settings: {json.dumps(integrate)}}}, "
        "{name: dream_finish}]"
    )


DEPLOY_NODE = """---
name: Deploying Larkspur
description: How Larkspur is deployed to production.
tags: [deploy]
---

# Deploying Larkspur

Larkspur runs as a systemd unit; the layout is in [[digest/wiki/architecture]].

## Steps

1. Merge to main once CI is green.
2. Tag the release and push the tags.
3. Restart the service and watch the journal.

## Sources

- [[daily/2026-10-01/first-deploy]]
"""

POSTGRES_NODE = """---
name: Postgres settings
description: The Postgres settings Larkspur runs with.
tags: [postgres]
---

# Postgres settings

- work_mem is 4MB for every connection.
- shared_buffers is 2GB; the host is described in [[architecture]].
- max_connections stays at 100 behind pgbouncer.
"""

ARCHITECTURE_NODE = """---
name: Larkspur architecture
description: Services, hosts and ports of Larkspur.
---

# Larkspur architecture

The API runs under gunicorn on larkspur-prod-1 behind nginx.
"""


def daily(title: str, body: str) -> str:
    session = "s-" + "-".join(title.lower().split())
    return f"---\nname: {title}\nsession_id: {session}\n---\n\n# {title}\n\n{body}\n"


NOTES = {
    "daily/2026-11-02/deploy.md": daily(
        "Deploy failure",
        "The v0.9.3 deploy crash-looped: orjson was missing from requirements.lock.\n"
        "Fix: regenerate the lock with pip-compile before every deploy.",
    ),
    "daily/2026-11-03/prefs.md": daily(
        "Mira's preferences", "Mira prefers short answers with the command first."
    ),
    "daily/2026-11-04/postgres.md": daily(
        "Postgres tuning", "work_mem was raised to 16MB because search sorts spilled to disk."
    ),
}

DIGEST = {
    "digest/procedure/deploy.md": DEPLOY_NODE,
    "digest/wiki/postgres.md": POSTGRES_NODE,
    "digest/wiki/architecture.md": ARCHITECTURE_NODE,
}


class Workspace:
    """A dream workspace under ``tmp_path`` that reopens with a fresh script for each run."""

    def __init__(self, tmp_path: Path, notes: dict[str, str] | None = None, **pipeline: Any):
        self.root = tmp_path / "ws"
        self.script_file = tmp_path / "script.json"
        self.pipeline = steps(**pipeline)
        init_workspace(self.root)
        for rel, text in {**DIGEST, **(NOTES if notes is None else notes)}.items():
            self.write(rel, text)
        self.reme: Reme | None = None

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def open(
        self,
        script: Sequence[Any] = (),
        *,
        llm: str | None = "recording",
        pipeline: str | None = None,
        extra: Sequence[str] = (),
    ) -> Reme:
        """Close the previous session, write the script and open the workspace on it."""
        self.close()
        write_script(self.script_file.parent, script, self.script_file.name)
        overrides = [pipeline or self.pipeline, *extra]
        if llm is not None:
            overrides.append(llm_setting(self.script_file, llm))
        self.reme = Reme.open(
            self.root, plugins=plugins(), env=KEYWORD_ONLY_ENV, overrides=overrides
        )
        self.reme.index(vectors="skip")
        return self.reme

    def run(self, script: Sequence[Any], **params: Any) -> Any:
        return self.open(script).run("dream", params)

    @property
    def llm(self) -> RecordingLlm:
        assert self.reme is not None and isinstance(self.reme.llm, RecordingLlm)
        return self.reme.llm

    def checkpoint(self) -> dict[str, Any]:
        return json.loads((self.root / ".reme/dream/checkpoint.json").read_text(encoding="utf-8"))

    def tree(self) -> dict[str, bytes]:
        """Every workspace file's bytes (derived state and history aside)."""
        return {
            str(p.relative_to(self.root)): p.read_bytes()
            for p in sorted(self.root.rglob("*"))
            if p.is_file() and p.relative_to(self.root).parts[0] not in (".reme", ".git")
        }

    def close(self) -> None:
        if self.reme is not None:
            self.reme.close()
            self.reme = None


def unit(name: str, bucket: str, summary: str, *sources: str) -> dict[str, Any]:
    return {"name": name, "bucket": bucket, "summary": summary, "sources": list(sources)}


def extraction(*units: dict[str, Any]) -> dict[str, Any]:
    return {"units": list(units)}


def decision(verb: str, target: str, **fields: Any) -> dict[str, Any]:
    return {"verb": verb, "target": target, "note": f"{verb.lower()} for the test", **fields}


def edit(old: str, new: str, path: str | None = None) -> dict[str, Any]:
    found = {"old_text": old, "new_text": new}
    return found if path is None else {**found, "path": path}


PREFS = unit(
    "Mira prefers short answers",
    "personal",
    "Mira prefers short answers with the command first.",
    "daily/2026-11-03/prefs.md",
)
DEPLOY = unit(
    "Deploy Larkspur: regenerate the lock",
    "procedure",
    "Before deploying Larkspur, regenerate requirements.lock with pip-compile; v0.9.3 "
    "crash-looped on a missing orjson. Restart the service and watch the journal.",
    "daily/2026-11-02/deploy.md",
)
POSTGRES = unit(
    "Postgres work_mem is 16MB",
    "wiki",
    "Postgres settings: work_mem was raised to 16MB because search sorts spilled to disk.",
    "daily/2026-11-04/postgres.md",
)
