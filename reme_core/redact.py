"""Secret redaction: applied to text from a conversation or a model before it is written to disk.

Used on transcript turns (auto_memory, before they are saved or shown to a model), on memory
records a model summarized (``reme_core.memory``), and on context summaries and the dialog log
of the context API (``reme_core.light``). ``redact`` works on one text; ``redact_data`` on every
string inside JSON-like data (a chat message), so the data keeps its shape.

Each pattern replaces what it finds with ``[REDACTED:<kind>]``. Specific token formats run before
the generic ``key=value`` rule so the marker names the most precise kind. Redaction is idempotent
(a marker is never matched again), so text that went through it once can go through it again.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MARKER = "[REDACTED:{kind}]"

# Words that make the value of an assignment a secret. `\b` after the word keeps max_tokens,
# tokenizer, author and similar names out.
_SECRET_KEY = (
    r"[A-Za-z0-9_.\-]*?"
    r"(?:api[_\-]?key|apikey|secret(?:[_\-]?key)?|access[_\-]?key|private[_\-]?key|"
    r"token|passwd|password|pwd|credentials?)\b"
)
_VALUE = r"(?:\"[^\"\n]{1,400}\"|'[^'\n]{1,400}'|[^\s\"'`,;<>()\[\]{}]{1,400})"


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str], str], str]


def _whole(match: re.Match[str], marker: str) -> str:
    return marker


def _keep_prefix(match: re.Match[str], marker: str) -> str:
    return match.group("prefix") + marker


def _assignment(match: re.Match[str], marker: str) -> str:
    value = match.group("value")
    inner = value[1:-1] if value[:1] in "\"'" else value
    # Numbers (max_tokens: 4096) and markers from an earlier pass are not secrets.
    if inner.startswith("[REDACTED") or inner.isdigit() or len(inner) < 4:
        return match.group(0)
    quote = value[0] if value[:1] in "\"'" else ""
    return match.group("prefix") + quote + marker + quote


_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        # An unterminated block (a truncated paste) is redacted to the end of the text.
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
        _whole,
    ),
    _Rule("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), _whole),
    _Rule(
        "openai_key",
        re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
        _whole,
    ),
    _Rule("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"), _whole),
    _Rule("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), _whole),
    _Rule(
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        _whole,
    ),
    _Rule("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), _whole),
    _Rule("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), _whole),
    _Rule(
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
        _whole,
    ),
    _Rule(
        "bearer_token",
        re.compile(r"(?P<prefix>\b[Bb]earer\s+)(?!\[REDACTED)[A-Za-z0-9\-._~+/]{12,}=*"),
        _keep_prefix,
    ),
    _Rule(
        "url_password",
        re.compile(r"(?P<prefix>\b[a-z][a-z0-9+.\-]*://[^\s/:@]+:)(?!\[REDACTED)[^\s/@]+(?=@)"),
        _keep_prefix,
    ),
    _Rule(
        "secret",
        re.compile(
            rf"(?P<prefix>(?<![A-Za-z0-9])[\"']?{_SECRET_KEY}[\"']?\s*[:=]\s*)(?P<value>{_VALUE})",
            re.IGNORECASE,
        ),
        _assignment,
    ),
)


def redact(text: str) -> tuple[str, Counter[str]]:
    """``text`` with secrets replaced by ``[REDACTED:kind]``, and how many of each kind."""
    counts: Counter[str] = Counter()
    for rule in _RULES:
        marker = MARKER.format(kind=rule.kind)

        def substitute(match: re.Match[str], rule: _Rule = rule, marker: str = marker) -> str:
            out = rule.replace(match, marker)
            if out != match.group(0):
                counts[rule.kind] += 1
            return out

        text = rule.pattern.sub(substitute, text)
    return text, counts


def redact_data(value: Any) -> tuple[Any, Counter[str]]:
    """``value`` with ``redact`` applied to every string in it (dict values, list items, at any
    depth), and how many of each kind. Dict keys and non-string values are kept as they are."""
    counts: Counter[str] = Counter()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            text, found = redact(item)
            counts.update(found)
            return text
        if isinstance(item, dict):
            return {key: walk(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return [walk(inner) for inner in item]
        return item

    return walk(value), counts
