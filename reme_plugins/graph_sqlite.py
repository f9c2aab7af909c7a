"""The default link graph: every wikilink as one row of a SQLite table in ``state_dir``.

The graph only stores. The indexer resolves ``Link.target`` before ``set_links`` and, when a note
appears or disappears, re-resolves the pending links and calls ``set_links`` again.

Writes go through one connection, one at a time. Reads (link expansion and inbound links during
search, traversal) borrow a query-only connection from a pool, so they run concurrently; WAL mode
gives each read block one committed state, never a transaction half applied.

Link expansion asks for the same notes' links again and again (a search's hits), so
``linked_paths`` keeps what it read per path in memory until the next write through this graph
replaces the whole memo (the workspace's one writer writes through it: README, "One writer per
workspace").
"""

from __future__ import annotations

import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from reme_core.api import ComponentContext, ComponentSettings, Graph, Link, ReadPool, hookimpl
from reme_plugins.sqlite_util import LockedDb, SqliteFileSettings, open_db, state_file

SCHEMA_VERSION = 1

# ord is the link's position in the list given to set_links: it keeps several links on one line
# in the order they were written. WITHOUT ROWID clusters a source's links together on disk.
SCHEMA = """
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,
    ord INTEGER NOT NULL,
    raw TEXT NOT NULL,
    target TEXT,
    anchor TEXT,
    alias TEXT,
    embed INTEGER NOT NULL,
    line INTEGER NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (source, ord)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_by_target ON links (target) WHERE target IS NOT NULL;
CREATE INDEX IF NOT EXISTS links_pending ON links (state) WHERE state != 'resolved';
"""

_COLUMNS = "source, ord, raw, target, anchor, alias, embed, line, state"

_MEMO_MAX = 8192
"""Paths whose links ``linked_paths`` keeps; past it the memo starts over (memory stays bounded)."""
_IN_BATCH = 500
"""Paths per ``IN (...)`` list (SQLite allows 999 parameters in older builds)."""

_Linked = tuple[tuple[str, ...], tuple[str, ...]]


