"""Where the provider finds reme: ``$HERMES_HOME/reme.json``, then the environment.

``reme.json`` holds what is not secret (mode, url, workspace, limits); ``hermes memory setup``
writes it through ``save_config``, ``reme-hermes install --mode ...`` too. The token is never
written there: it comes from ``$REME_TOKEN`` (Hermes loads ``$HERMES_HOME/.env`` into the
environment, where ``hermes memory setup`` puts secrets), else from the token file the server
named in ``<workspace>/.reme/server.json``. The environment wins over the file, so one shell can
point Hermes elsewhere for a run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CONFIG_FILE = "reme.json"
DEFAULT_URL = "http://127.0.0.1:2333"
ENV = {
    "mode": "REME_HERMES_MODE",
    "url": "REME_URL",
    "token": "REME_TOKEN",
    "workspace": "REME_WORKSPACE",
}


class SettingsError(ValueError):
    """reme.json or the environment says something the provider cannot use."""


class HermesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["http", "embedded"] = "http"
    """http: a running ``reme serve``; embedded: reme in Hermes' own process, on ``workspace``."""
    url: str | None = None
    """http: the server; default the url in ``<workspace>/.reme/server.json``, else
    http://127.0.0.1:2333."""
    token: str | None = Field(None, exclude=True)
    """http: a bearer token (the ``write`` profile: ``read`` recalls but cannot capture)."""
    workspace: Path | None = None
    """embedded: the workspace folder (required); http: optional, to find the server and the
    served workspace's name from its ``.reme/server.json``."""
    recall_limit: int = Field(5, ge=0, le=50)
    """Hits recalled before each reply (0: no automatic recall; the tools still work)."""
    recall_chars: int = Field(600, ge=80, le=8000)
    """Each recalled hit is cut to this many characters."""
    capture: bool = True
    """Save each session into reme (``sessions/`` and ``daily/``) after every reply."""
    pipeline: str = Field("auto_memory", min_length=1)
    """embedded: the pipeline that captures (http always calls the ``auto_memory`` operation)."""
    timeout_s: float = Field(10.0, gt=0, le=900)
    """http: seconds one call may take before it counts as failed."""

    def public(self) -> dict[str, Any]:
        """What ``save_config`` writes: everything but the token."""
        return self.model_dump(mode="json", exclude_none=True)


def load_settings(hermes_home: Path, environ: Mapping[str, str] | None = None) -> HermesSettings:
    """``reme.json`` under ``hermes_home`` (if any) overlaid with the environment."""
    environ = os.environ if environ is None else environ
    path = hermes_home / CONFIG_FILE
    data: dict[str, Any] = {}
    if path.is_file():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SettingsError(f"cannot read {path}: {exc}") from None
        if not isinstance(loaded, dict):
            raise SettingsError(f"{path} must hold a JSON object, not {type(loaded).__name__}")
        data.update(loaded)
    data.pop("token", None)  # a token in the file is ignored: it belongs in the environment
    for key, name in ENV.items():
        value = environ.get(name, "").strip()
        if value:
            data[key] = value
    try:
        settings = HermesSettings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors()
        )
        raise SettingsError(f"reme settings ({path}, REME_* variables): {problems}") from None
    if settings.workspace is not None:
        settings.workspace = settings.workspace.expanduser()
    return settings


def server_json(workspace: Path | None) -> dict[str, Any]:
    """What ``reme serve`` wrote into ``<workspace>/.reme/server.json`` ({} when none)."""
    if workspace is None:
        return {}
    try:
        loaded = json.loads((workspace / ".reme" / "server.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def http_target(settings: HermesSettings) -> tuple[str, str | None, str | None]:
    """``(url, token, served workspace name)`` for http mode."""
    found = server_json(settings.workspace)
    url = settings.url or found.get("url") or DEFAULT_URL
    token = settings.token
    if token is None and isinstance(found.get("token_file"), str):
        try:
            token = Path(found["token_file"]).read_text(encoding="utf-8").strip() or None
        except OSError:
            token = None
    name = found.get("workspace")
    return str(url).rstrip("/"), token, name if isinstance(name, str) and name else None


def write_settings(hermes_home: Path, values: Mapping[str, Any]) -> Path:
    """Validate ``values`` (no token) and write them to ``reme.json``; returns the path."""
    clean = {k: v for k, v in values.items() if k != "token" and v not in (None, "")}
    try:
        settings = HermesSettings.model_validate(clean)
    except ValidationError as exc:
        raise SettingsError(str(exc)) from None
    path = hermes_home / CONFIG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(settings.public(), indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
