"""The layers hold: ``lint-imports`` checks the import contracts in pyproject.toml
(``[tool.importlinter]``: the core never imports the shipped plugins, no import cycles inside
reme_core, the layers from the entry points down) and this test fails on any broken one, so
``tox -e py`` (CI) checks them as ``tox -e lint`` does."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _lint_imports() -> str:
    """The ``lint-imports`` installed beside this interpreter (the test extra pins it)."""
    found = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports"
    )
    assert found, "lint-imports is not installed: pip install -e '.[test]' (import-linter)"
    return found


def test_import_contracts_are_kept() -> None:
    # --no-cache: nothing written into the checkout.
    done = subprocess.run(
        [_lint_imports(), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"broken import contracts:\n{done.stdout}\n{done.stderr}"
    assert "0 broken" in done.stdout, done.stdout
