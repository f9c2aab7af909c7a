from __future__ import annotations

import importlib.metadata
import types

import pytest

from reme_core import hookimpl
from reme_core.components import Chunker, ComponentSettings, KeywordIndex
from reme_core.errors import DuplicateComponentError, PluginError, UnknownComponentError
from reme_core.hookspecs import HOOK_NAMES
from reme_core.plugins import HOOK_BY_KIND, Plugins, load_plugins
from reme_core.schema import Chunk


class LineChunker(Chunker):
    name = "lines"

    def chunk(self, path: str, text: str) -> list[Chunk]:
        return [
            Chunk(path=path, ordinal=i, start_line=i + 1, end_line=i + 1, text=line)
            for i, line in enumerate(text.splitlines())
        ]


def _module(name: str, **hooks: object) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook_name, function in hooks.items():
        setattr(module, hook_name, function)
    return module


def _chunker_plugin(name: str, cls: type) -> types.ModuleType:
    @hookimpl
    def register_chunkers(register):
        register(cls)

    return _module(name, register_chunkers=register_chunkers)


def test_registered_chunker_is_found_with_its_provider():
    plugins = Plugins()
    plugins.register(_chunker_plugin("acme_chunkers", LineChunker), name="acme_chunkers")
    entry = plugins.registry("chunker").entry("lines")
    assert entry.cls is LineChunker
    assert entry.provider == "acme_chunkers"


def test_duplicate_name_names_both_providers():
    plugins = Plugins()
    plugins.register(_chunker_plugin("first_plugin", LineChunker), name="first_plugin")
    plugins.register(_chunker_plugin("second_plugin", LineChunker), name="second_plugin")
    with pytest.raises(DuplicateComponentError) as info:
        plugins.collect()
    assert "first_plugin" in str(info.value) and "second_plugin" in str(info.value)


def test_unknown_name_lists_available_and_hints_at_package(default_plugins: Plugins):
    with pytest.raises(UnknownComponentError) as info:
        default_plugins.get("chunker", "markdwn")
    message = str(info.value)
    assert "markdown" in message and "jsonl" in message
    assert "may not be installed" in message


def test_unknown_known_provider_suggests_install():
    # With the shipped plugins blocked (REME_LOAD_PLUGINS=""), a known name says what to install.
    with pytest.raises(UnknownComponentError, match=r"install reme\[torch\]"):
        Plugins().get("embedding", "minilm")


def test_misspelt_hook_fails_loudly():
    @hookimpl
    def register_chunker(register):  # missing the trailing "s"
        register(LineChunker)

    plugins = Plugins()
    plugins.register(_module("typo_plugin", register_chunker=register_chunker), name="typo_plugin")
    with pytest.raises(PluginError, match="register_chunker"):
        plugins.collect()


def test_hookimpl_with_wrong_argument_is_rejected_at_registration():
    @hookimpl
    def register_chunkers(add):
        pass

    plugins = Plugins()
    with pytest.raises(Exception, match="add"):
        plugins.register(_module("bad_args", register_chunkers=register_chunkers), name="bad_args")


def test_registering_a_non_component_is_an_error():
    class NotAChunker:
        name = "nope"

    plugins = Plugins()
    plugins.register(_chunker_plugin("wrong_base", NotAChunker), name="wrong_base")
    with pytest.raises(PluginError, match="not a subclass"):
        plugins.collect()


def test_settings_must_forbid_unknown_keys():
    class LaxSettings(ComponentSettings):
        model_config = {"extra": "allow"}

    class LaxChunker(LineChunker):
        name = "lax"
        Settings = LaxSettings

    plugins = Plugins()
    plugins.register(_chunker_plugin("lax_plugin", LaxChunker), name="lax_plugin")
    with pytest.raises(PluginError, match="extra='forbid'"):
        plugins.collect()


def test_every_component_type_has_a_hook():
    assert set(HOOK_BY_KIND.values()) | {"register_commands"} == set(HOOK_NAMES)


def test_defaults_cover_every_default_selection(default_plugins: Plugins):
    assert default_plugins.registry("keyword_index").names() == ["bm25s"]
    assert default_plugins.registry("graph").names() == ["sqlite"]
    assert default_plugins.registry("tag_index").names() == ["sqlite"]
    assert default_plugins.registry("chunker").names() == ["jsonl", "markdown", "text"]
    assert issubclass(default_plugins.get("keyword_index", "bm25s"), KeywordIndex)


class _FakeDist:
    """Just enough of importlib.metadata.Distribution for pluggy and our loader."""

    def __init__(self, name: str, version: str):
        self.metadata = {"name": name}
        self.name = name
        self.version = version
        self.project_name = name

    def _normalized_name(self) -> str:  # pragma: no cover - pluggy compatibility
        return self.name


class _FakeEntryPoint:
    def __init__(self, name: str, module: types.ModuleType, dist: _FakeDist):
        self.name = name
        self.group = "reme"
        self.value = module.__name__
        self._module = module
        self.dist = dist

    def load(self) -> types.ModuleType:
        return self._module


def _fake_entry_points(
    monkeypatch: pytest.MonkeyPatch, entry_points: list[_FakeEntryPoint]
) -> None:
    dists = {ep.dist.name: ep.dist for ep in entry_points}
    for dist in dists.values():
        dist.entry_points = [ep for ep in entry_points if ep.dist is dist]

    def fake_entry_points(group: str | None = None):
        return [ep for ep in entry_points if group in (None, ep.group)]

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: list(dists.values()))


def test_discovery_through_a_faked_entry_point(monkeypatch: pytest.MonkeyPatch):
    dist = _FakeDist("reme-acme", "1.2.3")
    module = _chunker_plugin("reme_acme", LineChunker)
    _fake_entry_points(monkeypatch, [_FakeEntryPoint("acme", module, dist)])
    plugins = load_plugins()
    assert "lines" in plugins.registry("chunker")
    assert plugins.registry("chunker").entry("lines").provider.startswith("reme-acme")
    info = {i.name: i for i in plugins.describe()}["reme-acme"]
    assert info.version == "1.2.3"
    assert info.hooks == ["register_chunkers"]
    assert load_plugins() is plugins  # idempotent


def test_blocked_and_allow_listed_plugins(monkeypatch: pytest.MonkeyPatch):
    dist = _FakeDist("reme-acme", "1.0")
    module = _chunker_plugin("reme_acme", LineChunker)
    _fake_entry_points(monkeypatch, [_FakeEntryPoint("acme", module, dist)])

    monkeypatch.setenv("REME_BLOCK_PLUGINS", "acme")
    assert "lines" not in load_plugins().registry("chunker")

    from reme_core.plugins import reset_plugins

    reset_plugins()
    monkeypatch.delenv("REME_BLOCK_PLUGINS")
    monkeypatch.setenv("REME_LOAD_PLUGINS", "")
    assert "lines" not in load_plugins().registry("chunker")

    reset_plugins()
    monkeypatch.setenv("REME_LOAD_PLUGINS", "reme-acme")
    assert "lines" in load_plugins().registry("chunker")


def test_entry_point_name_clash_warns(monkeypatch: pytest.MonkeyPatch):
    first = _FakeEntryPoint("same", _chunker_plugin("one", LineChunker), _FakeDist("reme-one", "1"))
    second = _FakeEntryPoint(
        "same", _chunker_plugin("two", LineChunker), _FakeDist("reme-two", "1")
    )
    _fake_entry_points(monkeypatch, [first, second])
    with pytest.warns(UserWarning, match="reme-one"):
        load_plugins()
