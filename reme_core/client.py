"""A small client for a running ``reme serve``: used by the CLI and by other agents.

    from reme_core.client import RemeClient
    client = RemeClient("http://127.0.0.1:2333", token="...")
    client.call("search", {"query": "why did the deploy fail"})

``discover(workspace)`` finds the server that serves a workspace from ``.reme/server.json``
(written by ``reme serve`` after it binds, removed when it stops) and its token from
``$REME_TOKEN`` or ``.reme/token``. ``RemoteReme`` gives the CLI the same calls it makes on an
in-process ``Reme`` (``files.read``, ``search``, ``run``, ``status``), so every command that has
an operation goes through the server when one is running, and in-process otherwise.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import httpx

from reme_core import errors
from reme_core.errors import RemeError
from reme_core.index.indexer import IndexReport
from reme_core.pipelines.engine import PipelineResult
from reme_core.schema import SearchFilters, SearchResponse
from reme_core.server.discovery import Discovery, read_discovery
from reme_core.workspace import results

TOKEN_FILE = "token"
TOKEN_ENV = "REME_TOKEN"


class ServerError(RemeError):
    """The server answered with an error that has no matching local type, or cannot be reached."""


def discover(workspace: Path) -> Discovery | None:
    """The server serving ``workspace``: one holds its ``.reme/server.lock`` and wrote
    ``server.json`` (a file left by a server that died is ignored: its lock is free)."""
    return read_discovery(workspace)


def token_for(workspace: Path, info: Discovery | None = None) -> str | None:
    """``$REME_TOKEN``, else the admin token the server created (``token_file``, normally
    ``.reme/token`` of the server's first workspace)."""
    given = os.environ.get(TOKEN_ENV, "").strip()
    if given:
        return given
    candidates = [Path(info.token_file)] if info is not None and info.token_file else []
    candidates.append(workspace / ".reme" / TOKEN_FILE)
    for path in candidates:
        try:
            return path.read_text(encoding="utf-8").strip() or None
        except OSError:
            continue
    return None


class RemeClient:
    """Calls ``POST /api/v1/<operation>`` with a bearer token; errors come back as RemeError."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        workspace: str | None = None,
        timeout: float = 300.0,
        transport: httpx.BaseTransport | None = None,
    ):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if workspace:
            headers["X-Reme-Workspace"] = workspace
        self._http = httpx.Client(
            base_url=url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )

    def call(self, operation: str, payload: dict[str, Any] | None = None) -> Any:
        try:
            response = self._http.post(f"/api/v1/{operation}", json=payload or {})
        except httpx.HTTPError as exc:
            raise ServerError(f"cannot reach the reme server: {exc}") from None
        return _decode(response)

    def health(self) -> Any:
        return _decode(self._http.get("/health"))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RemeClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _decode(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.is_success:
        return body
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        raise ServerError(f"server answered HTTP {response.status_code}: {response.text[:200]}")
    # Re-raise as the same error type, so callers (and CLI exit codes) behave as in-process.
    kind = getattr(errors, str(error.get("type")), None)
    cls = kind if isinstance(kind, type) and issubclass(kind, RemeError) else ServerError
    raise cls(str(error.get("message", "")))


class _RemoteFiles:
    """``FileTools``' calls, as operations on the server; results are the same models."""

    def __init__(self, client: RemeClient):
        self._client = client

    def read(self, path: str, start_line: int = 1, end_line: int | None = None) -> Any:
        data = self._client.call(
            "read", {"path": path, "start_line": start_line, "end_line": end_line}
        )
        return results.ReadResult.model_validate(data)

    def write(self, path: str, content: str, expected_hash: str | None = None) -> Any:
        data = self._client.call(
            "write", {"path": path, "content": content, "expected_hash": expected_hash}
        )
        return results.WriteResult.model_validate(data)

    def edit(
        self,
        path: str,
        old: str,
        new: str,
        expected_count: int = 1,
        expected_hash: str | None = None,
    ) -> Any:
        payload = {
            "path": path,
            "old": old,
            "new": new,
            "expected_count": expected_count,
            "expected_hash": expected_hash,
        }
        return results.EditResult.model_validate(self._client.call("edit", payload))

    def update_frontmatter(
        self,
        path: str,
        set: dict[str, Any],  # the API's field name
        remove: Any = (),
        expected_hash: str | None = None,
    ) -> Any:
        payload = {"path": path, "set": set, "remove": list(remove), "expected_hash": expected_hash}
        return results.FrontmatterResult.model_validate(self._client.call("frontmatter", payload))

    def move(self, src: str, dst: str, expected_hash: str | None = None) -> Any:
        payload = {"src": src, "dst": dst, "expected_hash": expected_hash}
        return results.MoveResult.model_validate(self._client.call("move", payload))

    def delete(self, path: str, expected_hash: str | None = None) -> Any:
        payload = {"path": path, "expected_hash": expected_hash}
        return results.DeleteResult.model_validate(self._client.call("delete", payload))

    def ls(self, path: str = "", recursive: bool = False) -> Any:
        data = self._client.call("list", {"path": path, "recursive": recursive})
        return results.LsResult.model_validate(data)

    def stat(self, path: str) -> Any:
        return results.StatResult.model_validate(self._client.call("stat", {"path": path}))


PIPELINE_OPERATIONS = (
    "auto_memory",
    "auto_memory_cc",
    "auto_memory_codex",
    "auto_resource",
    "dream",
)


class RemoteReme:
    """The part of ``Reme`` the CLI uses, served by a running server."""

    def __init__(self, client: RemeClient, info: Discovery, settings: Any, root: Path):
        self.client = client
        self.server = info
        self.settings = settings  # the local view of config, for defaults such as statuses
        self.root = root
        self.state_dir = root / ".reme"  # files the server writes there (schedule) are readable
        self.files = _RemoteFiles(client)

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        min_score: float | None = None,
        filters: SearchFilters | None = None,
        expand: bool | None = None,
        as_of: dt.date | None = None,
    ) -> SearchResponse:
        payload: dict[str, Any] = {
            "query": query,
            "limit": limit,
            "min_score": min_score,
            "expand": expand,
            "as_of": as_of.isoformat() if as_of else None,
        }
        if filters is not None:
            payload.update(filters.model_dump(mode="json", exclude_none=True))
        payload = {k: v for k, v in payload.items() if v is not None}
        return SearchResponse.model_validate(self.client.call("search", payload))

    def run(self, pipeline: str, params: dict[str, Any] | None = None) -> PipelineResult:
        """A pipeline with its own operation goes through it (a write token may call
        auto_memory); any other configured one through ``run`` (admin)."""
        if pipeline in PIPELINE_OPERATIONS:
            return PipelineResult.model_validate(self.client.call(pipeline, params or {}))
        payload = {"pipeline": pipeline, "params": params or {}}
        return PipelineResult.model_validate(self.client.call("run", payload))

    def status(self) -> dict[str, Any]:
        return self.client.call("status", {})

    def reindex(self, vectors: Any = None, progress: Any = None) -> IndexReport:
        """Rebuild on the server (it embeds in the background: ``vectors`` and ``progress`` are
        the in-process call's, and do not apply)."""
        return IndexReport.model_validate(self.client.call("reindex", {}))

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> RemoteReme:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
