"""The two ways the provider reaches reme, behind one interface: search, read, capture.

``HttpBackend`` calls a running ``reme serve`` (``POST /api/v1/<operation>`` with a bearer
token) with httpx alone, so HTTP mode needs nothing of reme in Hermes' environment.
``EmbeddedBackend`` opens the workspace in Hermes' own process through ``reme_core.api`` (reme
installed beside Hermes) and runs the same operations there. Every failure comes out as
``RemeUnavailable`` with one line that says what to fix.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

import httpx


class RemeUnavailable(Exception):
    """reme could not do what was asked; the message is the one line to log."""


class Backend(Protocol):
    where: str

    def search(self, query: str, limit: int) -> list[dict[str, Any]]: ...

    def read(self, path: str, start_line: int, end_line: int | None) -> dict[str, Any]: ...

    def capture(
        self, session_id: str, turns: list[dict[str, str]], flush: bool
    ) -> dict[str, Any]: ...

    def close(self) -> None: ...


def hit_dict(hit: Any) -> dict[str, Any]:
    """The fields of a search hit the model and the recall block use."""
    get = hit.get if isinstance(hit, dict) else lambda k, d=None: getattr(hit, k, d)
    return {
        "path": get("path"),
        "start_line": get("start_line"),
        "end_line": get("end_line"),
        "score": round(float(get("score", 0.0) or 0.0), 4),
        "text": get("text", ""),
    }


class HttpBackend:
    def __init__(
        self,
        url: str,
        token: str | None,
        workspace: str | None = None,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ):
        self.where = url
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if workspace:
            headers["X-Reme-Workspace"] = workspace
        # trust_env=False: a server on this machine must not go through $HTTP_PROXY.
        self._http = httpx.Client(
            base_url=url,
            headers=headers,
            timeout=timeout,
            trust_env=_is_remote(url),
            transport=transport,
        )

    def _call(self, operation: str, payload: dict[str, Any]) -> Any:
        try:
            response = self._http.post(f"/api/v1/{operation}", json=payload)
        except httpx.HTTPError as exc:
            raise RemeUnavailable(
                f"cannot reach reme at {self.where} ({type(exc).__name__}: {exc}); "
                "is `reme serve` running?"
            ) from None
        if response.is_success:
            try:
                return response.json()
            except ValueError:
                raise RemeUnavailable(
                    f"reme at {self.where} answered {operation} with no JSON"
                ) from None
        detail = _error_text(response)
        if response.status_code == 401:
            raise RemeUnavailable(
                f"reme at {self.where} refused the token (HTTP 401: {detail}); "
                "set REME_TOKEN to a token of this server (`reme token create --profile write`)"
            )
        if response.status_code == 403:
            raise RemeUnavailable(
                f"reme at {self.where} refused {operation} (HTTP 403: {detail}); "
                "capture needs a token with the write profile"
            )
        raise RemeUnavailable(
            f"reme at {self.where} answered {operation} with HTTP {response.status_code}: {detail}"
        )

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        found = self._call("search", {"query": query, "limit": limit})
        hits = found.get("hits") if isinstance(found, dict) else None
        return [hit_dict(h) for h in hits or [] if isinstance(h, dict)]

    def read(self, path: str, start_line: int, end_line: int | None) -> dict[str, Any]:
        payload = {"path": path, "start_line": start_line, "end_line": end_line}
        found = self._call("read", payload)
        return found if isinstance(found, dict) else {"content": found}

    def capture(self, session_id: str, turns: list[dict[str, str]], flush: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {"session_id": session_id, "messages": turns}
        if flush:
            payload["flush"] = True
        found = self._call("auto_memory", payload)
        outputs = found.get("outputs") if isinstance(found, dict) else None
        return outputs if isinstance(outputs, dict) else {}

    def close(self) -> None:
        self._http.close()


def _is_remote(url: str) -> bool:
    host = httpx.URL(url).host
    return host not in ("127.0.0.1", "localhost", "::1")


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return " ".join(response.text[:200].split()) or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    return " ".join(str(body)[:200].split())


class EmbeddedBackend:
    """reme in this process on ``workspace``, opened on first use (opening costs about a
    second, which Hermes' start-up need not wait for)."""

    def __init__(self, workspace: Path, pipeline: str = "auto_memory"):
        self.where = str(workspace)
        self.workspace = workspace
        self.pipeline = pipeline
        self._reme: Any = None
        self._lock = threading.Lock()

    def _open(self) -> Any:
        with self._lock:
            if self._reme is None:
                try:
                    from reme_core.api import Reme
                except ImportError as exc:
                    raise RemeUnavailable(
                        f"embedded mode needs reme in Hermes' Python environment ({exc}); "
                        "install it there (`pip install -e /path/to/reme`) or use http mode"
                    ) from None
                if not (self.workspace / ".reme").is_dir():
                    raise RemeUnavailable(
                        f"{self.workspace} is not a reme workspace: run `reme init {self.workspace}`"
                    )
                try:
                    self._reme = Reme.open(self.workspace)
                except Exception as exc:  # a bad config, a locked index: one line, not a crash
                    raise RemeUnavailable(f"cannot open reme on {self.workspace}: {exc}") from None
            return self._reme

    def _do(self, what: str, fn: Any) -> Any:
        reme = self._open()
        try:
            return fn(reme)
        except Exception as exc:
            raise RemeUnavailable(f"reme {what} on {self.workspace} failed: {exc}") from None

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        from reme_core.api import catch_up

        def run(reme: Any) -> list[dict[str, Any]]:
            catch_up(reme)  # notes edited outside reme since the last search
            return [hit_dict(h) for h in reme.search(query, limit=limit).hits]

        return self._do("search", run)

    def read(self, path: str, start_line: int, end_line: int | None) -> dict[str, Any]:
        def run(reme: Any) -> dict[str, Any]:
            return reme.files.read(path, start_line, end_line).model_dump(mode="json")

        return self._do("read", run)

    def capture(self, session_id: str, turns: list[dict[str, str]], flush: bool) -> dict[str, Any]:
        params: dict[str, Any] = {"session_id": session_id, "messages": turns}
        if flush:
            params["flush"] = True
        return self._do("capture", lambda reme: reme.run(self.pipeline, params).outputs)

    def close(self) -> None:
        with self._lock:
            if self._reme is not None:
                self._reme.close()
                self._reme = None
