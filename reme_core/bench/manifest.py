"""What a benchmark run depended on, recorded in its result so the run can be checked and redone.

``build_manifest`` collects: the installed plugin distributions with versions (what
``reme plugins --requirements`` pins, the shipped ``reme`` included), the effective config
(secrets redacted), the search pipeline every search surface runs with the distribution of each
of its steps, the named config it came from, the git revision of reme's source (or of the
working directory), each dataset file's sha256, the reme and Python versions, the date, and the
command line that reruns it. ``diff_manifests`` says, one line per difference, what stands
between a recorded run and this machine.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, Field

import reme_core
from reme_core.bench.install_sources import InstallSource, install_source, portable_source
from reme_core.pipelines.search import SEARCH_PIPELINE
from reme_core.plugin_sources import PluginSource
from reme_core.plugins import Plugins, _dist_name
from reme_core.settings import Settings, component_selections, redacted

FIXTURE_KEYWORD = "reme-test-fixture"
"""A distribution whose metadata lists this keyword is a test fixture (tests/plugin_example):
installed to test plugin loading, never part of a benchmark's plugin set."""


class PluginPin(BaseModel):
    """One plugin distribution (``version`` is None for a module registered directly)."""

    distribution: str
    version: str | None = None
    source: PluginSource | None = None
    """How it was installed, with the commit and content hash of a folder install (the check
    that the code is the same); its URL is the portable one (``install``), never a local path
    (None: recorded before sources were)."""
    install: InstallSource | None = None
    """Where another machine installs it from (None: recorded before this field)."""
    participated: bool | None = None
    """It provided a selected component or step, the command that ran, or a hook that fired;
    False: merely installed (None: recorded before this field; counts as taking part)."""


class ComponentPin(BaseModel):
    """One selected component or pipeline step and the distribution that registered it."""

    selection: str
    """Its config path: ``components.embedding``, ``pipelines.search.steps[0]``, ..."""
    kind: str
    name: str
    distribution: str | None = None
    version: str | None = None


class StepPin(BaseModel):
    """One step of the search pipeline and the distribution that registered it."""

    step: str
    distribution: str | None = None
    """None when no loaded plugin registers the step."""
    version: str | None = None


class SearchPipeline(BaseModel):
    """The pipeline every search surface runs (``pipelines.search``), hence what a run measured."""

    name: str = SEARCH_PIPELINE
    steps: list[StepPin] = Field(default_factory=list)


class GitState(BaseModel):
    revision: str
    dirty: bool
    """Tracked files differ from ``revision`` (untracked files do not count)."""


class DatasetFile(BaseModel):
    path: str
    """As resolved when the run started (absolute)."""
    sha256: str
    size: int


class Manifest(BaseModel):
    """Everything a run's figures depend on, besides the code of the plugins themselves."""

    plugins: list[PluginPin] = Field(default_factory=list)
    components: list[ComponentPin] | None = None
    """Every selected component and step with its provider (None: recorded before this field)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The effective settings (``redacted``), workspace left out: each item gets its own."""
    search_pipeline: SearchPipeline | None = None
    """The search pipeline's steps and who provides each; None when none is configured."""
    config_name: str | None = None
    """The named config or config file the run selected (None: the defaults)."""
    overrides: list[str] = Field(default_factory=list)
    """``--set`` overrides on top of the named config."""
    git: GitState | None = None
    """None when reme's source (and the working directory) is not a git checkout."""
    datasets: list[DatasetFile] = Field(default_factory=list)
    reme_version: str = reme_core.__version__
    python: str = Field(default_factory=platform.python_version)
    date: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    command: list[str] = Field(default_factory=list)
    """Arguments after ``reme`` that rerun this benchmark (``reme bench reproduce`` uses them)."""


def build_manifest(
    *,
    settings: Settings,
    plugins: Plugins,
    datasets: Iterable[str | Path] = (),
    config_name: str | None = None,
    overrides: Sequence[str] = (),
    command: Sequence[str] | None = None,
    repo_dir: Path | None = None,
) -> Manifest:
    """The manifest of a run about to start with these settings, plugins and dataset files.

    ``command`` defaults to the current reme command line (``current_command()``); ``repo_dir``
    to reme's source folder, then the working directory, for the git revision.
    """
    from reme_core.bench.participants import mark, participants

    components = component_pins(settings, plugins)
    pipeline = search_pipeline(settings, plugins)
    command = list(command) if command is not None else current_command()
    taking_part = participants(plugins, components, pipeline, command)
    return Manifest(
        plugins=mark(plugin_pins(plugins), taking_part),
        components=components,
        config=config_dump(settings),
        search_pipeline=pipeline,
        config_name=config_name,
        overrides=list(overrides),
        git=git_state(repo_dir),
        datasets=[dataset_file(Path(p)) for p in datasets],
        command=command,
    )


