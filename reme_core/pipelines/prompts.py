"""Prompt templates kept in YAML beside the steps that use them, one section per language.

A prompt file looks like::

    en:
      system: |
        You write memory notes ...
      user: |
        Session $session_id ...
    zh:
      system: |
        ...

Templates use ``string.Template`` placeholders (``$name`` / ``${name}``) so the JSON examples
prompts are full of need no escaping. Every language must define the same keys and placeholders
(a test checks each shipped file).
"""

from __future__ import annotations

import string
from functools import cache
from importlib import resources
from typing import Any

import yaml

from reme_core.errors import ConfigError

LANGUAGES = ("en", "zh")


class Prompts:
    """The templates of one prompt file in one language."""

    def __init__(self, source: str, language: str, templates: dict[str, str]):
        self.source = source
        self.language = language
        self.templates = templates

    def render(self, key: str, **values: Any) -> str:
        """Fill template ``key``; a placeholder without a value is an error, never left as is."""
        try:
            template = self.templates[key]
        except KeyError:
            raise ConfigError(f"{self.source}: no prompt {key!r} for {self.language!r}") from None
        try:
            return string.Template(template).substitute(
                {name: str(value) for name, value in values.items()}
            )
        except KeyError as exc:
            raise ConfigError(
                f"{self.source}: prompt {key!r} needs a value for ${exc.args[0]}"
            ) from None


def load_prompts(package: str, name: str, language: str) -> Prompts:
    """Prompts from ``<package>/prompts/<name>.yaml`` in ``language`` (en or zh)."""
    sections = _read(package, name)
    source = f"{package}/prompts/{name}.yaml"
    if language not in sections:
        raise ConfigError(f"{source}: no prompts in language {language!r} (has {sorted(sections)})")
    return Prompts(source, language, sections[language])


def placeholders(template: str) -> set[str]:
    """The ``$names`` a template uses (for the test that languages agree)."""
    found: set[str] = set()
    for match in string.Template.pattern.finditer(template):
        named = match.group("named") or match.group("braced")
        if named:
            found.add(named)
    return found


@cache
def _read(package: str, name: str) -> dict[str, dict[str, str]]:
    source = f"{package}/prompts/{name}.yaml"
    try:
        text = resources.files(package).joinpath("prompts", f"{name}.yaml").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        raise ConfigError(f"prompt file {source} not found") from None
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or not all(
        isinstance(v, dict) and all(isinstance(t, str) for t in v.values()) for v in data.values()
    ):
        raise ConfigError(f"{source}: expected language -> {{key: template}}")
    return data
