"""Plugin manager: loads plugins, fills one typed registry per component type, lists what is loaded."""

from __future__ import annotations

import importlib.metadata
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import click
import pluggy
from pydantic import BaseModel

from reme_core import hookspecs
from reme_core.components import COMPONENT_TYPES, Component
from reme_core.errors import DuplicateComponentError, PluginError, UnknownComponentError
from reme_core.plugin_sources import PluginSource, source_of

ENTRY_POINT_GROUP = "reme"

HOOK_BY_KIND: dict[str, str] = {
    "llm": "register_llms",
    "embedding": "register_embeddings",
    "file_store": "register_file_stores",
    "chunker": "register_chunkers",
    "graph": "register_graphs",
    "keyword_index": "register_keyword_indexes",
    "tag_index": "register_tag_indexes",
    "agent_wrapper": "register_agent_wrappers",
    "tokenizer": "register_tokenizers",
    "step": "register_steps",
}

# Names that later issues ship as optional packages; lets an unknown-name error say what to install.
KNOWN_PROVIDERS: dict[str, str] = {
    "minilm": "reme[torch]",
    "chromadb": "reme[chromadb]",
    # Benchmark forks live in their own distributions (plugins/lme, plugins/beam).
    "search_v2": "reme-lme (pip install -e plugins/lme)",
    "auto_memory_lme": "reme-lme (pip install -e plugins/lme)",
    "beam_answer": "reme-beam (pip install -e plugins/beam)",
    "beam_judge": "reme-beam (pip install -e plugins/beam)",
}

T = TypeVar("T", bound=Component)


@dataclass(frozen=True)
class Registered(Generic[T]):
    name: str
    cls: type[T]
    provider: str
    distribution: str | None = None
    """The distribution that registered it (a module registered directly: its plugin name)."""
    version: str | None = None
    """That distribution's version; None for a module registered directly."""


class Registry(Generic[T]):
    """Implementations of one component type, by name."""

    def __init__(self, kind: str, base: type[T]):
        self.kind = kind
        self.base = base
        self._items: dict[str, Registered[T]] = {}

    def add(
        self,
        cls: type[T],
        provider: str,
        distribution: str | None = None,
        version: str | None = None,
    ) -> None:
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise PluginError(
                f"plugin {provider!r} registered {cls!r} as a {self.kind}, "
                f"but it is not a subclass of {self.base.__module__}.{self.base.__qualname__}"
            )
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(f"plugin {provider!r}: {cls.__qualname__} has no `name` string")
        settings = getattr(cls, "Settings", None)
        if not (isinstance(settings, type) and issubclass(settings, BaseModel)):
            raise PluginError(f"plugin {provider!r}: {name!r} Settings is not a pydantic model")
        if settings.model_config.get("extra") != "forbid":
            raise PluginError(f"plugin {provider!r}: {name!r} Settings must set extra='forbid'")
        if name in self._items:
            first = self._items[name].provider
            raise DuplicateComponentError(
                f"two plugins register the {self.kind} {name!r}: {first!r} and {provider!r}; "
                f"uninstall or block one (REME_BLOCK_PLUGINS)"
            )
        self._items[name] = Registered(name, cls, provider, distribution, version)

    def get(self, name: str) -> type[T]:
        return self.entry(name).cls

    def entry(self, name: str) -> Registered[T]:
        try:
            return self._items[name]
        except KeyError:
            available = ", ".join(sorted(self._items)) or "none"
            hint = KNOWN_PROVIDERS.get(name)
            install = (
                f"install {hint}"
                if hint
                else f"the package that provides {name!r} may not be installed"
            )
            raise UnknownComponentError(
                f"unknown {self.kind} {name!r} (available: {available}); {install}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def entries(self) -> list[Registered[T]]:
        return [self._items[n] for n in self.names()]

    def __contains__(self, name: object) -> bool:
        return name in self._items


@dataclass(frozen=True)
class RegisteredCommand:
    command: click.Command
    group: str | None
    provider: str
    distribution: str | None = None
    """The distribution that registered it (benchmark manifests name a run's command's)."""


@dataclass
class PluginInfo:
    """One plugin distribution (or a directly registered module) and the hooks it implements."""

    name: str
    version: str | None
    hooks: list[str]
    modules: list[str] = field(default_factory=list)
    source: PluginSource = field(default_factory=PluginSource)
    """Index, local folder, VCS or archive (PEP 610's direct_url.json), with a revision."""

    @property
    def requirement(self) -> str:
        """The line that installs this distribution again (``name @ file://...`` for a folder)."""
        return self.source.requirement(self.name, self.version)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "hooks": self.hooks,
            "modules": self.modules,
            "source": self.source.model_dump(exclude_none=True),
            "requirement": self.requirement,
        }


