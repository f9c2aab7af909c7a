"""The catalog's SQLite tables, their migrations, and the SQL helpers its reads and writes share.

``create_tables`` brings a database of any earlier version to ``SCHEMA_VERSION``; ``ChunkRow`` and
``note_of`` decode the rows. Used by ``reme_core.index.catalog`` and its queries only.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from reme_core.index import spans
from reme_core.schema import NoteSummary

SCHEMA_VERSION = 3
"""2: the file's stat (mtime, ctime, inode) beside its content hash; 3: chunk texts as spans of
their note (``spans``), chunks keyed by (path, ordinal)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes (
    path TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    name TEXT,
    description TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    date TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    frontmatter TEXT NOT NULL DEFAULT '{}',
    mtime_ns INTEGER,
    ctime_ns INTEGER,
    inode INTEGER
);
CREATE INDEX IF NOT EXISTS notes_status ON notes(status);
CREATE INDEX IF NOT EXISTS notes_date ON notes(date);
CREATE INDEX IF NOT EXISTS notes_expires ON notes(json_extract(frontmatter, '$.expires'))
    WHERE json_extract(frontmatter, '$.expires') IS NOT NULL;
CREATE TABLE IF NOT EXISTS problems (path TEXT PRIMARY KEY, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS unsettled (path TEXT PRIMARY KEY);
"""
# A chunk's id is "<path>#<ordinal>": the key says it, no id column or second index repeats it.
# Its text is a span of the note (reme_core.index.spans), stored whole only when it is not one.
CHUNKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    path TEXT NOT NULL REFERENCES notes(path) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    digest BLOB NOT NULL,
    span_start INTEGER,
    span_end INTEGER,
    prefixed INTEGER NOT NULL DEFAULT 0,
    text TEXT,
    keyword_text TEXT,
    vector_text TEXT,
    PRIMARY KEY (path, ordinal)
) WITHOUT ROWID;
"""
CHUNK_COLUMNS = (
    "path, ordinal, start_line, end_line, heading, digest, span_start, span_end, prefixed, text"
)
ARM_COLUMNS = ("keyword_text", "vector_text")
"""Per-arm index texts, stored whole and only where a chunker gave one (NULL: the chunk's text);
added to a catalog of an earlier version of schema 3 on open."""
REBUILDING = "rebuilding"
"""Meta key present while a rebuild is applied: one that never finished is done again."""
NOTE_COLUMNS = "path, content_hash, size, name, description, status, date, tags, frontmatter"
STAT_COLUMNS = ("mtime_ns", "ctime_ns", "inode")


class ChunkRow(NamedTuple):
    """A chunk as the catalog stores it (``CHUNK_COLUMNS``), its span decoded."""

    path: str
    ordinal: int
    start_line: int
    end_line: int
    heading: str
    digest: bytes
    span: spans.Span | None
    text: str | None

    @classmethod
    def of(cls, row: tuple) -> ChunkRow:
        path, ordinal, start_line, end_line, heading, digest, start, end, prefixed, text = row
        span = spans.span_of(start, end, prefixed)
        return cls(path, ordinal, start_line, end_line, heading, digest, span, text)


IN_BATCH = 500
"""Paths bound per ``IN (...)``: SQLite's default limit on bound parameters is 999."""


def rows_of_paths(
    db: sqlite3.Connection,
    sql: str,
    paths: Iterable[str] | None,
    *,
    column: str = "path",
    joiner: str = "WHERE",
    order: str = "",
    params: Sequence[object] = (),
) -> list[tuple]:
    """The rows of ``sql``: all of them when ``paths`` is None, else those whose ``column`` is
    one of ``paths`` (``joiner`` adds the condition: ``WHERE``, or ``AND`` after a WHERE), in
    batches of ``IN_BATCH``; ``order`` (an ``ORDER BY``) applies within each batch."""
    tail = f" {order}" if order else ""
    if paths is None:
        return db.execute(sql + tail, params).fetchall()
    wanted = list(dict.fromkeys(paths))
    rows: list[tuple] = []
    for start in range(0, len(wanted), IN_BATCH):
        batch = wanted[start : start + IN_BATCH]
        marks = ",".join("?" * len(batch))
        query = f"{sql} {joiner} {column} IN ({marks}){tail}"
        rows += db.execute(query, [*params, *batch]).fetchall()
    return rows


class Transaction:
    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self._db.execute("ROLLBACK" if exc_type else "COMMIT")


def note_of(row: tuple) -> NoteSummary:
    path, content_hash, size, name, description, status, date, tags, frontmatter = row
    return NoteSummary(
        path=path,
        content_hash=content_hash,
        size=size,
        name=name,
        description=description,
        status=status,
        date=dt.date.fromisoformat(date) if date else None,
        tags=json.loads(tags),
        frontmatter=json.loads(frontmatter),
    )


def create_tables(db: sqlite3.Connection) -> bool:
    """Create the tables, or bring those of an earlier version up to ``SCHEMA_VERSION``; True
    when a schema-2 chunks table was moved (``migrate_chunks``: worth a line in the log)."""
    db.executescript(SCHEMA)
    migrated = migrate_chunks(db)
    db.executescript(CHUNKS_SCHEMA)
    chunk_columns = {row[1] for row in db.execute("PRAGMA table_info(chunks)")}
    for column in ARM_COLUMNS:  # chunks indexed before per-arm texts: each arm reads the text
        if column not in chunk_columns:
            db.execute(f"ALTER TABLE chunks ADD COLUMN {column} TEXT")
    columns = {row[1] for row in db.execute("PRAGMA table_info(notes)")}
    for column in STAT_COLUMNS:  # a version 1 catalog: stats are recorded from now on
        if column not in columns:
            db.execute(f"ALTER TABLE notes ADD COLUMN {column} INTEGER")
    # Written only when it changes: opening a workspace writes nothing (the drift seal).
    found = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if found is None or found[0] != str(SCHEMA_VERSION):
        db.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
    return migrated


def migrate_chunks(db: sqlite3.Connection) -> bool:
    """Move a schema-2 chunks table (an id column, texts always stored) to the current one.

    Texts are kept whole, so nothing has to be read and every search answers as before; each
    note's chunks become spans when it is indexed again (``reme reindex`` does them all).
    """
    columns = {row[1] for row in db.execute("PRAGMA table_info(chunks)")}
    if "id" not in columns:
        return False
    db.execute("BEGIN")
    try:
        db.execute("ALTER TABLE chunks RENAME TO chunks_v2")
        db.execute("DROP INDEX IF EXISTS chunks_path_id")
        db.execute("DROP INDEX IF EXISTS chunks_path")
        db.execute(CHUNKS_SCHEMA)
        rows = db.execute(
            "SELECT path, ordinal, start_line, end_line, heading, text FROM chunks_v2"
        ).fetchall()
        db.executemany(
            f"INSERT OR REPLACE INTO chunks({CHUNK_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, 0, ?)",
            [(p, o, s, e, h, spans.digest(t), t) for p, o, s, e, h, t in rows],
        )
        db.execute("DROP TABLE chunks_v2")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return True
