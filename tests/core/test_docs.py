"""Every hook is documented (a section headed by its signature) and exercised by a test."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from reme_core import hookspecs
from reme_core.hookspecs import HOOK_NAMES

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
TESTS = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py"))


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_hook_has_a_reference_section(hook: str):
    parameter = inspect.signature(getattr(hookspecs, hook)).parameters["register"]
    assert f"### `{hook}(register: " in DOCS, f"docs/plugins.md lacks a section for {hook}"
    assert parameter.name == "register"


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_hook_is_used_by_a_test_or_shipped_plugin(hook: str):
    shipped = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "reme_plugins").glob("*.py"))
    assert f"def {hook}(" in TESTS + shipped, f"no test or shipped plugin implements {hook}"


def test_hook_list_is_complete():
    assert len(HOOK_NAMES) == 11
