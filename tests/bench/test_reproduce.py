"""`reme bench reproduce`: compares the manifest, says what differs, reruns when nothing does."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from reme_core import plugins as plugin_module
from reme_core.bench import PluginPin, RunResult
from reme_core.bench import manifest as manifest_module
from reme_core.bench import participants as participants_module
from reme_core.cli import RemeGroup
from reme_core.cli.bench_cmd import bench_group, compare_figures
from reme_core.plugins import Plugins
from tests.bench.toy import toy_group

VERSION = {"reme-toy": "0.1.0"}


@pytest.fixture
def cli(default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(plugin_module, "_plugins", default_plugins)
    # Directly registered plugins have no version; pretend one distribution is installed.
    monkeypatch.setattr(
        manifest_module,
        "plugin_pins",
        lambda _plugins: [PluginPin(distribution=n, version=v) for n, v in VERSION.items()],
    )
    monkeypatch.setitem(VERSION, "reme-toy", "0.1.0")
    # The toy command is registered directly; say reme-toy's command is the one that runs (a
    # participant), while reme-idle is merely installed (a bystander).
    monkeypatch.setattr(participants_module, "command_distribution", lambda *_: "reme-toy")
    monkeypatch.setitem(VERSION, "reme-idle", "1.0")
    root = RemeGroup("reme")
    bench = click.Group("bench", commands=dict(bench_group.commands))
    bench.add_command(toy_group)
    root.add_command(bench)
    return root


def invoke(cli: click.Group, *args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def recorded(cli: click.Group, tmp_path: Path) -> Path:
    data = tmp_path / "data.json"
    data.write_text(json.dumps([0, 1, 2, 3]))
    result = invoke(cli, "bench", "toy", "run", str(data), "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    return tmp_path / "run" / "result.json"


def test_the_result_records_the_command(recorded: Path, tmp_path: Path) -> None:
    result = RunResult.read(recorded)
    data = str(tmp_path / "data.json")
    assert result.manifest.command == ["bench", "toy", "run", data, "--out", str(tmp_path / "run")]
    assert result.overall == {"hit": 0.5, "n": 4.0}


def test_a_matching_manifest_reruns_and_compares_figures(
    cli: click.Group, recorded: Path, tmp_path: Path
) -> None:
    dry = invoke(cli, "bench", "reproduce", str(recorded), "--dry-run")
    assert dry.exit_code == 0 and "manifest matches" in dry.output
    assert not (tmp_path / "run-reproduce").exists()

    full = invoke(cli, "bench", "reproduce", str(recorded))
    assert full.exit_code == 0, full.output
    assert "reproduced: 2 overall figures identical" in full.output
    redone = RunResult.read(tmp_path / "run-reproduce")
    assert redone.overall == RunResult.read(recorded).overall


def test_a_changed_plugin_version_is_named_and_nothing_reruns(
    cli: click.Group, recorded: Path, tmp_path: Path
) -> None:
    VERSION["reme-toy"] = "0.2.0"
    result = invoke(cli, "bench", "reproduce", str(recorded))
    assert result.exit_code == 1
    assert "differs: plugin reme-toy: 0.1.0 -> 0.2.0" in result.output
    # Only the participant is asked for, by its index pin (it has no local source).
    assert "the recorded plugins install with: pip install reme-toy==0.1.0\n" in result.output
    assert not (tmp_path / "run-reproduce").exists()


def test_a_missing_or_changed_bystander_is_a_note(cli: click.Group, recorded: Path) -> None:
    del VERSION["reme-idle"]
    result = invoke(cli, "bench", "reproduce", str(recorded), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "note: plugin reme-idle: not installed (recorded 1.0, did not take part)" in (
        result.output
    )
    assert "manifest matches" in result.output


def test_a_missing_participant_is_a_difference(cli: click.Group, recorded: Path) -> None:
    del VERSION["reme-toy"]
    result = invoke(cli, "bench", "reproduce", str(recorded), "--dry-run")
    assert result.exit_code == 1
    assert "differs: plugin reme-toy: not installed (recorded 0.1.0)" in result.output


def test_the_recorded_manifest_says_who_took_part(recorded: Path) -> None:
    pins = {p.distribution: p.participated for p in RunResult.read(recorded).manifest.plugins}
    assert pins == {"reme-toy": True, "reme-idle": False}


def test_a_changed_dataset_is_named(cli: click.Group, recorded: Path, tmp_path: Path) -> None:
    (tmp_path / "data.json").write_text(json.dumps([5, 5]))
    result = invoke(cli, "bench", "reproduce", str(recorded), "--dry-run")
    assert result.exit_code == 1
    assert "differs: dataset data.json: sha256 differs" in result.output


def test_changed_figures_are_listed() -> None:
    assert compare_figures({"a": 0.5, "n": 4}, {"a": 0.5 + 1e-12, "n": 4}) == []
    assert compare_figures({"a": 0.5, "b": 1.0}, {"a": 0.25}) == [
        "a: 0.5 -> 0.25",
        "b: 1.0 -> None",
    ]
