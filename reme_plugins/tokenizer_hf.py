"""``hf``: exact counts for any model that publishes a Hugging Face ``tokenizer.json`` (Qwen,
Llama, DeepSeek, ...), read from a local file so nothing is downloaded at run time.

Optional: ``pip install tokenizers``. The file path is required; a relative one is relative to
the workspace.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from reme_core.api import (
    ComponentContext,
    ComponentSettings,
    ConfigError,
    Tokenizer,
    hookimpl,
    settings_path,
)


class HfTokenizer(Tokenizer):
    """A Hugging Face ``tokenizers`` tokenizer loaded from a local tokenizer.json."""

    name: ClassVar[str] = "hf"

    class Settings(ComponentSettings):
        path: str = Field("", description="tokenizer.json of the model")
        """The model's tokenizer.json; relative paths are relative to the workspace."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        if not self.settings.path:
            raise ConfigError(
                "components.tokenizer hf needs settings.path: the model's tokenizer.json"
            )
        if importlib.util.find_spec("tokenizers") is None:
            raise ConfigError(
                "components.tokenizer hf needs the tokenizers package: pip install tokenizers"
            )
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def file(self) -> Path:
        return settings_path(self.settings.path, self.context)

    @property
    def model_id(self) -> str:
        return f"hf/{self.file.parent.name or self.file.name}"

    @property
    def exact(self) -> bool:
        return True

    def count(self, text: str) -> int:
        if not text:
            return 0
        # Special tokens (BOS, CLS) belong to the chat template, which the caller counts apart.
        return len(self._load().encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        encoded = self._load().encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) if text else 0 for e, text in zip(encoded, texts, strict=True)]

    def _load(self) -> Any:
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer as HfBackend

                try:
                    backend = HfBackend.from_file(str(self.file))
                except Exception as exc:  # the Rust side raises a bare Exception
                    raise ConfigError(f"cannot load tokenizer {self.file}: {exc}") from exc
                # Counts are of the text itself: no cut at the model's max length, no padding.
                backend.no_truncation()
                backend.no_padding()
                self._tokenizer = backend
            return self._tokenizer


@hookimpl
def register_tokenizers(register: Callable[[type[Tokenizer]], None]) -> None:
    """Register the tokenizer.json-based tokenizer as ``hf``."""
    register(HfTokenizer)