class Plugins:
    """A pluggy manager plus the registries built from its hooks. Core code talks to this facade."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
        self.pm.add_hookspecs(hookspecs)
        self.registries: dict[str, Registry[Any]] = {}
        self._commands: list[RegisteredCommand] | None = None
        self._collected = False
        self._dists: dict[int, tuple[object, tuple[str, str] | None]] = {}
        # Plugin names whose implementation of a hook ran through ``pm.hook`` (the register
        # hooks are called one implementation at a time in ``collect`` and do not count):
        # benchmark manifests say which plugins took part in a run.
        self._fired: set[str] = set()
        self.pm.add_hookcall_monitoring(self._hook_called, _ignore_result)

    # -- loading -----------------------------------------------------------------------------

    def register(self, plugin: object, name: str | None = None) -> None:
        """Register a module or object with hookimpls (tests and in-process plugins)."""
        self.pm.register(plugin, name=name)
        self._collected = False
        self._commands = None

    def unregister(self, name: str) -> None:
        self.pm.unregister(name=name)
        self._collected = False
        self._commands = None

    def load_entry_points(
        self, blocked: set[str] | None = None, allow: set[str] | None = None
    ) -> None:
        """Load the ``reme`` entry points, skipping blocked names and, with an allow-list, the rest.

        Names match an entry point's name or its distribution's name.
        """
        blocked = blocked or set()
        seen: dict[str, str] = {}
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist.name if ep.dist else "?"
            if ep.name in seen and seen[ep.name] != dist:
                warnings.warn(
                    f"reme entry point {ep.name!r} is provided by both {seen[ep.name]!r} and "
                    f"{dist!r}; only the first is loaded",
                    stacklevel=2,
                )
            seen.setdefault(ep.name, dist)
            names = {ep.name, dist, _normalise(dist)}
            if names & blocked or (allow is not None and not names & allow):
                self.pm.set_blocked(ep.name)
        try:
            self.pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        except pluggy.PluginValidationError as exc:
            raise PluginError(f"plugin {exc.plugin!r} is invalid: {exc}") from exc
        self._collected = False
        self._commands = None

    def check(self) -> None:
        """Fail loudly on a hookimpl that matches no hookspec (a misspelt hook name)."""
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginError(str(exc)) from exc

    # -- registries --------------------------------------------------------------------------

    def collect(self) -> None:
        """Call every register hook once per plugin, so each registration knows its provider."""
        self.check()
        self.registries = {kind: Registry(kind, base) for kind, base in COMPONENT_TYPES.items()}
        for kind, hook_name in HOOK_BY_KIND.items():
            registry = self.registries[kind]
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                provider = self.provider_name(impl.plugin_name)
                dist, version = self.distribution_of(impl.plugin_name)
                impl.function(register=_bind(registry.add, provider, dist, version))
        self._commands = None  # collected when the CLI asks: see ``commands``
        self._collected = True

    @property
    def commands(self) -> list[RegisteredCommand]:
        """The CLI commands plugins add, collected on first use: a plugin's commands may import
        the whole CLI (click, the HTTP client), which opening a workspace never needs."""
        if self._commands is None:
            self.check()
            commands: list[RegisteredCommand] = []
            for impl in self.pm.hook.register_commands.get_hookimpls():
                provider = self.provider_name(impl.plugin_name)
                dist = self.distribution_of(impl.plugin_name)[0]

                def add_command(
                    command: click.Command,
                    group: str | None = None,
                    _p: str = provider,
                    _d: str = dist,
                ) -> None:
                    if not isinstance(command, click.Command):
                        raise PluginError(
                            f"plugin {_p!r} registered {command!r}, not a click command"
                        )
                    commands.append(RegisteredCommand(command, group, _p, _d))

                impl.function(register=add_command)
            self._commands = commands
        return self._commands

    def registry(self, kind: str) -> Registry[Any]:
        if not self._collected:
            self.collect()
        try:
            return self.registries[kind]
        except KeyError:
            raise PluginError(f"unknown component type {kind!r}") from None

    def get(self, kind: str, name: str) -> type[Any]:
        return self.registry(kind).get(name)

    def provider_name(self, plugin_name: str) -> str:
        found = self._distribution(plugin_name)
        return f"{found[0]} ({plugin_name})" if found is not None else plugin_name

    def distribution_of(self, plugin_name: str) -> tuple[str, str | None]:
        """``(distribution, version)`` of a registered plugin; a module registered directly
        (no distribution) is named by its plugin name, without a version."""
        found = self._distribution(plugin_name)
        return found if found is not None else (plugin_name, None)

    def _distribution(self, plugin_name: str) -> tuple[str, str] | None:
        """Name and version of the distribution that registered ``plugin_name``. Both come from
        the distribution's metadata file, parsed anew on every access: read once per plugin."""
        plugin = self.pm.get_plugin(plugin_name)
        cached = self._dists.get(id(plugin))
        if cached is not None and cached[0] is plugin:
            return cached[1]
        found = None
        for candidate, dist in self.pm.list_plugin_distributions():
            if candidate is plugin:
                found = self._metadata_of(getattr(dist, "_dist", dist))
                break
        self._dists[id(plugin)] = (plugin, found)
        return found

    def _metadata_of(self, dist: Any) -> tuple[str, str]:
        """Name and version of a distribution, parsed once (its entry points share it)."""
        cached = self._dists.get(id(dist))
        if cached is not None and cached[0] is dist and cached[1] is not None:
            return cached[1]
        found = (_dist_name(dist), dist.version)
        self._dists[id(dist)] = (dist, found)
        return found

    def _hook_called(self, hook_name: str, hook_impls: Any, kwargs: Any) -> None:
        self._fired.update(impl.plugin_name for impl in hook_impls)

    def fired_distributions(self) -> list[str]:
        """The distributions (a directly registered module: its plugin name) with an
        implementation of a hook that has fired since loading, sorted."""
        return sorted({self.distribution_of(name)[0] for name in self._fired})

    # -- listing -----------------------------------------------------------------------------

    def describe(self, include_defaults: bool = False) -> list[PluginInfo]:
        """Plugins grouped by distribution; the shipped defaults (``reme`` itself) only on request."""
        by_dist: dict[str, PluginInfo] = {}
        dist_of = {id(p): d for p, d in self.pm.list_plugin_distributions()}
        for plugin in self.pm.get_plugins():
            if plugin is hookspecs:
                continue
            plugin_name = self.pm.get_name(plugin) or repr(plugin)
            dist = dist_of.get(id(plugin))
            key = _dist_name(dist) if dist else plugin_name
            if dist and _normalise(key) == "reme" and not include_defaults:
                continue
            info = by_dist.get(key)
            if info is None:
                source = source_of(dist) if dist else PluginSource()
                info = PluginInfo(key, dist.version if dist else None, [], source=source)
                by_dist[key] = info
            info.modules.append(getattr(plugin, "__name__", plugin_name))
            hooks = {c.name for c in self.pm.get_hookcallers(plugin) or []}
            info.hooks = sorted(set(info.hooks) | hooks)
        for info in by_dist.values():
            info.modules.sort()
        return sorted(by_dist.values(), key=lambda i: i.name.lower())


