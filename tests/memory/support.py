"""Helpers for the memory tests: a fresh workspace, a steady clock, a model script."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from reme_core.runtime import Reme
from reme_core.workspace.layout import init_workspace
from tests.fake_llm import RecordingLlm, llm_setting, plugins_with, write_script

START = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)
_OFFERED = re.compile(r'<memory id="([^"]+)">(.*?)</memory>', re.DOTALL)


class ReadsIds(RecordingLlm):
    """Replays its script like ``recording``, as a model that read the prompt would: a
    ``"@text"`` value becomes the id of the offered record whose block contains ``text``."""

    name: ClassVar[str] = "reads_ids"

    def respond(self, kind: str, messages: list[dict[str, str]]) -> Any:
        offered = _OFFERED.findall(messages[-1]["content"])

        def resolve(value: Any) -> Any:
            if isinstance(value, str) and value.startswith("@"):
                return next(ident for ident, block in offered if value[1:] in block)
            if isinstance(value, dict):
                return {k: resolve(v) for k, v in value.items()}
            if isinstance(value, list):
                return [resolve(v) for v in value]
            return value

        return resolve(json.loads(json.dumps(super().respond(kind, messages))))


def open_workspace(root: Path, *overrides: str) -> Reme:
    """A new, empty workspace with the standard folders (keyword search only)."""
    init_workspace(root)
    plugins = plugins_with(RecordingLlm, ReadsIds)
    return Reme.open(root, overrides=list(overrides), plugins=plugins)


def scripted(folder: Path, answers: Sequence[Any], llm: str = "scripted") -> str:
    """The override that configures the ``scripted`` (or ``recording``) model on ``answers``."""
    return llm_setting(write_script(folder, answers), llm=llm)


def ticking(start: dt.datetime = START) -> Callable[[], dt.datetime]:
    """A clock a minute later on every call, so record times are distinct and predictable."""
    minutes = itertools.count()
    return lambda: start + dt.timedelta(minutes=next(minutes))


def files_under(root: Path, folder: str = "digest") -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / folder).rglob("*.md"))
