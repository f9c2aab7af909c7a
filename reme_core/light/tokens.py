"""Token counts of texts and chat messages through the configured ``Tokenizer``.

An agent loop re-checks the same messages before every model call, so counts are cached by
text (a bounded LRU): a check costs one tokenizer pass per new message, not per message.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from reme_core.components import Tokenizer
from reme_core.light.messages import (
    NON_TEXT_PART_TOKENS,
    call_text,
    content_text,
    non_text_parts,
    tool_calls,
)

MESSAGE_OVERHEAD = 4
"""Chat-template tokens around each message (role marker, separators): 3-4 in OpenAI's format."""
CALL_OVERHEAD = 3
"""Around each tool call (its id and framing)."""


class TokenCounter:
    """Counts with one tokenizer; thread-safe, with an LRU cache of text counts."""

    def __init__(self, tokenizer: Tokenizer, cache_size: int = 4096):
        self.tokenizer = tokenizer
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.tokenizer.model_id

    def text(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached
        count = self.tokenizer.count(text)
        with self._lock:
            self._cache[text] = count
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return count

    def message(self, message: Mapping[str, Any]) -> int:
        """Tokens one message takes in a prompt: content, tool calls, name and framing."""
        total = MESSAGE_OVERHEAD + self.text(content_text(message.get("content")))
        total += NON_TEXT_PART_TOKENS * non_text_parts(message)
        for call in tool_calls(message):
            total += CALL_OVERHEAD + self.text(call_text(call))
        name = message.get("name")
        if isinstance(name, str):
            total += self.text(name)
        return total

    def messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        return sum(self.message(m) for m in messages)

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` within ``max_tokens`` (by this tokenizer)."""
        if max_tokens <= 0:
            return ""
        if self.tokenizer.count(text) <= max_tokens:
            return text
        low, high = 0, len(text)
        while low < high:
            mid = (low + high + 1) // 2
            if self.tokenizer.count(text[:mid]) <= max_tokens:
                low = mid
            else:
                high = mid - 1
        return text[:low]
