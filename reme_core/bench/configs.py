"""Named benchmark configs: YAML files in a benchmark plugin's config folder, by file stem.

``resolve_config("bm25", config_dirs=[...], overrides=[...])`` loads ``bm25.yaml`` from the
first folder that has it (or takes an existing file path as is), applies ``--set`` overrides and
validates. The host's ``REME_*`` variables and ``REME_CONFIG`` do not apply: a benchmark's
figures must follow from what its manifest records (config name + overrides).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from reme_core.errors import ConfigError
from reme_core.settings import ComponentSelection, Settings, load_settings

CACHED_LLM = "cached"
"""The llm (``reme_plugins.llm_cached``) that keeps every answer on disk by request hash."""


class ResolvedConfig(BaseModel):
    """A benchmark config ready to use: where it came from and the validated settings."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str | None
    """What the user gave (a name or a file path); None = the built-in defaults."""
    file: Path | None
    overrides: list[str]
    settings: Settings


def named_configs(config_dirs: Sequence[Path]) -> dict[str, Path]:
    """Config name -> file, over ``config_dirs`` (an earlier folder wins a name)."""
    found: dict[str, Path] = {}
    for folder in config_dirs:
        for path in sorted(Path(folder).glob("*.yaml")):
            found.setdefault(path.stem, path)
    return found


def resolve_config(
    config: str | None, *, config_dirs: Sequence[Path] = (), overrides: Sequence[str] = ()
) -> ResolvedConfig:
    """Settings for a named config or a config file, with ``overrides`` on top.

    An unknown name is a ``ConfigError`` listing the names available.
    """
    file: Path | None = None
    if config is not None:
        named = named_configs(config_dirs)
        if config in named:
            file = named[config]
        elif Path(config).expanduser().is_file():
            file = Path(config).expanduser()
        else:
            available = ", ".join(sorted(named)) or "none"
            raise ConfigError(f"unknown benchmark config {config!r} (named configs: {available})")
    settings = load_settings(file, list(overrides), env={})
    return ResolvedConfig(name=config, file=file, overrides=list(overrides), settings=settings)


def with_llm_cache(settings: Settings, cache_dir: str | None = None) -> Settings:
    """The settings with every configured model (``components.llm``, ``pipelines.*.llm``) wrapped
    in the ``cached`` llm, so a rerun answers from disk. Already-cached selections are kept."""

    def wrap(selection: ComponentSelection | None) -> ComponentSelection | None:
        if selection is None or selection.name == CACHED_LLM:
            return selection
        inner: dict[str, Any] = {"inner": selection.model_dump()}
        if cache_dir is not None:
            inner["dir"] = cache_dir
        return ComponentSelection(name=CACHED_LLM, settings=inner)

    components = settings.components.model_copy(update={"llm": wrap(settings.components.llm)})
    pipelines = {
        name: p.model_copy(update={"llm": wrap(p.llm)}) for name, p in settings.pipelines.items()
    }
    return settings.model_copy(update={"components": components, "pipelines": pipelines})
