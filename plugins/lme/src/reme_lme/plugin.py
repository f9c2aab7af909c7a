"""The ``reme`` entry point of reme-lme: two steps and the ``reme bench lme`` commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reme_core import hookimpl
from reme_lme.auto_memory_lme import LmeAutoMemoryStep
from reme_lme.search_v2 import SearchV2Step


@hookimpl
def register_steps(register: Callable[[type[Any]], None]) -> None:
    """``search_v2`` (session-aware results) and ``auto_memory_lme``."""
    register(SearchV2Step)
    register(LmeAutoMemoryStep)


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    """``reme bench lme run|compare|configs``."""
    from reme_lme.cli import lme_group  # click commands load only when the CLI asks

    register(lme_group, group="bench")