class SqliteGraph(Graph):
    """Wikilink adjacency in ``<state_dir>/graph.sqlite3``; safe to share between threads."""

    name: ClassVar[str] = "sqlite"

    class Settings(SqliteFileSettings):
        filename: str = "graph.sqlite3"

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self._path = state_file(context, self.settings.filename, "the sqlite graph")
        self._db = LockedDb(lambda: open_db(self._path, SCHEMA, SCHEMA_VERSION))
        self._pool_lock = threading.Lock()
        self._pool: ReadPool | None = None  # opened after the writer has created the schema
        # path -> (outbound, inbound) as linked_paths answers it. A write replaces the dict after
        # its commit; a read stores into the dict it started with, so what it read before a
        # write lands in a dict no later read sees.
        self._memo: dict[str, _Linked] = {}

    def state_files(self) -> list[Path]:
        return [self._path]

    # -- the Graph contract --------------------------------------------------------------------

    def set_links(self, source: str, links: Sequence[Link]) -> None:
        """Replace the outbound links of ``source`` (one transaction)."""
        rows = []
        for ord_, link in enumerate(links):
            if link.source != source:
                raise ValueError(
                    f"link {link.raw!r} has source {link.source!r}, expected {source!r}"
                )
            rows.append(
                (
                    source,
                    ord_,
                    link.raw,
                    link.target,
                    link.anchor,
                    link.alias,
                    int(link.embed),
                    link.line,
                    link.state,
                )
            )
        try:
            with self._db.transaction() as conn:
                conn.execute("DELETE FROM links WHERE source = ?", (source,))
                conn.executemany(f"INSERT INTO links ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)", rows)
        finally:
            self._memo = {}

    def remove(self, source: str) -> None:
        """Forget ``source``'s links; links from other notes that resolved to it become missing."""
        try:
            with self._db.transaction() as conn:
                conn.execute("DELETE FROM links WHERE source = ?", (source,))
                # Keeps inbound() truthful until the indexer re-resolves these (raw text kept).
                conn.execute(
                    "UPDATE links SET target = NULL, state = 'missing' "
                    "WHERE target = ? AND state = 'resolved'",
                    (source,),
                )
        finally:
            self._memo = {}

    def outbound(self, path: str) -> list[Link]:
        """Links written in ``path``, resolved or not, in line order."""
        return self._links("WHERE source = ? ORDER BY line, ord", (path,))

    def inbound(self, path: str) -> list[Link]:
        """Resolved links from other notes pointing at ``path``, by source then line."""
        return self._links(
            "WHERE target = ? AND state = 'resolved' AND source != ? ORDER BY source, line, ord",
            (path, path),
        )

    def unresolved(self) -> list[Link]:
        """Every link whose target is missing or ambiguous, by source then line."""
        return self._links("WHERE state != 'resolved' ORDER BY source, line, ord", ())

    def linked_paths(self, paths: Sequence[str]) -> dict[str, tuple[list[str], list[str]]]:
        """``Graph.linked_paths``, paths only (no ``Link`` per row): from the memo, and the paths
        it lacks in one read (two batched queries)."""
        memo = self._memo
        wanted = list(dict.fromkeys(paths))
        found: dict[str, _Linked] = {}
        missing: list[str] = []
        for path in wanted:
            entry = memo.get(path)
            if entry is None:
                missing.append(path)
            else:
                found[path] = entry
        if missing:
            fetched = self._read_linked(missing)
            if len(memo) + len(fetched) > _MEMO_MAX:
                memo.clear()  # the dict this read started with: never a newer write's
            if len(fetched) <= _MEMO_MAX:
                memo.update(fetched)
            found.update(fetched)
        return {path: (list(found[path][0]), list(found[path][1])) for path in wanted}

    def _read_linked(self, paths: list[str]) -> dict[str, _Linked]:
        outbound: dict[str, list[str]] = {path: [] for path in paths}
        inbound: dict[str, list[str]] = {path: [] for path in paths}
        with self._read() as conn:
            for start in range(0, len(paths), _IN_BATCH):
                batch = paths[start : start + _IN_BATCH]
                marks = ",".join("?" * len(batch))
                for source, target in conn.execute(
                    f"SELECT source, target FROM links WHERE source IN ({marks}) "
                    "AND target IS NOT NULL AND target != '' ORDER BY source, line, ord",
                    batch,
                ):
                    outbound[source].append(target)
                for target, source in conn.execute(
                    f"SELECT target, source FROM links WHERE target IN ({marks}) "
                    "AND state = 'resolved' AND source != target ORDER BY target, source, line, ord",
                    batch,
                ):
                    inbound[target].append(source)
        return {path: (tuple(outbound[path]), tuple(inbound[path])) for path in paths}

    def sources(self) -> set[str]:
        """Every note with stored links."""
        with self._read() as conn:
            return {row[0] for row in conn.execute("SELECT DISTINCT source FROM links")}

    def clear(self) -> None:
        """Drop every link."""
        try:
            with self._db.transaction() as conn:
                conn.execute("DELETE FROM links")
        finally:
            self._memo = {}

    def close(self) -> None:
        """Close the database; a later call opens it again."""
        self._memo = {}
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        self._db.close()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A pooled read connection; every query in the block sees the same committed state."""
        with self._pool_lock:
            pool = self._pool
            if pool is None:
                with self._db.read():
                    pass  # the writer opens the file first: creates it, its schema, WAL mode
                pool = self._pool = ReadPool(self._path)
        with pool.read(snapshot=True) as conn:
            yield conn

    # -- beyond the contract: link expansion and traversal ---------------------------------------

    def neighbors(self, path: str, limit_each: int = 10) -> tuple[list[str], list[str]]:
        """Paths ``path`` links to (line order) and paths linking to it (sorted), each deduplicated
        and capped at ``limit_each``; only resolved links count, and never ``path`` itself."""
        if limit_each <= 0:
            return [], []
        with self._read() as conn:
            out_rows = conn.execute(
                "SELECT target FROM links WHERE source = ? AND state = 'resolved' "
                "AND target IS NOT NULL AND target != ? ORDER BY line, ord",
                (path, path),
            ).fetchall()
            in_rows = conn.execute(
                "SELECT DISTINCT source FROM links WHERE target = ? AND state = 'resolved' "
                "AND source != ? ORDER BY source LIMIT ?",
                (path, path, limit_each),
            ).fetchall()
        outbound = list(dict.fromkeys(r[0] for r in out_rows))[:limit_each]
        return outbound, [r[0] for r in in_rows]

    def traverse(self, start: str, depth: int = 1, limit: int = 100) -> dict[str, int]:
        """Breadth-first walk over resolved links in both directions, up to ``depth`` hops.

        Returns ``{path: distance}`` in visiting order, ``start`` first at distance 0, at most
        ``limit`` entries in all. Neighbours of one node are visited in sorted order, so the
        result is deterministic.
        """
        if limit <= 0:
            return {}
        seen: dict[str, int] = {start: 0}
        queue: deque[str] = deque([start])
        with self._read() as conn:
            while queue and len(seen) < limit:
                node = queue.popleft()
                dist = seen[node]
                if dist >= depth:
                    continue
                for (nxt,) in conn.execute(
                    "SELECT target FROM links WHERE source = ?1 AND state = 'resolved' "
                    "AND target IS NOT NULL "
                    "UNION SELECT source FROM links WHERE target = ?1 AND state = 'resolved' "
                    "ORDER BY 1",
                    (node,),
                ):
                    if nxt in seen:
                        continue
                    seen[nxt] = dist + 1
                    queue.append(nxt)
                    if len(seen) >= limit:
                        break
        return seen

    def stats(self) -> dict[str, Any]:
        """Numbers for ``reme status``: links, pending links, notes with links."""
        with self._read() as conn:
            links, pending, sources = conn.execute(
                "SELECT count(*), coalesce(sum(state != 'resolved'), 0), count(DISTINCT source) "
                "FROM links"
            ).fetchone()
        return {"links": links, "unresolved": pending, "sources": sources}

    def _links(self, where: str, params: tuple[Any, ...]) -> list[Link]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM links {where}", params).fetchall()
        return [_to_link(row) for row in rows]


def _to_link(row: sqlite3.Row | tuple[Any, ...]) -> Link:
    source, _ord, raw, target, anchor, alias, embed, line, state = row
    return Link(
        source=source,
        raw=raw,
        target=target,
        anchor=anchor,
        alias=alias,
        embed=bool(embed),
        line=line,
        state=state,
    )


@hookimpl
def register_graphs(register: Callable[[type[Graph]], None]) -> None:
    """Register the SQLite graph as ``sqlite``."""
    register(SqliteGraph)
