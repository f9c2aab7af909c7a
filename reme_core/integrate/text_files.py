"""Hosts' TOML and dotenv files, edited as text so everything reme does not touch stays as it was.

``TomlFile`` sets a top-level key (``notify = [...]``) or a whole table (``[mcp_servers.reme]``)
by rewriting only the lines that hold it, and checks each edit by parsing the result with
``tomllib``: comments, order and formatting elsewhere are kept, and a form it does not edit (a
table given inline or as dotted keys) is refused before anything changes. ``EnvFile`` sets
``KEY=value`` lines. Both behave as ``JsonFile`` does for ``connect``: ``get``, ``apply``,
``undo``, ``render``, a ``Change`` per edit; ``load_config`` picks the editor for a file.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reme_core.errors import ConfigError
from reme_core.integrate.config_files import MISSING, Change, JsonFile, Op, read_if_present
from reme_core.integrate.yaml_files import WholeFile, YamlFile

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_HEADER = re.compile(r"\s*\[")


def toml_key(key: str) -> str:
    return key if _BARE.fullmatch(key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """``value`` as TOML (a JSON string is a valid TOML basic string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise ConfigError(f"reme cannot write {type(value).__name__} values into TOML")


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML ({exc}); fix it first, nothing changed"
        ) from None


def _header_keys(line: str) -> tuple[str, ...] | None:
    """The keys of a ``[a.b]`` table header line, or None (also for ``[[array]]`` headers)."""
    stripped = line.strip()
    if not stripped.startswith("[") or stripped.startswith("[["):
        return None
    try:
        parsed = tomllib.loads(stripped.split("#", 1)[0].strip() + "\n")
    except tomllib.TOMLDecodeError:
        return None
    keys: list[str] = []
    node: Any = parsed
    while isinstance(node, dict) and len(node) == 1:
        key = next(iter(node))
        keys.append(key)
        node = node[key]
    return tuple(keys) if node == {} else None


@dataclass
class TomlFile(JsonFile):
    text: str = ""

    @classmethod
    def load(cls, path: Path) -> TomlFile:
        raw = read_if_present(path)
        if raw is None:
            return cls(path, None, {})
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{path} is not UTF-8 text; nothing changed") from None
        return cls(path, raw, _parse_toml(text, path), text=text)

    def apply(self, op: Op) -> None:
        if op.kind != "set":
            raise ConfigError(f"{self.path}: reme only sets TOML keys ({op.kind} asked)")
        old = self.get(op.keys)
        if old == op.value:
            return
        self._set(op.keys, op.value, old)
        self.changes.append(Change(self.path, ".".join(op.keys), old, op.value, op.secret))

    def undo(self, op: Op, old: Any) -> None:
        now = self.get(op.keys)
        if now is MISSING:
            return
        if old is MISSING:
            self._replace(op.keys, now, None)
        else:
            self._set(op.keys, old, now)

    def render(self) -> bytes:
        return self.text.encode("utf-8")

    def _set(self, keys: tuple[str, ...], value: Any, old: Any) -> None:
        if isinstance(value, dict):
            body = "".join(f"{toml_key(k)} = {toml_value(v)}\n" for k, v in value.items())
            new = f"[{'.'.join(map(toml_key, keys))}]\n{body}"
        else:
            new = f"{toml_key(keys[0])} = {toml_value(value)}\n"
        self._replace(keys, old, new)
        if self.get(keys) != value:  # the edit did not say what it meant: change nothing
            raise ConfigError(
                f"{self.path}: could not set {'.'.join(keys)} by editing the text; "
                "set it by hand (see `reme integrate --dry-run`), nothing changed"
            )

    def _replace(self, keys: tuple[str, ...], old: Any, new: str | None) -> None:
        """Put ``new`` (None: nothing) where ``keys`` is written, or add it when absent."""
        lines = self.text.splitlines(keepends=True)
        if isinstance(old, dict) or (old is MISSING and new is not None and new.startswith("[")):
            span = self._table_span(lines, keys, old)
        elif len(keys) == 1:
            span = self._root_key_span(lines, keys[0], old)
        else:
            raise ConfigError(f"{self.path}: reme does not edit {'.'.join(keys)} in place")
        if span is None:  # absent: a table goes at the end, a top-level key before any table
            if new is None:
                return
            if new.startswith("["):
                text = self.text
                if text and not text.endswith("\n"):
                    text += "\n"
                self.text = text + ("\n" if text.strip() else "") + new
            else:
                first = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), len(lines))
                if first == len(lines) and lines and not lines[-1].endswith("\n"):
                    lines[-1] += "\n"
                lines.insert(first, new)
                self.text = "".join(lines)
        else:
            start, end = span
            self.text = "".join([*lines[:start], *([new] if new else []), *lines[end:]])
        self.data = _parse_toml(self.text, self.path)

    def _table_span(
        self, lines: list[str], keys: tuple[str, ...], old: Any
    ) -> tuple[int, int] | None:
        """The lines of table ``[keys]``: its header up to the next header (blank lines and
        comments just before that header stay with it)."""
        start = next((i for i, ln in enumerate(lines) if _header_keys(ln) == keys), None)
        if start is None:
            if old is not MISSING:
                raise ConfigError(
                    f"{self.path} defines {'.'.join(keys)} in a form reme does not edit (inline "
                    "or dotted keys); make it a [table] or remove it, nothing changed"
                )
            return None
        end = start + 1
        while end < len(lines) and not _HEADER.match(lines[end]):
            end += 1
        while end > start + 1 and (
            not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")
        ):
            end -= 1
        return start, end

    def _root_key_span(self, lines: list[str], key: str, old: Any) -> tuple[int, int] | None:
        """The lines of top-level ``key = ...`` (a value may span lines: it ends where the
        lines so far parse)."""
        if old is MISSING:
            return None
        pattern = re.compile(rf"\s*(?:{re.escape(key)}|{re.escape(json.dumps(key))})\s*=")
        for i, line in enumerate(lines):
            if _HEADER.match(line):
                break
            if pattern.match(line):
                for end in range(i + 1, len(lines) + 1):
                    try:
                        tomllib.loads("".join(lines[i:end]))
                    except tomllib.TOMLDecodeError:
                        continue
                    return i, end
        raise ConfigError(f"{self.path}: cannot find where {key} is set; nothing changed")


