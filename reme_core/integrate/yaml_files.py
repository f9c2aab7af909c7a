"""Hosts' YAML files and whole small files, for ``connect`` as ``JsonFile`` is.

``YamlFile`` reads and writes with ruamel.yaml's round-trip mode, so comments, key order and
quoting elsewhere in the file stay as they were (Hermes' ``config.yaml``). ``WholeFile`` is a
file reme owns outright (a plugin's ``__init__.py``): one op sets its whole text, under the key
``content``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from reme_core.errors import ConfigError
from reme_core.integrate.config_files import JsonFile, read_if_present

CONTENT = "content"


def _yaml() -> YAML:
    yaml = YAML()  # round-trip: comments and order survive a load and dump
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


@dataclass
class YamlFile(JsonFile):
    @classmethod
    def load(cls, path: Path) -> YamlFile:
        """The file, or an empty one; ConfigError when it is not a YAML mapping."""
        raw = read_if_present(path)
        if raw is None:
            return cls(path, None, {})
        try:
            data = _yaml().load(raw.decode("utf-8")) if raw.strip() else {}
        except (UnicodeDecodeError, YAMLError) as exc:
            raise ConfigError(
                f"{path} is not valid YAML ({exc}); fix it first, nothing changed"
            ) from None
        if data is None:
            data = {}  # only comments
        if not isinstance(data, dict):
            raise ConfigError(
                f"{path} holds a YAML {type(data).__name__}, not a mapping; nothing changed"
            )
        return cls(path, raw, data)

    def render(self) -> bytes:
        out = io.StringIO()
        _yaml().dump(self.data, out)
        return out.getvalue().encode("utf-8")


@dataclass
class WholeFile(JsonFile):
    @classmethod
    def load(cls, path: Path) -> WholeFile:
        raw = read_if_present(path)
        if raw is None:
            return cls(path, None, {})
        return cls(path, raw, {CONTENT: raw.decode("utf-8", "replace")})

    def render(self) -> bytes:
        text: Any = self.data.get(CONTENT, "")
        return str(text).encode("utf-8")
