"""The ``reme`` entry point of reme-locomo: the ``reme bench locomo`` commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reme_core import hookimpl


@hookimpl
def register_commands(register: Callable[..., Any]) -> None:
    """``reme bench locomo run|compare|configs``."""
    from reme_locomo.cli import locomo_group  # click commands load only when the CLI asks

    register(locomo_group, group="bench")
