"""The example plugin in tests/plugin_example is pip-installed into the test env (tox deps)."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reme_core.cli import attach_plugin_commands, cli
from reme_core.plugins import load_plugins


@pytest.fixture(scope="module")
def installed() -> None:
    try:
        importlib.metadata.distribution("reme-plugin-example")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(
            "reme-plugin-example is not installed: run the suite through tox, or "
            "`pip install ./tests/plugin_example`"
        )


def test_reme_plugins_lists_the_installed_plugin(installed: None):
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    listed = {p["name"]: p for p in json.loads(result.output)}
    assert listed["reme-plugin-example"]["version"] == "0.0.1"
    assert listed["reme-plugin-example"]["hooks"] == ["register_chunkers", "register_commands"]
    assert "reme" not in listed  # shipped defaults only with --all


def test_requirements_pin_the_plugin(installed: None):
    # tox installs it from its folder, so the pin names the folder as pip freeze does: no index
    # could resolve reme-plugin-example==0.0.1.
    result = CliRunner().invoke(cli, ["plugins", "--requirements"])
    folder = Path(__file__).resolve().parents[1] / "plugin_example"
    assert f"reme-plugin-example @ {folder.as_uri()}" in result.output.splitlines()


def test_its_components_and_command_are_usable(installed: None):
    plugins = load_plugins()
    assert (
        plugins.registry("chunker").entry("whole_file").provider.startswith("reme-plugin-example")
    )
    attach_plugin_commands(cli, plugins)
    try:
        result = CliRunner().invoke(cli, ["example-hello"])
    finally:
        cli.commands.pop("example-hello", None)
    assert result.output.strip() == "hello from reme-plugin-example"


def test_blocking_it_removes_it(installed: None, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REME_BLOCK_PLUGINS", "reme-plugin-example")
    assert "whole_file" not in load_plugins().registry("chunker")