def plugin_pins(plugins: Plugins) -> list[PluginPin]:
    """Every loaded plugin distribution with its version and source, the shipped defaults
    included, test fixtures left out."""
    # The distributions the entry points came from: a lookup by name could find another copy
    # first (a source tree's *.egg-info on sys.path, without pip's direct_url.json).
    loaded = {_norm(_dist_name(d)): d for _p, d in plugins.pm.list_plugin_distributions()}
    pins = []
    for info in plugins.describe(include_defaults=True):
        if is_fixture(info.name):
            continue
        # A directly registered module (no version) is no distribution: nothing to install.
        dist = loaded.get(_norm(info.name))
        install = install_source(info.name, info.version, dist) if info.version else None
        source = portable_source(info.source, install) if install else info.source
        pins.append(
            PluginPin(distribution=info.name, version=info.version, source=source, install=install)
        )
    return pins


def is_fixture(distribution: str) -> bool:
    """Whether ``distribution`` declares itself a test fixture (``FIXTURE_KEYWORD``)."""
    try:
        metadata = importlib.metadata.metadata(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    keywords = metadata.get("Keywords") or ""
    return FIXTURE_KEYWORD in {k.strip() for k in keywords.replace(",", " ").split()}


def component_pins(settings: Settings, plugins: Plugins) -> list[ComponentPin]:
    """Each selected component and pipeline step, with the distribution providing it."""
    pins = []
    for kind, path, selection in component_selections(settings):
        registry = plugins.registry(kind)
        entry = registry.entry(selection.name) if selection.name in registry else None
        pins.append(
            ComponentPin(
                selection=path,
                kind=kind,
                name=selection.name,
                distribution=entry.distribution if entry else None,
                version=entry.version if entry else None,
            )
        )
    return pins


def search_pipeline(
    settings: Settings, plugins: Plugins, name: str = SEARCH_PIPELINE
) -> SearchPipeline | None:
    """Pipeline ``name``'s steps, each with the distribution (and version) registering it."""
    config = settings.pipelines.get(name)
    if config is None:
        return None
    registry = plugins.registry("step")
    steps = []
    for selection in config.steps:
        if selection.name in registry:
            entry = registry.entry(selection.name)
            steps.append(
                StepPin(step=entry.name, distribution=entry.distribution, version=entry.version)
            )
        else:
            steps.append(StepPin(step=selection.name))
    return SearchPipeline(name=name, steps=steps)


def config_dump(settings: Settings) -> dict[str, Any]:
    """The settings as recorded: redacted, and without the workspace (a temp folder per item)."""
    data = redacted(settings)
    data.pop("workspace", None)
    return data


def dataset_file(path: Path) -> DatasetFile:
    """A dataset file's resolved path, size and sha256 (read in 1 MiB blocks)."""
    path = path.expanduser().resolve()
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return DatasetFile(path=str(path), sha256=digest.hexdigest(), size=path.stat().st_size)


def git_state(repo_dir: Path | None = None) -> GitState | None:
    """Revision and dirty flag of reme's source checkout (else the working directory's)."""
    candidates = [repo_dir] if repo_dir is not None else [_reme_source(), Path.cwd()]
    for folder in candidates:
        revision = _git(folder, "rev-parse", "HEAD")
        if revision:
            status = _git(folder, "status", "--porcelain", "--untracked-files=no")
            return GitState(revision=revision, dirty=bool(status))
    return None


def current_command() -> list[str]:
    """The arguments after ``reme`` of the command now running.

    The reme CLI remembers them in the click context (``sys.argv`` is not the command line when
    the CLI runs in-process, as ``reme bench reproduce`` does); outside click, ``sys.argv[1:]``.
    """
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        args = ctx.meta.get("reme.args")
        if args is not None:
            return list(args)
    return list(sys.argv[1:])


def diff_manifests(recorded: Manifest, current: Manifest) -> list[str]:
    """What differs between a recorded run and now, one human-readable line each; [] = none.

    Plugin set and versions, named config and overrides, every effective config key, dataset
    contents (by sha256: a moved file with the same bytes is the same dataset). Git revision,
    date and Python version are not differences here (see ``environment_notes``): the plugin
    versions and the config are what decide the figures.
    """
    lines = _diff_plugins(recorded.plugins, current.plugins)
    lines += _diff_components(recorded.components, current.components)
    if recorded.config_name != current.config_name:
        lines.append(f"config name: {recorded.config_name} -> {current.config_name}")
    if recorded.overrides != current.overrides:
        lines.append(f"overrides: {recorded.overrides} -> {current.overrides}")
    lines += _diff_search_pipeline(recorded.search_pipeline, current.search_pipeline)
    lines += _diff_config(recorded.config, current.config)
    lines += _diff_datasets(recorded.datasets, current.datasets)
    return lines


def environment_notes(recorded: Manifest, current: Manifest) -> list[str]:
    """Differences that do not block a rerun but may explain a changed figure."""
    from reme_core.bench.participants import diff_plugins

    notes = diff_plugins(recorded.plugins, current.plugins)[1]
    if recorded.git != current.git:
        notes.append(f"git: {_git_text(recorded.git)} -> {_git_text(current.git)}")
    if recorded.reme_version != current.reme_version:
        notes.append(f"reme: {recorded.reme_version} -> {current.reme_version}")
    if recorded.python != current.python:
        notes.append(f"python: {recorded.python} -> {current.python}")
    return notes


# -- internals ---------------------------------------------------------------------------------


def _diff_plugins(recorded: list[PluginPin], current: list[PluginPin]) -> list[str]:
    # Bystanders (installed, not taking part) are notes: see ``participants.diff_plugins``.
    from reme_core.bench.participants import diff_plugins

    return diff_plugins(recorded, current)[0]


def _diff_components(
    recorded: list[ComponentPin] | None, current: list[ComponentPin] | None
) -> list[str]:
    if recorded is None or current is None:
        return []  # recorded before the field existed: the config and plugin list still compare
    old = {p.selection: p for p in recorded}
    new = {p.selection: p for p in current}
    lines = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key), new.get(key)
        if _provider(before) != _provider(after):
            lines.append(f"{key}: {_pin_text(before)} -> {_pin_text(after)}")
    return lines


