"""Requirement lines that install the same plugin set again (issue 15, part 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from click.testing import CliRunner

from reme_core.cli import cli
from reme_core.plugin_sources import PluginSource, source_of

REPO = Path(__file__).resolve().parents[2]


class FakeDist:
    def __init__(self, direct_url: dict | None):
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return None if self.direct_url is None else json.dumps(self.direct_url)


def test_an_index_install_is_pinned_by_version() -> None:
    source = source_of(FakeDist(None))
    assert source.kind == "index"
    assert source.requirement("reme-lme", "0.3.1") == "reme-lme==0.3.1"


def test_a_vcs_install_is_pinned_by_commit() -> None:
    record = {
        "url": "https://github.com/example/reme-x.git",
        "vcs_info": {"vcs": "git", "commit_id": "a" * 40, "requested_revision": "main"},
    }
    source = source_of(FakeDist(record))
    assert source.kind == "vcs" and source.revision == "a" * 40
    assert (
        source.requirement("reme-x", "1.0")
        == f"reme-x @ git+https://github.com/example/reme-x.git@{'a' * 40}"
    )


def test_a_folder_install_names_the_folder_and_its_checkout_revision() -> None:
    record = {"url": (REPO / "plugins" / "lme").as_uri(), "dir_info": {"editable": True}}
    source = source_of(FakeDist(record))
    assert source.kind == "path" and source.editable
    assert (
        source.requirement("reme-lme", "0.1.0") == f"reme-lme @ {(REPO / 'plugins/lme').as_uri()}"
    )
    if (REPO / ".git").exists():
        last = subprocess.run(
            [
                *("git", "-C", str(REPO / "plugins/lme"), "log", "-1", "--format=%H", "--", "."),
                *(":(exclude)results", ":(exclude)tests", ":(exclude)*.md"),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        # The folder's last code change (results, tests, docs aside), not the repository's HEAD.
        assert source.revision == last


def test_an_archive_and_a_broken_record() -> None:
    archive = source_of(FakeDist({"url": "https://example.org/x-1.0.tar.gz", "archive_info": {}}))
    assert archive.requirement("x", "1.0") == "x @ https://example.org/x-1.0.tar.gz"
    assert source_of(FakeDist({"no": "url"})) == PluginSource()


def test_requirements_never_print_an_unresolvable_pin_for_a_folder_install() -> None:
    result = CliRunner().invoke(cli, ["plugins", "--requirements"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("reme") for line in lines)
    for line in lines:
        name = line.split()[0].split("==")[0]
        if name in ("reme-lme", "reme-beam"):  # installed from this checkout by tox
            assert line.startswith(f"{name} @ file://"), line


@pytest.mark.slow
def test_the_requirements_install_the_same_set_into_a_fresh_venv(tmp_path: Path) -> None:
    """pip installs every printed line into a new venv (--no-deps: the set, not its whole
    dependency tree, which the index provides either way); the same versions come out."""
    printed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from reme_core.cli import main; main()",
            "plugins",
            "--json",
            "--all",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,  # not the checkout: its reme.egg-info would shadow the installed metadata
    )
    infos = json.loads(printed.stdout)
    local = [i for i in infos if i["source"]["kind"] == "path"]
    if not local:
        pytest.skip("no plugin distribution is installed from a folder here")
    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    python = target / "bin" / "python"
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("\n".join(i["requirement"] for i in local) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_REQUIRE")}
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "-r", str(requirements)],
        check=True,
        env=env,
        cwd=tmp_path,
    )
    code = "import importlib.metadata as m, json, sys; print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))"
    installed = subprocess.run(
        [str(python), "-c", code, *(i["name"] for i in local)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert json.loads(installed.stdout) == {i["name"]: i["version"] for i in local}


def test_a_commit_to_a_nested_distribution_leaves_its_parent_s_identity(tmp_path: Path) -> None:
    """reme's checkout holds its plugins; committing a plugin's code or results is not reme."""
    import subprocess

    from reme_core.plugin_sources import _checkout_state

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    (tmp_path / "core.py").write_text("x = 1\n")
    (tmp_path / "plugins" / "p").mkdir(parents=True)
    (tmp_path / "plugins" / "p" / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    before = _checkout_state(tmp_path)
    (tmp_path / "plugins" / "p" / "code.py").write_text("y = 2\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "plugin")
    assert _checkout_state(tmp_path) == before
    (tmp_path / "core.py").write_text("x = 2\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "core")
    assert _checkout_state(tmp_path)[2] != before[2]
