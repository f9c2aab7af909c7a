"""A chat model that answers from disk what it has answered before: the ``cached`` llm.

It wraps another configured llm (``inner``) and keeps every ``complete`` and ``structured``
answer in ``dir``, one JSON file per request, named by the sha256 of the inner model's id, the
messages, the response model's JSON schema and ``max_tokens``. A benchmark rerun is then free and
identical. A hit spends no call: ``usage`` counts only the inner model's real calls, and
``cache_hits`` counts the answers served from disk. Writes are atomic (temp file + rename), so
processes sharing the folder never read half an answer.

The inner llm is looked up in the plugin set the workspace was built with (``context.plugins``),
or in the process's plugin manager (``load_plugins()``) when there is none (built outside a
workspace, with no context).

    components:
      llm:
        name: cached
        settings:
          inner: {name: openai, settings: {model: gpt-4o-mini}}
          dir: ~/.cache/reme/llm
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, ValidationError

from reme_core.api import (
    ComponentContext,
    ComponentSelection,
    ComponentSettings,
    ConfigError,
    Llm,
    ModelT,
    hookimpl,
    required_settings,
    resolve_component,
)

DEFAULT_DIR = "~/.cache/reme/llm"


class CachedLlm(Llm):
    """Another llm's answers, kept on disk by request hash."""

    name: ClassVar[str] = "cached"

    class Settings(ComponentSettings):
        inner: ComponentSelection
        """The model that answers a request not yet cached (any llm selection). Required."""
        dir: str = Field(DEFAULT_DIR, min_length=1)
        """Cache folder; ``~`` expands, a relative path is relative to the working directory
        (not the workspace: a benchmark shares one cache across many throwaway workspaces)."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        missing = (
            "the cached llm needs settings.inner: the llm it caches, e.g. "
            "{name: openai, settings: {model: gpt-4o-mini}}"
        )
        super().__init__(required_settings(settings, self.Settings, missing), context)
        if self.settings.inner.name == self.name:
            raise ConfigError("the cached llm cannot wrap another cached llm")
        self.inner = _build_inner(self.settings.inner, context)
        self.folder = Path(self.settings.dir).expanduser().resolve()
        self.cache_hits = 0
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"cached:{self.inner.model_id}"

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        key = self.request_key("complete", messages, None, max_tokens)
        hit = self._read(key)
        if hit is not None and isinstance(hit.get("text"), str):
            return hit["text"]
        text = self._spend(lambda: self.inner.complete(messages, max_tokens=max_tokens))
        self._write(key, {"model": self.inner.model_id, "text": text})
        return text

    def structured(
        self,
        messages: Sequence[dict[str, str]],
        response_model: type[ModelT],
        *,
        max_retries: int | None = None,
    ) -> ModelT:
        key = self.request_key("structured", messages, response_model, None)
        hit = self._read(key)
        if hit is not None and "data" in hit:
            try:
                return response_model.model_validate(hit["data"])
            except ValidationError:
                pass  # the model class changed in a way its schema does not show: ask again
        answer = self._spend(
            lambda: self.inner.structured(messages, response_model, max_retries=max_retries)
        )
        self._write(key, {"model": self.inner.model_id, "data": answer.model_dump(mode="json")})
        return answer

    def request_key(
        self,
        kind: str,
        messages: Sequence[dict[str, str]],
        response_model: type[Any] | None,
        max_tokens: int | None,
    ) -> str:
        """The sha256 naming one request's answer on disk."""
        request = {
            "kind": kind,
            "model": self.inner.model_id,
            "messages": [dict(m) for m in messages],
            "schema": response_model.model_json_schema() if response_model is not None else None,
            "max_tokens": max_tokens,
        }
        blob = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def close(self) -> None:
        self.inner.close()

    # -- internals ---------------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def _read(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        with self._lock:
            self.cache_hits += 1
        return data

    def _write(self, key: str, data: dict[str, Any]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _spend(self, call: Callable[[], Any]) -> Any:
        """Run a call on the inner model and add what it spent (even when it fails) to ours."""
        before = self.inner.usage.model_copy()
        try:
            return call()
        finally:
            with self._lock:
                self.usage.add(self.inner.usage.since(before))


def _build_inner(selection: ComponentSelection, context: ComponentContext | None) -> Llm:
    """The inner model, from the plugins the workspace was built with (``context.plugins``); the
    process's plugin manager only for a cached llm built without them (outside a workspace)."""
    plugins = context.plugins if context is not None else None
    if plugins is None:
        from reme_core.api import load_plugins

        plugins = load_plugins()
    cls, settings = resolve_component(plugins, "llm", selection, "components.llm.settings.inner")
    return cls(settings, context)


@hookimpl
def register_llms(register: Callable[[type[Llm]], None]) -> None:
    """Register the disk-caching wrapper as ``cached``."""
    register(CachedLlm)
