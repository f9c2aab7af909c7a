"""The shape every component shares: ``Component``, its settings model and the context it is
built in, and the helpers implementations use to read their settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from reme_core.errors import ConfigError

if TYPE_CHECKING:
    from reme_core.plugins import Plugins


class ComponentSettings(BaseModel):
    """Settings of one implementation. Unknown keys are an error.

    Validators are built on first use (``defer_build``): loading plugins registers dozens of
    settings classes, of which a workspace builds a handful.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)


@dataclass(frozen=True)
class ComponentContext:
    """Where a component lives: the workspace root and its derived-state folder (``.reme/``), and
    the plugin set it was built from (``plugins``, for a component that builds another one, as
    the ``cached`` llm builds its inner model; None when built outside a workspace)."""

    workspace: Path
    state_dir: Path
    plugins: Plugins | None = field(default=None, compare=False, repr=False)


def settings_path(path: str, context: ComponentContext | None) -> Path:
    """A path from a component's settings: ``~`` expanded, a relative one taken from the
    workspace (from the working directory when built outside a workspace)."""
    resolved = Path(path).expanduser()
    if not resolved.is_absolute() and context is not None:
        resolved = context.workspace / resolved
    return resolved


def required_settings(
    settings: ComponentSettings | None, model: type[ComponentSettings], missing: str
) -> ComponentSettings:
    """``settings``, else ``model``'s defaults; ``ConfigError(missing)`` when a field has none."""
    if settings is not None:
        return settings
    try:
        return model()
    except ValidationError:
        raise ConfigError(missing) from None


class Component:
    """Common shape: ``name`` identifies the implementation in config and in ``reme components``."""

    name: ClassVar[str]
    Settings: ClassVar[type[ComponentSettings]] = ComponentSettings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        self.settings = settings if settings is not None else self.Settings()
        self.context = context

    def close(self) -> None:
        """Release files and connections. Called once when the workspace closes."""

    def state_files(self) -> list[Path] | None:
        """The files and folders holding what this component persists across processes.

        The drift check's seal (``reme_core.index.seal``) watches them: when none changed since
        the projections were last known to agree, a no-op ``reme index`` skips comparing every
        chunk id. None (the default): the component cannot name them, or keeps its state in
        memory or on a server, so every pass compares its ids in full.
        """
        return None
