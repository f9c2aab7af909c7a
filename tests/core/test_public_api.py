"""``reme_core.api`` is the declared surface: every name in it imports, importing it stays cheap,
and the code that plays the part of a plugin or an embedder (the shipped plugins, the examples,
the integrations, the tutorial plugin) reaches reme only through it and ``reme_core.testing``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from reme_core import api

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = (
    "reme_plugins",
    "examples",
    "integrations",
    "tests/plugin_example",
    "plugins/lme/src",
    "plugins/beam/src",
    "plugins/locomo/src",
)
"""Folders whose code must import reme as a third-party plugin would."""


def _allowed(module: str) -> bool:
    return module in ("reme_core", "reme_core.api", "reme_core.testing") or module.startswith(
        "reme_core.testing."
    )


def _client_files() -> list[Path]:
    files = []
    for folder in CLIENTS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            # Build output and installed metadata are copies, not the source.
            if not {"build", "__pycache__"} & set(path.parts) and ".egg-info" not in str(path):
                files.append(path)
    return files


def _internal_imports(path: Path) -> list[str]:
    """``line: module`` for each import of a reme_core module other than the allowed ones."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            if module.split(".")[0] == "reme_core" and not _allowed(module):
                found.append(f"{node.lineno}: {module}")
    return found


def test_every_public_name_imports():
    missing = [name for name in api.__all__ if getattr(api, name, None) is None]
    assert not missing, f"reme_core.api.__all__ names what it cannot import: {missing}"


def test_every_public_name_is_documented():
    docs = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = docs.split("## The stable API: reme_core.api\n", 1)[1].split("\n## ", 1)[0]
    undocumented = [name for name in api.__all__ if f"`{name}`" not in section]
    assert not undocumented, f"docs/plugins.md's stable API section lacks {undocumented}"


def test_star_import_gives_the_whole_surface():
    namespace: dict[str, object] = {}
    exec("from reme_core.api import *", namespace)
    assert set(api.__all__) <= set(namespace)


def test_all_lists_each_export_once():
    assert len(api.__all__) == len(set(api.__all__))
    assert set(api.__all__) == {*api._EXPORTS, "catch_up"}


def test_type_checking_imports_match_the_table():
    # Type checkers read the TYPE_CHECKING imports, the runtime reads _EXPORTS: the two must agree.
    tree = ast.parse((ROOT / "reme_core" / "api.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If))
    static = {
        alias.asname or alias.name: (node.module, alias.name)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert static == api._EXPORTS


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nonesuch'"):
        api.Nonesuch  # noqa: B018
    with pytest.raises(ImportError):
        exec("from reme_core.api import Nonesuch", {})


def test_importing_the_api_loads_no_subsystem():
    # A plugin that needs only hookimpl must not pay for the runtime, the server or the benchmarks.
    code = (
        "import sys, reme_core.api\n"
        "heavy = sorted(m for m in sys.modules if m.startswith('reme_core.') and m != 'reme_core.api')\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_clients_import_reme_only_through_the_api():
    offenders = {}
    for path in _client_files():
        if found := _internal_imports(path):
            offenders[path.relative_to(ROOT).as_posix()] = found
    assert not offenders, (
        "import reme_core only through reme_core.api (or reme_core.testing); add what is "
        f"missing to reme_core.api and docs/plugins.md: {offenders}"
    )


def test_the_walk_sees_the_clients():
    # A walk that found nothing would pass the checks above without checking anything.
    files = {p.relative_to(ROOT).as_posix() for p in _client_files()}
    assert "reme_plugins/agent_toolloop.py" in files
    assert "tests/plugin_example/reme_plugin_example/__init__.py" in files
    assert "plugins/lme/src/reme_lme/runner.py" in files
    assert "reme_plugins/keyword_bm25s/index.py" in files
    assert _internal_imports(ROOT / "reme_core" / "cli" / "run_cmd.py"), "the checker finds none"
