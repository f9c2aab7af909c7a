"""Issue 22's rule, checked: no module of reme_core or reme_plugins over ``MAX_LINES`` lines (a
module that grows past it holds more than one job: split it by responsibility)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("reme_core", "reme_plugins")
MAX_LINES = 500


def oversized(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """The ``.py`` modules under ``root``'s ``packages`` longer than ``MAX_LINES``, as
    ``path (lines)``, longest first."""
    found = []
    for package in packages:
        for module in sorted((root / package).rglob("*.py")):
            lines = len(module.read_bytes().splitlines())
            if lines > MAX_LINES:
                found.append((lines, module.relative_to(root).as_posix()))
    return [f"{path} ({lines})" for lines, path in sorted(found, key=lambda f: (-f[0], f[1]))]


def test_no_module_over_the_limit() -> None:
    assert (REPO / "reme_core" / "__init__.py").is_file()  # the packages are where looked for
    offenders = oversized(REPO)
    assert not offenders, (
        f"modules over {MAX_LINES} lines (split them by responsibility): " + ", ".join(offenders)
    )


def test_an_offender_is_named(tmp_path: Path) -> None:
    package = tmp_path / "reme_core" / "deep"
    package.mkdir(parents=True)
    (package / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (package / "at_limit.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "reme_plugins").mkdir()
    (tmp_path / "reme_plugins" / "notes.txt").write_text("x\n" * (MAX_LINES + 1))  # not a module
    assert oversized(tmp_path) == [f"reme_core/deep/long.py ({MAX_LINES + 1})"]
