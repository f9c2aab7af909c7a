"""`reme` finds commands when asked: core ones from a name table, plugin ones by loading the
plugins only for a name no core command has, and help screens from a remembered listing."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from reme_core import hookimpl
from reme_core import plugins as plugin_module
from reme_core.cli import cli
from reme_core.cli.catalog import CORE_COMMANDS
from reme_core.cli.plugin_commands import HELP_LIMIT
from reme_core.cli.plugin_listing import cache_file, read_listing, stamp, write_listing
from reme_core.plugins import Plugins

HEAVY = (
    "numpy",
    "httpx",
    "pydantic_settings",
    "reme_core.index.indexer",
    "reme_core.plugins",
    "reme_core.cli.options",
    "reme_plugins",
    "bm25s",
    "onnxruntime",
)
"""What `reme --help` and `reme --version` must not import (each costs tens of milliseconds or
more, and through reme_core.plugins every plugin module)."""

PROBE = """
import json, os, sys
from reme_core.cli import cli
code = cli.main(sys.argv[1:], prog_name="reme", standalone_mode=False)
heavy = [m for m in json.loads(os.environ["HEAVY"]) if m in sys.modules]
print("PROBE " + json.dumps({"code": code, "heavy": heavy}))
"""


@click.command("hello")
def hello() -> None:
    """Say hello from a test plugin."""
    click.echo("hello from the test plugin")


@click.command("extra")
def extra() -> None:
    """A benchmark a test plugin adds."""
    click.echo("extra ran")


@click.command("tool")
def tool() -> None:
    """A command in a group only a test plugin has."""
    click.echo("tool ran")


class CommandPlugin:
    def __init__(self, *commands: tuple[click.Command, str | None]):
        self.commands = commands

    @hookimpl
    def register_commands(self, register):
        for command, group in self.commands:
            register(command, group=group)


def with_plugins(monkeypatch: pytest.MonkeyPatch, *commands: tuple[click.Command, str | None]):
    plugins = Plugins()
    plugins.register(CommandPlugin(*commands), name="test-commands")
    monkeypatch.setattr(plugin_module, "_plugins", plugins)
    return plugins


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="reme")


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The remembered plugin listing goes to a scratch folder, never the user's cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def probe(*args: str, cache: Path) -> dict:
    """Run ``reme ARGS`` in a fresh interpreter; its exit code, output and the heavy modules
    it imported."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "HEAVY": json.dumps(HEAVY)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env, check=False
    )
    output, _, line = done.stdout.rpartition("PROBE ")
    assert line, (done.stdout, done.stderr)
    return {**json.loads(line), "output": output}


def test_version_imports_nothing_heavy(_cache: Path):
    found = probe("--version", cache=_cache)
    assert found["code"] == 0 and "reme, version" in found["output"]
    assert found["heavy"] == []


def test_help_imports_nothing_heavy_once_the_plugin_listing_is_remembered(_cache: Path):
    first = probe("--help", cache=_cache)  # nothing remembered yet: it loads the plugins
    assert "reme_core.plugins" in first["heavy"]
    second = probe("--help", cache=_cache)
    assert second["heavy"] == []
    assert second["output"] == first["output"]
    assert "  dream " in second["output"]  # a command a plugin (reme's own dream) registers
    assert "  search " in second["output"]


def test_a_group_s_help_lists_plugin_commands_from_the_listing_too(_cache: Path):
    probe("--help", cache=_cache)
    found = probe("bench", "--help", cache=_cache)
    assert found["heavy"] == []  # bench_cmd needs none of them, the plugins' lines are remembered
    assert "  reproduce " in found["output"]


def test_the_name_table_matches_every_core_command():
    modules = {module for module, _ in CORE_COMMANDS.values()}
    defined = {}
    for module in modules:
        for command in importlib.import_module(module).COMMANDS:
            defined[command.name] = (module, command.get_short_help_str(HELP_LIMIT))
    assert defined == CORE_COMMANDS


def test_help_lists_what_the_commands_would_list_themselves(
    monkeypatch: pytest.MonkeyPatch,
):
    with_plugins(monkeypatch)
    lazy = invoke("--help").output
    eager = click.Group("reme", help=cli.help, params=cli.params)
    for name in CORE_COMMANDS:
        eager.add_command(cli.core_command(name))
    for command in cli.commands.values():  # what another test attached by hand, if any
        eager.add_command(command)
    assert lazy == CliRunner().invoke(eager, ["--help"], prog_name="reme").output