_ENV_LINE = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)")


@dataclass
class EnvFile(JsonFile):
    """A dotenv file (``KEY=value`` lines), as Codex reads ``$CODEX_HOME/.env``."""

    text: str = ""

    @classmethod
    def load(cls, path: Path) -> EnvFile:
        raw = read_if_present(path)
        if raw is None:
            return cls(path, None, {})
        text = raw.decode("utf-8", "replace")
        return cls(path, raw, _env_values(text), text=text)

    def apply(self, op: Op) -> None:
        if op.kind != "set" or len(op.keys) != 1 or not isinstance(op.value, str):
            raise ConfigError(f"{self.path}: reme only sets KEY=value lines")
        old = self.get(op.keys)
        if old == op.value:
            return
        self._put(op.keys[0], op.value)
        self.changes.append(Change(self.path, op.keys[0], old, op.value, op.secret))

    def undo(self, op: Op, old: Any) -> None:
        if self.get(op.keys) is not MISSING:
            self._put(op.keys[0], None if old is MISSING else old)

    def render(self) -> bytes:
        return self.text.encode("utf-8")

    def _put(self, key: str, value: str | None) -> None:
        lines = self.text.splitlines(keepends=True)
        kept: list[str] = []
        done = False
        for line in lines:
            found = _ENV_LINE.match(line)
            if found and found.group(1) == key:
                if value is not None and not done:
                    kept.append(f"{key}={value}\n")
                done = True
                continue
            kept.append(line)
        if not done and value is not None:
            if kept and not kept[-1].endswith("\n"):
                kept[-1] += "\n"
            kept.append(f"{key}={value}\n")
        self.text = "".join(kept)
        self.data = _env_values(self.text)


def _env_values(text: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for line in text.splitlines():
        found = _ENV_LINE.match(line)
        if found and not line.lstrip().startswith("#"):
            values[found.group(1)] = found.group(2).strip().strip("'\"")
    return values


def load_config(path: Path) -> JsonFile:
    """``path`` with the editor for its format: TOML (``.toml``), dotenv (``.env``), YAML
    (``.yaml``), a whole file reme owns (``.py``), else JSON."""
    if path.suffix == ".toml":
        return TomlFile.load(path)
    if path.name == ".env":
        return EnvFile.load(path)
    if path.suffix in (".yaml", ".yml"):
        return YamlFile.load(path)
    if path.suffix == ".py":
        return WholeFile.load(path)
    return JsonFile.load(path)