def _bind(add: Callable[..., None], provider: str, *source: str | None) -> Callable[[Any], None]:
    def register(cls: Any) -> None:
        add(cls, provider, *source)

    return register


def _ignore_result(outcome: Any, hook_name: str, hook_impls: Any, kwargs: Any) -> None:
    """pluggy's monitoring needs an after-call too; a hook's result says nothing of who ran."""


def _dist_name(dist: Any) -> str:
    # pluggy has handed out both its DistFacade (project_name) and plain Distribution objects.
    return getattr(dist, "project_name", None) or dist.metadata["name"]


def _normalise(dist_name: str) -> str:
    return dist_name.lower().replace("_", "-")


def _env_names(var: str) -> set[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return {n.strip() for n in raw.split(",") if n.strip()}


_plugins: Plugins | None = None


def load_plugins() -> Plugins:
    """Load installed plugins once per process and return the shared manager.

    ``REME_BLOCK_PLUGINS`` (comma-separated) skips plugins; ``REME_LOAD_PLUGINS``, when set, loads
    only the plugins it names (set but empty loads none, not even the shipped defaults).
    """
    global _plugins
    if _plugins is None:
        plugins = Plugins()
        blocked = _env_names("REME_BLOCK_PLUGINS") or set()
        plugins.load_entry_points(blocked=blocked, allow=_env_names("REME_LOAD_PLUGINS"))
        plugins.collect()
        _plugins = plugins
    return _plugins


def loaded_plugins() -> Plugins | None:
    """The shared manager if ``load_plugins`` (or a test) has set it up; loads nothing. The CLI
    asks first: listing plugin commands from a manager already loaded is free."""
    return _plugins


def reset_plugins() -> None:
    """Forget the shared manager (tests)."""
    global _plugins
    _plugins = None