def test_plugin_commands_are_listed_and_run_at_the_top_under_core_and_new_groups(
    monkeypatch: pytest.MonkeyPatch,
):
    with_plugins(monkeypatch, (hello, None), (extra, "bench"), (tool, "fake-group"))
    top = invoke("--help").output
    assert "  hello " in top and "Say hello from a test plugin." in top
    assert "  fake-group " in top and "  extra " not in top
    bench = invoke("bench", "--help").output
    assert "  extra " in bench and "  reproduce " in bench
    assert invoke("hello").output == "hello from the test plugin\n"
    assert invoke("bench", "extra").output == "extra ran\n"
    assert invoke("fake-group", "tool").output == "tool ran\n"
    assert "extra" not in cli.core_command("bench").commands  # looked up, not attached


def test_an_unknown_command_is_still_an_error(monkeypatch: pytest.MonkeyPatch):
    with_plugins(monkeypatch, (hello, None))
    result = invoke("nope")
    assert result.exit_code == 2
    assert "No such command 'nope'" in result.output
    result = invoke("bench", "nope")
    assert result.exit_code == 2
    assert "No such command 'nope'" in result.output


@pytest.mark.parametrize(
    ("name", "group", "message"),
    [
        ("search", None, "registers the command 'search', which already exists"),
        ("hello", "search", "nests a command under 'search', which is a command, not a group"),
        ("reproduce", "bench", "registers the command 'reproduce', which already exists"),
    ],
)
def test_a_plugin_command_that_cannot_go_where_it_asks_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, name: str, group: str | None, message: str
):
    with_plugins(monkeypatch, (click.Command(name, callback=lambda: None), group))
    for args in (["--help"], ["nope"]):
        result = invoke(*args)
        assert result.exit_code == 1, result.output
        assert result.output == f"error: plugin 'test-commands' {message}\n"


def test_the_listing_stands_in_for_the_plugins_while_its_stamp_holds(
    monkeypatch: pytest.MonkeyPatch,
):
    plugins = Plugins()
    plugins.register(CommandPlugin((hello, None)), name="test-commands")
    loads = []

    def load_plugins() -> Plugins:  # what loading the installed plugins would give
        loads.append(1)
        return plugins

    monkeypatch.setattr(plugin_module, "load_plugins", load_plugins)
    assert "  hello " in invoke("--help").output
    assert "  hello " in invoke("--help").output
    assert len(loads) == 1  # the second listing was remembered
    monkeypatch.setenv("REME_BLOCK_PLUGINS", "something")
    assert "  hello " in invoke("--help").output
    assert len(loads) == 2  # another plugin set: asked again


def on_path(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """``folder`` as a site folder: after sys.path[0], which the stamp leaves out."""
    monkeypatch.setattr(sys, "path", [sys.path[0], str(folder), *sys.path[1:]])
    importlib.invalidate_caches()


def test_the_stamp_follows_installs_and_plugin_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    site = tmp_path / "site"
    package = site / "fake_plugin_pkg"
    package.mkdir(parents=True)
    source = package / "__init__.py"
    source.write_text("X = 1\n", encoding="utf-8")
    on_path(monkeypatch, site)
    before = stamp(["fake_plugin_pkg"])
    assert stamp(["fake_plugin_pkg"]) == before
    source.write_text("X = 22\n", encoding="utf-8")  # an editable install's file edited
    edited = stamp(["fake_plugin_pkg"])
    assert edited != before
    (site / "other_plugin-1.0.dist-info").mkdir()  # another distribution installed
    assert stamp(["fake_plugin_pkg"]) != edited


def test_a_stale_listing_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    site = tmp_path / "site"
    (site / "fake_plugin_pkg").mkdir(parents=True)
    (site / "fake_plugin_pkg" / "__init__.py").write_text("", encoding="utf-8")
    on_path(monkeypatch, site)
    listing = {"": {"hello": "Say hello."}}
    write_listing(listing, ["fake_plugin_pkg"])
    assert read_listing() == listing
    (site / "fake_plugin_pkg" / "cli.py").write_text("", encoding="utf-8")
    assert read_listing() is None


def test_a_damaged_listing_is_not_read():
    write_listing({"": {"hello": "Say hello."}}, [])
    path = cache_file()
    assert path is not None and read_listing() == {"": {"hello": "Say hello."}}
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "listing": {"": ["hello"]}}), encoding="utf-8")
    assert read_listing() is None
    path.write_text("{", encoding="utf-8")
    assert read_listing() is None
