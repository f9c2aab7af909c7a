"""`reme integrate` finds the hosts' files in a checkout's integrations/ folder, or where
REME_INTEGRATIONS_DIR says (a wheel install has none beside its packages)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reme_core.errors import RemeError
from reme_core.integrate import claude_code, folder


def test_the_folder_is_the_variable_s_when_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(folder.ENV, str(tmp_path))
    assert folder.integrations_dir() == tmp_path.resolve()
    monkeypatch.setenv(folder.ENV, "  ")
    assert folder.integrations_dir() == Path(folder.__file__).resolve().parents[2] / "integrations"


def test_a_missing_hook_names_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(claude_code, "HOOK_SCRIPT", tmp_path / "nowhere.py")
    with pytest.raises(RemeError, match="REME_INTEGRATIONS_DIR"):
        claude_code.hook_command()


def test_the_tests_point_at_this_checkout() -> None:
    # tests/conftest.py sets it, so a wheel install (tox) integrates from this checkout.
    assert (folder.INTEGRATIONS_DIR / "claude_code" / "hooks" / "reme_stop_hook.py").is_file()
    assert (folder.INTEGRATIONS_DIR / "codex" / "reme_codex_notify.py").is_file()
