"""Workspace globs matched in linear time.

A glob compiled to a backtracking regex (``**`` as ``.*``) takes exponential time on patterns such
as ``**?**?**?**?**Z``: one search request could hold a core for minutes. Here a glob becomes a
small NFA that is run as a lazily built DFA (the RE2 approach): every path character costs one
dictionary lookup once a state has been seen, so matching is linear in the path whatever the
pattern. Patterns are also capped in length and wildcards, so building states stays cheap.

Syntax (the workspace rules, shared by search filters, ``index.exclude`` and ``allowed_paths``):
``**/`` is zero or more whole folders, ``**`` any run of characters, ``*`` a run within one
folder, ``?`` one character within a folder, ``[abc]`` / ``[a-z]`` / ``[!abc]`` one character of
(or not of) a set, never ``/``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from reme_core.errors import WorkspaceError

MAX_GLOB_CHARS = 512
"""Longest glob accepted; real folder patterns are a few dozen characters."""
MAX_GLOB_WILDCARDS = 32
"""Most ``*``, ``**``, ``?`` and ``[...]`` in one glob."""
_MAX_DFA_STATES = 4096
"""Cached DFA transitions per glob before the cache starts again (bounds memory)."""

GLOB_CHARS = frozenset("*?[")


class InvalidGlobError(WorkspaceError):
    """A glob is too long, too complex, or malformed; nothing was searched or listed."""

    http_status = 422


CharTest = Callable[[str], bool]


@dataclass
class _Node:
    edges: list[tuple[CharTest, int]] = field(default_factory=list)
    epsilon: list[int] = field(default_factory=list)


def _any(_: str) -> bool:
    return True


def _not_slash(ch: str) -> bool:
    return ch != "/"


def _literal(expected: str) -> CharTest:
    return lambda ch: ch == expected


def _char_class(body: str) -> CharTest:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    singles: set[str] = set()
    ranges: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            ranges.append((body[i], body[i + 2]))
            i += 3
        else:
            singles.add(body[i])
            i += 1

    def test(ch: str) -> bool:
        if ch == "/":
            return False
        inside = ch in singles or any(lo <= ch <= hi for lo, hi in ranges)
        return inside != negate

    return test


def check_glob(pattern: str) -> None:
    """Raise InvalidGlobError when ``pattern`` is over the length or wildcard limits."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise InvalidGlobError(
            f"glob of {len(pattern)} characters is over the {MAX_GLOB_CHARS}-character limit"
        )
    wildcards = pattern.count("?") + pattern.count("[") + pattern.replace("**", "*").count("*")
    if wildcards > MAX_GLOB_WILDCARDS:
        raise InvalidGlobError(
            f"glob {pattern[:60]!r} has {wildcards} wildcards, over the limit of "
            f"{MAX_GLOB_WILDCARDS}; use a folder prefix or a simpler pattern"
        )


class Glob:
    """One compiled glob; ``match(path)`` is linear in ``len(path)``."""

    def __init__(self, pattern: str):
        check_glob(pattern)
        self.pattern = pattern
        self._nodes: list[_Node] = [_Node()]
        self._accept = self._build(pattern)
        self._start = self._closure(frozenset({0}))
        self._dfa: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    def _new(self) -> int:
        self._nodes.append(_Node())
        return len(self._nodes) - 1

    def _step_to(self, current: int, test: CharTest) -> int:
        target = self._new()
        self._nodes[current].edges.append((test, target))
        return target

    def _build(self, pattern: str) -> int:
        current = 0
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                # (?:.*/)? : skip it, or run over anything that ends with a slash.
                inner, after = self._new(), self._new()
                self._nodes[current].epsilon += [inner, after]
                self._nodes[inner].edges += [(_any, inner), (_literal("/"), after)]
                current = after
                i += 3
            elif pattern.startswith("**", i):
                loop = self._new()
                self._nodes[current].epsilon.append(loop)
                self._nodes[loop].edges.append((_any, loop))
                current = loop
                i += 2
            elif pattern[i] == "*":
                loop = self._new()
                self._nodes[current].epsilon.append(loop)
                self._nodes[loop].edges.append((_not_slash, loop))
                current = loop
                i += 1
            elif pattern[i] == "?":
                current = self._step_to(current, _not_slash)
                i += 1
            elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
                current = self._step_to(current, _char_class(pattern[i + 1 : end]))
                i = end + 1
            else:
                current = self._step_to(current, _literal(pattern[i]))
                i += 1
        return current

    def _closure(self, states: frozenset[int]) -> frozenset[int]:
        seen = set(states)
        todo = list(states)
        while todo:
            for nxt in self._nodes[todo.pop()].epsilon:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return frozenset(seen)

    def _move(self, states: frozenset[int], ch: str) -> frozenset[int]:
        key = (states, ch)
        found = self._dfa.get(key)
        if found is None:
            targets = {t for s in states for test, t in self._nodes[s].edges if test(ch)}
            found = self._closure(frozenset(targets))
            if len(self._dfa) >= _MAX_DFA_STATES:
                self._dfa.clear()
            self._dfa[key] = found
        return found

    def match(self, path: str) -> bool:
        states = self._start
        for ch in path:
            states = self._move(states, ch)
            if not states:
                return False
        return self._accept in states


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> Glob:
    """The compiled glob for ``pattern`` (cached: filters repeat across searches)."""
    return Glob(pattern)


def is_glob(pattern: str) -> bool:
    return any(ch in GLOB_CHARS for ch in pattern)
