"""Where the long-term memory reads and writes: a reme workspace in this process, or a running
``reme serve`` over HTTP with a token. Both answer ``search`` with reme's ``SearchResponse`` and
``record`` with the ``auto_memory`` pipeline's outputs (transcript under ``sessions/``, the
session's note under ``daily/``)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Protocol

import httpx

from reme_core.api import Reme, RemeError, SearchResponse, catch_up, init_workspace

TOKEN_ENV = "REME_TOKEN"
# Answers that say the request itself is wrong: sending it again can never succeed.
BAD_INPUT = frozenset({400, 413, 422})


class StoreError(RuntimeError):
    """The memory store refused or could not be reached; the message is one line for a log.
    ``retry``: whether the same call may succeed later (reme down, a token refused), so turns
    it carried are kept for the next capture; false when reme refused them as bad input."""

    def __init__(self, message: str, *, retry: bool = True):
        super().__init__(message)
        self.retry = retry


class Store(Protocol):
    def search(self, query: str, limit: int, min_score: float) -> SearchResponse: ...

    def record(self, session_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]: ...

    def close(self) -> None: ...


class EmbeddedStore:
    """reme in this process on ``workspace`` (created when it has no ``.reme`` yet), opened on
    first use; ``overrides`` are reme settings (``key=value``) as for ``reme -c``."""

    def __init__(self, workspace: str | Path, overrides: tuple[str, ...] = ()):
        self.workspace = Path(workspace).expanduser().resolve()
        self.overrides = overrides
        self._reme: Reme | None = None
        self._lock = threading.Lock()

    def reme(self) -> Reme:
        with self._lock:
            if self._reme is None:
                if not (self.workspace / ".reme").is_dir():
                    init_workspace(self.workspace)
                self._reme = Reme.open(self.workspace, overrides=list(self.overrides))
                catch_up(self._reme)  # notes edited while no reme ran become searchable
            return self._reme

    def search(self, query: str, limit: int, min_score: float) -> SearchResponse:
        try:
            return self.reme().search(query, limit=limit, min_score=min_score)
        except RemeError as exc:
            raise StoreError(f"reme search failed: {exc}") from None

    def record(self, session_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        try:
            result = self.reme().run(
                "auto_memory", {"session_id": session_id, "messages": messages}
            )
        except RemeError as exc:
            raise StoreError(f"reme auto_memory failed: {exc}") from None
        return dict(result.outputs)

    def close(self) -> None:
        with self._lock:
            reme, self._reme = self._reme, None
        if reme is not None:
            reme.close()


SEARCH_TIMEOUT_S = 10.0
CAPTURE_TIMEOUT_S = 5.0


def check_seconds(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 600:
        raise ValueError(f"{name} must be seconds in (0, 600], got {value!r}")
    return float(value)


class HttpStore:
    """A running ``reme serve`` at ``url``: ``POST /api/v1/search`` (a read token may) and
    ``POST /api/v1/auto_memory`` (needs a write token). ``token`` defaults to ``$REME_TOKEN``.

    Every call is bounded, so a server that accepts the connection and never answers holds the
    agent for at most ``timeout`` (search) or ``capture_timeout`` (auto_memory) seconds, then
    raises StoreError (retry): capture keeps the turns in the spool for the next capture."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        workspace: str | None = None,
        timeout: float = SEARCH_TIMEOUT_S,
        capture_timeout: float = CAPTURE_TIMEOUT_S,
    ):
        timeout = check_seconds("timeout", timeout)
        self.capture_timeout = check_seconds("capture_timeout", capture_timeout)
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must be the http(s) address of reme serve, got {url!r}")
        token = token or os.environ.get(TOKEN_ENV, "").strip() or None
        if not token:
            raise ValueError(f"a reme server needs a token: pass token= or set ${TOKEN_ENV}")
        headers = {"Authorization": f"Bearer {token}"}
        if workspace:
            headers["X-Reme-Workspace"] = workspace
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def _call(self, operation: str, payload: dict[str, Any], timeout: float | None = None) -> Any:
        limit = self._http.timeout if timeout is None else httpx.Timeout(timeout)
        try:
            response = self._http.post(f"/api/v1/{operation}", json=payload, timeout=limit)
        except httpx.TimeoutException:
            seconds = limit.read if limit.read is not None else limit.connect
            raise StoreError(
                f"reme at {self.url} did not answer {operation} within {seconds:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise StoreError(f"cannot reach reme at {self.url}: {exc}") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_success:
            return body
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else response.text[:200]
        raise StoreError(
            f"reme {operation} answered HTTP {response.status_code}: {message}",
            retry=response.status_code not in BAD_INPUT,
        )

    def search(self, query: str, limit: int, min_score: float) -> SearchResponse:
        body = self._call("search", {"query": query, "limit": limit, "min_score": min_score})
        return SearchResponse.model_validate(body)

    def record(self, session_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        body = self._call(
            "auto_memory",
            {"session_id": session_id, "messages": messages},
            timeout=self.capture_timeout,
        )
        outputs = body.get("outputs", body) if isinstance(body, dict) else {}
        return dict(outputs)

    def close(self) -> None:
        self._http.close()
