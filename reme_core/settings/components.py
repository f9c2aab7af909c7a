"""Component selections resolved: each ``name`` looked up among the loaded plugins and its
``settings`` validated against the implementation's own model, every error naming the key.

Plugins load after the settings do, so this runs as a second step (``validate_components``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from reme_core.config_errors import describe, dotted
from reme_core.errors import ConfigError, UnknownComponentError
from reme_core.settings.schema import ComponentSelection, Settings

if TYPE_CHECKING:
    from reme_core.plugins import Plugins

COMPONENT_KINDS: dict[str, str] = {
    "keyword_index": "keyword_index",
    "graph": "graph",
    "tag_index": "tag_index",
    "embedding": "embedding",
    "file_store": "file_store",
    "llm": "llm",
    "agent_wrapper": "agent_wrapper",
    "tokenizer": "tokenizer",
}
"""``components.<field>`` -> component type; ``chunkers`` entries are of type ``chunker``."""


def resolve_component(
    plugins: Plugins, kind: str, selection: ComponentSelection, path: str
) -> tuple[type, BaseModel]:
    """Look up the selected class and validate its settings; errors name ``path``."""
    try:
        cls = plugins.get(kind, selection.name)
    except UnknownComponentError as exc:
        raise UnknownComponentError(f"{path}.name: {exc}") from None
    settings_model: type[BaseModel] = cls.Settings
    try:
        return cls, settings_model.model_validate(selection.settings)
    except ValidationError as exc:
        message = describe(exc, settings_model, (), {})
        if "\n" in message:
            message = message.replace("\n  ", f"\n  {path}.settings.")
        else:
            message = f"{path}.settings.{message}"
        raise ConfigError(f"{message} [{kind} {selection.name!r}]") from None


def component_selections(settings: Settings) -> Iterator[tuple[str, str, ComponentSelection]]:
    """Every non-null selection as ``(kind, dotted path, selection)``."""
    components = settings.components
    for field, kind in COMPONENT_KINDS.items():
        selection = getattr(components, field)
        if selection is not None:
            yield kind, f"components.{field}", selection
    for suffix, selection in components.chunkers.items():
        yield "chunker", dotted(("components", "chunkers", suffix)), selection
    for name, pipeline in settings.pipelines.items():
        for i, step in enumerate(pipeline.steps):
            yield "step", dotted(("pipelines", name, "steps", i)), step
        if pipeline.llm is not None:
            yield "llm", dotted(("pipelines", name, "llm")), pipeline.llm


def validate_components(settings: Settings, plugins: Plugins) -> dict[str, tuple[type, BaseModel]]:
    """Resolve every selection (after plugins load); one ConfigError lists every problem."""
    resolved: dict[str, tuple[type, BaseModel]] = {}
    errors: list[ConfigError] = []
    for kind, path, selection in component_selections(settings):
        try:
            resolved[path] = resolve_component(plugins, kind, selection, path)
        except ConfigError as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        lines = "\n  ".join(str(e).replace("\n", "\n  ") for e in errors)
        raise ConfigError(f"invalid component configuration:\n  {lines}")
    return resolved
