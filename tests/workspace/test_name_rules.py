"""Names a tool may not make (issue 20, defects 3-5): control, bidi and zero-width characters,
text that is not valid Unicode, and names too long for the OS, all refused with a clear error
before anything is written; names up to the OS limit are written."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.errors import InvalidPathError
from reme_core.runtime import Reme
from reme_core.workspace import init_workspace

BAD_NAMES = {
    "newline": "digest/wiki/new\nline.md",
    "tab": "digest/wiki/tab\there.md",
    "right-to-left override": "digest/wiki/invoice\u202egpj.md",
    "zero-width space": "digest/wiki/zero\u200bwidth.md",
    "delete char": "digest/wiki/del\x7f.md",
    "lone surrogate": "digest/wiki/\udcff.md",
    "over NAME_MAX": "digest/wiki/" + "a" * 253 + ".md",
}


@pytest.fixture(scope="module")
def reme(tmp_path_factory: pytest.TempPathFactory, monkeypatch_module: None) -> Reme:
    root = tmp_path_factory.mktemp("names") / "w"
    init_workspace(root)
    with Reme.open(root) as opened:
        yield opened


@pytest.fixture(scope="module")
def monkeypatch_module() -> None:
    with pytest.MonkeyPatch.context() as patch:
        for key, value in KEYWORD_ONLY_ENV.items():
            patch.setenv(key, value)
        yield


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".reme" not in p.parts)


@pytest.mark.parametrize("name", BAD_NAMES.values(), ids=BAD_NAMES.keys())
def test_a_bad_name_is_refused_before_any_write(reme: Reme, name: str) -> None:
    before = _files(reme.root)
    with pytest.raises(InvalidPathError) as refused:
        reme.files.write(name, "# x\n")
    assert refused.value.http_status == 422
    with pytest.raises(InvalidPathError):
        reme.files.move("digest/wiki/none.md", name)
    assert _files(reme.root) == before


@pytest.mark.parametrize(
    "stem", ["b" * 252, "\u8a18" * 84], ids=["252 ASCII bytes", "84 CJK characters"]
)
def test_names_up_to_the_limit_are_written_and_moved(reme: Reme, stem: str) -> None:
    # The atomic write's temp name once added 14 bytes past NAME_MAX for these.
    name = f"digest/wiki/{stem}.md"
    assert len(Path(name).name.encode()) == 255
    reme.files.write(name, "# long\n")
    assert reme.files.read(name).content.startswith("# long")
    reme.files.move(name, f"digest/personal/{stem}.md")
    assert (reme.root / "digest" / "personal" / f"{stem}.md").is_file()
