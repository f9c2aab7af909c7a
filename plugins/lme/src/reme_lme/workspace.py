"""A throwaway workspace for one question: opened on the run's settings, seeded from the shared
vector cache, its new vectors harvested back, deleted after."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reme_core.api import Reme, Settings, load_plugins
from reme_core.api import harvest_vector_cache as harvest
from reme_core.api import seed_vector_cache as seed


@contextmanager
def fresh_workspace(
    config: dict[str, Any], vector_cache: str | None, prefix: str = "reme-lme-"
) -> Iterator[Reme]:
    """``config`` is plain settings data (it crossed a process boundary); ``vector_cache`` a
    SQLite file shared by questions and runs, or None."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    settings = Settings.model_validate(config).model_copy(update={"workspace": root})
    try:
        if vector_cache:
            seed(root, Path(vector_cache))
        with Reme(settings, load_plugins()) as reme:
            yield reme
        # Only after a clean close: an item that failed leaves the shared cache as it was.
        if vector_cache:
            harvest(root, Path(vector_cache))
    finally:
        shutil.rmtree(root, ignore_errors=True)
