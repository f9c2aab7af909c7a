"""Fixtures shared by the auto_memory tests: a fresh workspace and a factory that opens it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from tests.fake_llm import llm_setting, write_script


@pytest.fixture
def open_reme(root: Path, tmp_path: Path) -> Iterator[Callable[..., Reme]]:
    """Open ``root`` keyword-only in UTC; every Reme opened is closed after the test.

    ``open_reme(plugins, overrides, script, llm=...)``: ``overrides`` follow ``timezone=UTC``;
    a ``script`` (a list of answers, None for no model) is written to a file and read by the fake
    model named ``llm``.
    """
    opened: list[Reme] = []

    def open_(
        plugins: Plugins,
        overrides: Sequence[str] = (),
        script: list[Any] | None = None,
        llm: str = "recording",
    ) -> Reme:
        settings = ["timezone=UTC", *overrides]
        if script is not None:
            path = write_script(tmp_path, script, f"script{len(opened)}.json")
            settings.append(llm_setting(path, llm))
        reme = Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=settings)
        opened.append(reme)
        return reme

    yield open_
    for reme in opened:
        reme.close()
