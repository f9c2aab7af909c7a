"""A host's JSON configuration files: read, patch key by key, back up, and put back.

A patch is a list of ``Op``: set a value at a key path, or add an item to the list at a key path
unless an equal one is there. Applying ops records each ``Change`` (old -> new) so the command
can print it; ``undo`` takes them out again when the file changed after reme wrote it and its
backup can no longer be restored as a whole. Files are rewritten with the indentation they had
(two spaces when new) and keep every key reme did not touch, in order.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reme_core.errors import ConfigError

MISSING: Any = object()
"""What ``get`` returns for an absent key (``None`` is a JSON value)."""

SECRET_MASK = "****"
_SECRET = re.compile(r"reme_[A-Za-z0-9_-]{40,}")
"""A token's secret (``reme_`` and 43 url-safe characters), not a name like ``reme_stop_hook``."""


@dataclass(frozen=True)
class Op:
    """One edit of one file: ``set`` ``value`` at ``keys``, or ``append`` it to the list there."""

    path: Path
    keys: tuple[str, ...]
    value: Any
    kind: str = "set"
    secret: bool = False
    """The value is the token's secret: masked when printed, and read back on a rerun."""


@dataclass
class Change:
    """What one op did (or would do) to one file."""

    path: Path
    key: str
    old: Any
    new: Any
    secret: bool = False

    def as_dict(self) -> dict[str, Any]:
        # Every reme secret is masked, wherever it sits (a header, an env value).
        return {
            "file": str(self.path),
            "key": self.key,
            "old": mask(self.old),
            "new": mask(self.new),
        }


@dataclass
class JsonFile:
    """A JSON object file as it is on disk (``raw`` None: it does not exist) and as patched."""

    path: Path
    raw: bytes | None
    data: dict[str, Any]
    indent: int = 2
    changes: list[Change] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> JsonFile:
        """The file, or an empty one; ConfigError when it is not a JSON object."""
        raw = read_if_present(path)
        if raw is None:
            return cls(path, None, {})
        try:
            data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
        except (UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(
                f"{path} is not valid JSON ({exc}); fix it first, nothing changed"
            ) from None
        if not isinstance(data, dict):
            raise ConfigError(
                f"{path} holds a JSON {type(data).__name__}, not an object; nothing changed"
            )
        return cls(path, raw, data, _indent_of(raw))

    def get(self, keys: tuple[str, ...]) -> Any:
        node: Any = self.data
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                return MISSING
            node = node[key]
        return node

    def apply(self, op: Op) -> None:
        """Do ``op``, recording a Change when it changes anything."""
        parent = self._parent(op.keys)
        last = op.keys[-1]
        old = parent.get(last, MISSING)
        if op.kind == "append":
            items = list(old) if isinstance(old, list) else []
            if op.value in items:
                return
            new: Any = [*items, op.value]
        else:
            if old == op.value:
                return
            new = op.value
        parent[last] = new
        self.changes.append(Change(self.path, _key(op.keys), old, new, op.secret))

    def undo(self, op: Op, old: Any) -> None:
        """Take ``op`` out again: put back ``old`` (MISSING: delete the key, and parents it
        leaves empty), or remove the appended item."""
        node = self.get(op.keys)
        if node is MISSING:
            return
        if op.kind == "append":
            if isinstance(node, list) and op.value in node:
                node.remove(op.value)
                if node:
                    return
            else:
                return
        elif old is not MISSING:
            self._parent(op.keys)[op.keys[-1]] = old
            return
        self._parent(op.keys).pop(op.keys[-1], None)
        for depth in range(len(op.keys) - 1, 0, -1):  # then the parents it left empty
            if self.get(op.keys[:depth]) != {}:
                break
            self._parent(op.keys[:depth]).pop(op.keys[depth - 1], None)

    def render(self) -> bytes:
        text = json.dumps(self.data, indent=self.indent, ensure_ascii=False)
        return (text + "\n").encode("utf-8")

    def _parent(self, keys: tuple[str, ...]) -> dict[str, Any]:
        node = self.data
        for key in keys[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                if child is not None:
                    raise ConfigError(
                        f"{self.path}: {_key(keys[:-1])} is not an object; nothing changed"
                    )
                child = node[key] = {}
            node = child
        return node


def read_if_present(path: Path) -> bytes | None:
    """``path``'s bytes, None when it does not exist (the editors start an empty file);
    ConfigError when it exists but cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _indent_of(raw: bytes) -> int:
    found = re.search(rb"\n( +)\S", raw)
    return len(found.group(1)) if found else 2


def _key(keys: tuple[str, ...]) -> str:
    return ".".join(keys)


def _plain(value: Any) -> Any:
    return None if value is MISSING else value


def _mask(value: Any) -> Any:
    if value is MISSING or not isinstance(value, str):
        return _plain(value)
    return _SECRET.sub("reme_" + SECRET_MASK, value)


def mask(value: Any) -> Any:
    """``value`` with every reme secret in it masked (for printing a whole entry)."""
    if isinstance(value, str):
        return _mask(value)
    if isinstance(value, dict):
        return {k: mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    return _plain(value)


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def write_private(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write atomically (a reader never sees half a file), with ``mode`` from the start."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def file_mode(path: Path, default: int = 0o600) -> int:
    """The permission bits ``path`` has now (so a rewrite keeps them), else ``default``."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return default
