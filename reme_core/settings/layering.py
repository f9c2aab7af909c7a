"""Loading: built-in defaults < YAML file < ``REME_*`` environment < ``--set`` overrides.

``load_settings`` applies the layers itself, rather than through pydantic-settings' sources, so
that every error names the dotted key and the layer it came from, and so tests can pass an
``env`` mapping instead of depending on the host environment.

Environment: ``REME_<SECTION>__<KEY>=value`` sets a nested key. ``REME_CONFIG``,
``REME_LOAD_PLUGINS`` and ``REME_BLOCK_PLUGINS`` are not config keys. An unknown top-level name
(``REME_FOO``) is ignored, since other tools may share the prefix; an unknown key under a known
section (``REME_SEARCH__LIMT``) is an error, because it can only be a typo.

Layers deep-merge mappings and replace lists and scalars. A component selection whose ``name``
changes drops the lower layer's ``settings`` (they belonged to the other implementation), and
``components.chunkers[.txt]=null`` removes a default chunker.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from reme_core.config_errors import KeyPath, describe, source_of, suggest
from reme_core.errors import ConfigError
from reme_core.settings.schema import ENV_DELIMITER, ENV_PREFIX, Settings

CONFIG_ENV_VAR = "REME_CONFIG"
NON_CONFIG_ENV_VARS = frozenset({CONFIG_ENV_VAR, "REME_LOAD_PLUGINS", "REME_BLOCK_PLUGINS"})


def load_settings(
    config_file: Path | None = None,
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Merge the layers and validate; raise ConfigError naming the key and its source."""
    env = os.environ if env is None else env
    if config_file is None and env.get(CONFIG_ENV_VAR):
        config_file = Path(env[CONFIG_ENV_VAR])
    assignments: list[tuple[list[str], Any, str]] = []
    if config_file is not None:
        assignments.append(([], read_config_file(config_file), str(config_file)))
    assignments.extend(_env_assignments(env))
    for item in overrides:
        keys, value = parse_override(item)
        assignments.append((keys, value, f"--set {item}"))

    # Start from the defaults so a layer that sets one key keeps the keys beside it.
    merged: dict[str, Any] = Settings().model_dump()
    origin: dict[KeyPath, str] = {}
    for keys, value, source in assignments:
        merged = _assign(merged, keys, value)
        for path in _paths(tuple(keys), value):
            origin[path] = source
    # BaseSettings quietly drops top-level "_..." keys (its init options such as _env_file).
    for key in merged:
        if key.startswith("_"):
            source = source_of((key,), origin)
            raise ConfigError(f"{key}: unknown key{suggest(Settings, (key,))} [from {source}]")
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(describe(exc, Settings, (), origin)) from None


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse a YAML config file into a mapping (an empty file is an empty mapping)."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"config file {path}{where}: invalid YAML: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        node = yaml.compose(text)
        line = node.start_mark.line + 1 if node is not None else 1
        raise ConfigError(
            f"config file {path} line {line}: the top level must be a mapping of keys "
            f"(such as 'search:'), not a {type(data).__name__}"
        )
    workspace = data.get("workspace")
    if isinstance(workspace, str) and not Path(workspace).expanduser().is_absolute():
        # A relative workspace means "next to this file", wherever the command runs from.
        data["workspace"] = str(path.resolve().parent / workspace)
    return data


def parse_override(item: str) -> tuple[list[str], Any]:
    """Split ``key.sub=value`` into keys and a YAML-parsed value; ``a[.md]`` quotes a dotted key."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item!r}: expected key=value, such as --set search.limit=5")
    return _split_key(key.strip(), item), _parse_value(raw, f"--set {item}")


def _split_key(key: str, item: str) -> list[str]:
    parts: list[str] = []
    current = ""
    i = 0
    while i < len(key):
        char = key[i]
        if char == "[":
            end = key.find("]", i)
            if end == -1:
                raise ConfigError(f"--set {item!r}: unclosed '[' in the key")
            if current:
                parts.append(current)
                current = ""
            parts.append(key[i + 1 : end])
            i = end + 1
            continue
        if char == ".":
            if current:
                parts.append(current)
            current = ""
        else:
            current += char
        i += 1
    if current:
        parts.append(current)
    if not parts or any(not p for p in parts):
        raise ConfigError(f"--set {item!r}: empty key")
    return parts


def _parse_value(raw: str, source: str) -> Any:
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}: the value is not valid YAML: {problem}") from None


def _env_assignments(env: Mapping[str, str]) -> Iterator[tuple[list[str], Any, str]]:
    found: list[tuple[list[str], str, str]] = []
    for var, raw in env.items():
        if not var.upper().startswith(ENV_PREFIX) or var.upper() in NON_CONFIG_ENV_VARS:
            continue
        keys = [k.lower() for k in var[len(ENV_PREFIX) :].split(ENV_DELIMITER)]
        if keys[0] not in Settings.model_fields:
            continue  # another tool's REME_* variable
        found.append((keys, raw, var))
    # Whole sections first, so REME_SEARCH='{...}' and REME_SEARCH__LIMIT=5 combine predictably.
    for keys, raw, var in sorted(found, key=lambda f: (len(f[0]), f[2])):
        yield keys, _parse_value(raw, f"env {var}"), f"env {var}"


def _assign(base: Any, keys: list[str], value: Any) -> Any:
    overlay = value
    for key in reversed(keys):
        overlay = {key: overlay}
    return _merge(base, overlay, ())


def _merge(base: Any, overlay: Any, path: KeyPath) -> Any:
    if not (isinstance(base, dict) and isinstance(overlay, dict)):
        return overlay
    if _is_selection(path) and overlay.get("name", base.get("name")) != base.get("name"):
        return overlay  # another implementation: the old settings do not apply to it
    out = dict(base)
    for key, value in overlay.items():
        out[key] = _merge(base.get(key), value, (*path, key))
    return out


def _is_selection(path: KeyPath) -> bool:
    if len(path) < 2 or path[0] != "components":
        return False
    return len(path) == 3 if path[1] == "chunkers" else len(path) == 2


def _paths(prefix: KeyPath, value: Any) -> Iterator[KeyPath]:
    yield prefix
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _paths((*prefix, key), sub)
