"""The conformance kit ships in reme: a plugin written in a fresh folder, outside this repository,
runs it from a new virtual environment that sees only the installed distributions."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = '''
from reme_core.api import Chunk, Chunker


class LineChunker(Chunker):
    """One chunk per non-blank line."""

    name = "lines"
    drop_last = False

    def chunk(self, path, text):
        lines = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip("\\ufeff \\t")]
        if self.drop_last:
            lines = lines[:-1]
        return [
            Chunk(path=path, ordinal=i, start_line=n, end_line=n, text=line)
            for i, (n, line) in enumerate(lines)
        ]
'''

TESTS = """
import pytest

from reme_core.testing import ChunkerConformance
from my_plugin import LineChunker


class TestLineChunker(ChunkerConformance):
    @pytest.fixture
    def chunker(self):
        chunker = LineChunker()
        chunker.drop_last = {drop_last}
        return chunker


def test_the_kit_fixtures(reme_workspace, reme_context):
    assert (reme_workspace / ".reme").is_dir() and reme_context.workspace == reme_workspace


def test_where_reme_came_from():
    import pathlib

    import reme_core

    pathlib.Path("reme_core_file.txt").write_text(reme_core.__file__)
"""


def installed_from_a_folder_in_editable_mode() -> bool:
    text = importlib.metadata.distribution("reme").read_text("direct_url.json") or "{}"
    return bool(json.loads(text).get("dir_info", {}).get("editable"))


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment whose only packages are this one's installed distributions
    (reme, pytest and their dependencies), added as a site directory: not this repository."""
    root = tmp_path_factory.mktemp("kit") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    found = subprocess.run(
        [
            str(root / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    site_packages = Path(found.stdout.strip())
    installed = sysconfig.get_path("purelib")
    (site_packages / "installed-env.pth").write_text(
        f"import site; site.addsitedir({installed!r})\n", encoding="utf-8"
    )
    return root


def run_kit(venv: Path, folder: Path, drop_last: bool) -> subprocess.CompletedProcess[str]:
    folder.mkdir()
    (folder / "my_plugin.py").write_text(PLUGIN, encoding="utf-8")
    (folder / "test_my_plugin.py").write_text(
        textwrap.dedent(TESTS.format(drop_last=drop_last)), encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = str(folder)  # the plugin under test, as an editable install would
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-p", "reme_core.testing", "-q", "-p",
         "no:cacheprovider", str(folder)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


def test_the_wheel_ships_the_kit() -> None:
    if installed_from_a_folder_in_editable_mode():
        pytest.skip("reme is installed in editable mode: its files are this repository's")
    files = {str(f) for f in importlib.metadata.files("reme") or ()}
    suites = ["chunker", "embedding", "graph", "keyword_index", "llm", "tag_index"]
    suites += ["vector_store", "agent_wrapper", "__init__"]
    assert {f"reme_core/testing/{name}.py" for name in suites} <= files


def test_a_plugin_in_a_fresh_folder_passes_the_kit(venv: Path, tmp_path: Path) -> None:
    result = run_kit(venv, tmp_path / "good", drop_last=False)
    assert result.returncode == 0, result.stdout + result.stderr
    passed = int(result.stdout.strip().splitlines()[-1].split(" passed")[0].split()[-1])
    assert passed >= 15, result.stdout  # the suite's checks ran, not only the fixture test
    # It imported the installed reme, not this checkout (which is not on its path).
    used = Path((tmp_path / "good" / "reme_core_file.txt").read_text(encoding="utf-8"))
    if not installed_from_a_folder_in_editable_mode():
        assert used.parent != REPO / "reme_core", used  # the installed copy


def test_the_kit_fails_a_chunker_that_loses_text(venv: Path, tmp_path: Path) -> None:
    result = run_kit(venv, tmp_path / "bad", drop_last=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAILED test_my_plugin.py::TestLineChunker::test_nothing_lost" in result.stdout
