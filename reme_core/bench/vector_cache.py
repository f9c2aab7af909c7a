"""Embeddings shared between items and runs: every workspace is fresh, its vectors need not be.

Each item's workspace starts empty, so without help every run (and every config of a comparison:
hybrid, default and search_v2 embed the very same chunks) embeds every chunk again, which on a
CPU is most of a run's time. reme's embedding cache (``.reme/embeddings.sqlite3``) keys vectors
by (model id, content hash), so vectors made in one workspace are valid in any other: before an
item opens its workspace, ``seed`` copies the shared file's vectors in; after the item,
``harvest`` adds the new ones back. Only the ``vectors`` table travels; which chunk ids a store
holds (``stored``) belongs to one workspace.

The shared file is SQLite; parallel workers wait for each other's writes (busy timeout).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reme_core.index.embedding_cache import EmbeddingCache

WORKSPACE_CACHE = Path(".reme") / "embeddings.sqlite3"
BUSY_SECONDS = 120.0


def seed(root: Path, shared: Path) -> int:
    """Copy the shared vectors into the (new) workspace at ``root``; returns how many."""
    local = root / WORKSPACE_CACHE
    local.parent.mkdir(parents=True, exist_ok=True)
    EmbeddingCache(local).close()  # the schema, as reme creates it
    if not shared.is_file():
        return 0
    return _copy(local, shared, into_shared=False)


def harvest(root: Path, shared: Path) -> int:
    """Add the workspace's vectors to the shared file; returns how many rows it holds now."""
    local = root / WORKSPACE_CACHE
    if not local.is_file():
        return 0
    shared.parent.mkdir(parents=True, exist_ok=True)
    EmbeddingCache(shared).close()
    _copy(local, shared, into_shared=True)
    with sqlite3.connect(shared, timeout=BUSY_SECONDS) as db:
        return int(db.execute("SELECT count(*) FROM vectors").fetchone()[0])


def _copy(local: Path, shared: Path, *, into_shared: bool) -> int:
    db = sqlite3.connect(local, timeout=BUSY_SECONDS, isolation_level=None)
    try:
        db.execute("ATTACH DATABASE ? AS shared", (str(shared),))
        source, target = ("main", "shared") if into_shared else ("shared", "main")
        db.execute("BEGIN IMMEDIATE")
        cursor = db.execute(
            f"INSERT OR IGNORE INTO {target}.vectors (model_id, content_hash, vector) "
            f"SELECT model_id, content_hash, vector FROM {source}.vectors"
        )
        db.execute("COMMIT")
        return cursor.rowcount
    finally:
        db.close()