def _provider(pin: ComponentPin | None) -> tuple[str, str | None, str | None] | None:
    return None if pin is None else (pin.name, pin.distribution, pin.version)


def _pin_text(pin: ComponentPin | None) -> str:
    if pin is None:
        return "<absent>"
    return f"{pin.kind} {pin.name} from {pin.distribution} {pin.version}"


def _diff_search_pipeline(
    recorded: SearchPipeline | None, current: SearchPipeline | None
) -> list[str]:
    # Who provides each step, and which version: the plugin list alone does not say which
    # distribution's step the search ran. A manifest recorded before this field existed (None)
    # is not a difference; a search pipeline added or removed shows in the config.
    if recorded is None or current is None:
        return []

    def text(pipeline: SearchPipeline | None) -> str:
        if pipeline is None:
            return "none"
        return ", ".join(
            f"{s.step} ({s.distribution or 'not installed'}"
            + (f" {s.version}" if s.version else "")
            + ")"
            for s in pipeline.steps
        )

    before, after = text(recorded), text(current)
    return [] if before == after else [f"search pipeline: {before} -> {after}"]


_ABSENT = object()


def _diff_config(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    old, new = _flatten(recorded), _flatten(current)
    lines = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key, _ABSENT), new.get(key, _ABSENT)
        if before != after:
            lines.append(f"config {key}: {_show(before)} -> {_show(after)}")
    return lines


def _diff_datasets(recorded: list[DatasetFile], current: list[DatasetFile]) -> list[str]:
    lines = []
    if len(recorded) != len(current):
        lines.append(f"datasets: {len(recorded)} recorded, {len(current)} now")
    for before, after in zip(recorded, current, strict=False):
        if before.sha256 != after.sha256:
            lines.append(
                f"dataset {Path(after.path).name}: sha256 differs "
                f"({before.sha256[:12]}… recorded, {after.sha256[:12]}… now; {after.path})"
            )
    return lines


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    # Dotted keys for mappings; lists compare whole (a reordered step list is a difference).
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(_flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _show(value: Any) -> str:
    return "<absent>" if value is _ABSENT else repr(value) if isinstance(value, str) else str(value)


def _git_text(git: GitState | None) -> str:
    if git is None:
        return "not a git checkout"
    return git.revision[:12] + (" (dirty)" if git.dirty else "")


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


def _reme_source() -> Path:
    return Path(reme_core.__file__).resolve().parent.parent


def _git(folder: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
