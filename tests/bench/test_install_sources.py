"""Where a recorded plugin installs from on another machine: fake dist metadata, real git checkouts."""

from __future__ import annotations

import json
import subprocess
from importlib.metadata import PathDistribution
from pathlib import Path
from types import ModuleType

import pytest

from reme_core.bench.install_sources import install_source, portable_source
from reme_core.bench.manifest import Manifest, PluginPin
from reme_core.bench.participants import diff_plugins, install_line
from reme_core.plugin_sources import PluginSource, source_of
from reme_core.plugins import Plugins

HOOKIMPL = __import__("pluggy").HookimplMarker("reme")


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout with a root project (``reme``) and a plugin folder, no remote."""
    root = tmp_path_factory.mktemp("checkout")
    (root / "pyproject.toml").write_text('[project]\nname = "reme"\nversion = "0.1.0"\n')
    plugin = root / "plugins" / "lme"
    plugin.mkdir(parents=True)
    (plugin / "pyproject.toml").write_text('[project]\nname = "reme-lme"\nversion = "0.1.0"\n')
    (plugin / "code.py").write_text("X = 1\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    return root


def fake_dist(
    tmp: Path, name: str, direct_url: dict | None, suffix: str = ".dist-info"
) -> PathDistribution:
    folder = tmp / f"{name.replace('-', '_')}-0.1.0{suffix}"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    if direct_url is not None:
        (folder / "direct_url.json").write_text(json.dumps(direct_url))
    return PathDistribution(folder)


def editable(folder: Path) -> dict:
    return {"url": folder.as_uri(), "dir_info": {"editable": True}}


def test_an_index_install_is_name_and_version(tmp_path: Path) -> None:
    found = install_source("reme-lme", "0.1.0", fake_dist(tmp_path, "reme-lme", None))
    assert found.requirement == "reme-lme==0.1.0" and found.repository is None


def test_a_checkout_folder_records_its_origin_commit_and_subdirectory(
    repo: Path, tmp_path: Path
) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    git(clone, "remote", "set-url", "origin", "https://example.org/team/reme.git")
    head = git(clone, "rev-parse", "HEAD")
    dist = fake_dist(tmp_path / "site", "reme-lme", editable(clone / "plugins" / "lme"))
    found = install_source("reme-lme", "0.1.0", dist)
    assert found.requirement == (
        f"reme-lme @ git+https://example.org/team/reme.git@{head}#subdirectory=plugins/lme"
    )
    assert (found.commit, found.subdirectory, found.relative) == (head, "plugins/lme", False)
    # The recorded source keeps the content hash (the check) and names no local folder.
    source = portable_source(source_of(dist), found)
    assert source is not None and source.tree and source.revision
    assert source.url == f"git+https://example.org/team/reme.git@{head}#subdirectory=plugins/lme"


def test_an_scp_style_remote_becomes_an_ssh_url(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    git(clone, "remote", "set-url", "origin", "git@example.org:team/reme.git")
    found = install_source("reme", "0.1.0", fake_dist(tmp_path / "site", "reme", editable(clone)))
    head = git(clone, "rev-parse", "HEAD")
    assert found.requirement == f"reme @ git+ssh://git@example.org/team/reme.git@{head}"


def test_without_a_reachable_remote_the_project_url_is_used(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)  # origin: a path
    pyproject = clone / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '[project.urls]\nRepository = "https://example.org/r/reme"\n'
    )
    found = install_source("reme", "0.1.0", fake_dist(tmp_path / "site", "reme", editable(clone)))
    assert found.repository == "git+https://example.org/r/reme"
    assert "/" + tmp_path.name not in found.requirement


def test_without_any_url_the_folder_is_relative_to_the_repository(
    repo: Path, tmp_path: Path
) -> None:
    dist = fake_dist(tmp_path, "reme-lme", editable(repo / "plugins" / "lme"))
    found = install_source("reme-lme", "0.1.0", dist)
    assert found.requirement == "./plugins/lme" and found.relative
    assert found.commit == git(repo, "rev-parse", "HEAD")
    source = portable_source(source_of(dist), found)
    assert source is not None and source.url is None and source.tree


def test_a_wheel_built_in_a_temporary_folder_of_the_project_resolves_to_the_project(
    repo: Path, tmp_path: Path
) -> None:
    # tox builds reme's wheel under .tox/.tmp/package/N/ and may delete it after installing.
    wheel = repo / ".tox" / ".tmp" / "package" / "1" / "reme-0.1.0-py3-none-any.whl"
    record = {"url": wheel.as_uri(), "archive_info": {"hash": "sha256=00"}}
    dist = fake_dist(tmp_path, "reme", record)
    found = install_source("reme", "0.1.0", dist)
    assert found.requirement == "." and found.relative and found.subdirectory is None
    source = portable_source(source_of(dist), found)
    assert source is not None and source.url is None and source.revision is None


def test_a_wheel_from_nowhere_known_is_name_and_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    record = {
        "url": (tmp_path / "wheels" / "reme-0.1.0-py3-none-any.whl").as_uri(),
        "archive_info": {},
    }
    dist = fake_dist(tmp_path / "site", "reme", record)
    found = install_source("reme", "0.1.0", dist)
    assert found.requirement == "reme==0.1.0"
    source = portable_source(source_of(dist), found)
    assert source is not None and source.url is None


def test_a_wheel_resolves_through_the_working_directory(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo / "plugins")
    record = {"url": (tmp_path / "reme-0.1.0-py3-none-any.whl").as_uri(), "archive_info": {}}
    assert install_source("reme", "0.1.0", fake_dist(tmp_path, "reme", record)).requirement == "."


def test_a_vcs_install_keeps_its_url_commit_and_subdirectory(tmp_path: Path) -> None:
    record = {
        "url": "https://example.org/team/reme.git",
        "vcs_info": {"vcs": "git", "commit_id": "c" * 40},
        "subdirectory": "plugins/beam",
    }
    found = install_source("reme-beam", "0.1.0", fake_dist(tmp_path, "reme-beam", record))
    assert found.requirement == (
        f"reme-beam @ git+https://example.org/team/reme.git@{'c' * 40}#subdirectory=plugins/beam"
    )


def test_a_vcs_install_from_a_local_clone_names_the_clone_s_repository(
    repo: Path, tmp_path: Path
) -> None:
    record = {"url": repo.as_uri(), "vcs_info": {"vcs": "git", "commit_id": "d" * 40}}
    found = install_source("reme", "0.1.0", fake_dist(tmp_path, "reme", record))
    assert found.requirement == "." and "file:" not in found.requirement


def test_metadata_in_a_source_tree_names_that_checkout(repo: Path) -> None:
    dist = fake_dist(repo, "reme", None, suffix=".egg-info")
    assert install_source("reme", "0.1.0", dist).requirement == "."


# -- the install line and participants --------------------------------------------------------


def pin(name: str, took_part: bool | None, **install: object) -> PluginPin:
    from reme_core.bench.install_sources import InstallSource

    found = InstallSource(**install) if install else None
    return PluginPin(distribution=name, version="0.1.0", install=found, participated=took_part)


def test_the_install_line_names_participants_from_portable_sources() -> None:
    manifest = Manifest(
        plugins=[
            pin("reme", True, requirement=".", commit="a" * 40, relative=True),
            pin("reme-lme", True, requirement="reme-lme @ git+https://x.org/r.git@" + "b" * 40),
            pin("reme-agent-cli", False, requirement="./examples/plugins/reme-agent-cli"),
            # Recorded before install sources: a local folder is not printed.
            PluginPin(
                distribution="reme-old",
                version="0.2.0",
                source=PluginSource(kind="path", url="file:///tmp/build/reme-old"),
            ),
        ]
    )
    line = install_line(manifest)
    assert line == (
        "pip install . 'reme-lme @ git+https://x.org/r.git@" + "b" * 40 + "' reme-old==0.2.0"
        " (in a clone of the repository at aaaaaaaaaaaa)"
    )
    assert "reme-agent-cli" not in line and "file:" not in line


def test_bystanders_differ_as_notes_participants_as_differences() -> None:
    recorded = [pin("reme-lme", True), pin("reme-agent-cli", False), pin("reme-old", None)]
    current = [pin("reme-locomo", False)]
    differences, notes = diff_plugins(recorded, current)
    assert differences == [
        "plugin reme-lme: not installed (recorded 0.1.0)",
        "plugin reme-old: not installed (recorded 0.1.0)",  # recorded before: a participant
    ]
    assert notes == [
        "plugin reme-agent-cli: not installed (recorded 0.1.0, did not take part)",
        "plugin reme-locomo 0.1.0: installed, not recorded, did not take part",
    ]


def test_a_hook_that_fires_marks_its_plugin_collecting_does_not() -> None:
    plugin = ModuleType("fires")

    @HOOKIMPL
    def register_llms(register: object) -> None:
        return None

    plugin.register_llms = register_llms  # type: ignore[attr-defined]
    plugins = Plugins()
    plugins.register(plugin, name="fires")
    plugins.collect()
    assert plugins.fired_distributions() == []
    plugins.pm.hook.register_llms(register=lambda cls: None)
    assert plugins.fired_distributions() == ["fires"]


def test_reme_s_own_commits_are_a_note_a_plugin_s_a_difference() -> None:
    def at(name: str, tree: str) -> PluginPin:
        source = PluginSource(kind="path", url="file:///x", tree=tree * 12, dirty=False)
        return PluginPin(distribution=name, version="0.1.0", source=source, participated=True)

    differences, notes = diff_plugins(
        [at("reme", "a"), at("reme-lme", "c")], [at("reme", "b"), at("reme-lme", "d")]
    )
    assert differences == ["plugin reme-lme: revision cccccccccccc -> dddddddddddd"]
    assert notes == [
        "plugin reme: revision aaaaaaaaaaaa -> bbbbbbbbbbbb (reme's code; its defaults are compared apart)"
    ]
