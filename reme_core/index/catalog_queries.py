"""What searches, links and status ask the catalog: notes, chunks and their texts, filters.

``CatalogQueries`` is the read side of ``reme_core.index.catalog.Catalog`` (a base of it). Every
query borrows a connection of its own from the read pool, so concurrent searches run in parallel
and each sees only committed transactions. Chunk texts are read back from the notes as spans
(``reme_core.index.spans``); a chunk whose note no longer holds its text is left out.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import NamedTuple

from reme_core.index import spans
from reme_core.index.catalog_schema import (
    CHUNK_COLUMNS,
    NOTE_COLUMNS,
    ChunkRow,
    note_of,
    rows_of_paths,
)
from reme_core.index.spans import NoteReader
from reme_core.index.sqlite_pool import ReadPool
from reme_core.schema import Chunk, NoteSummary
from reme_core.schema.chunk import chunk_id
from reme_core.workspace.paths import path_matches

_LABEL_MEMO_MAX = 8192
"""Notes whose labels ``labels`` keeps per generation; past it the memo starts over."""


class NoteLabel(NamedTuple):
    """What a search shows of a note beside a hit or a linked note."""

    name: str | None
    description: str | None


class HitRow(NamedTuple):
    """A chunk as a search hit shows it, with its note's name."""

    path: str
    start_line: int
    end_line: int
    heading: str
    text: str
    name: str | None


class CatalogQueries:
    """The catalog's reads (``Catalog`` sets up the pool and the note reader)."""

    _pool: ReadPool
    _read_note: NoteReader | None
    generation: int
    _label_memo: tuple[int, dict[str, NoteLabel | None]] = (-1, {})
    """``labels`` answers of one catalog generation (None: not an indexed note); a search's
    linked notes come back again and again. A newer generation replaces it."""

    def note(self, path: str) -> NoteSummary | None:
        with self._read() as db:
            row = db.execute(f"SELECT {NOTE_COLUMNS} FROM notes WHERE path = ?", (path,)).fetchone()
        return note_of(row) if row else None

    def notes(self, paths: Iterable[str]) -> dict[str, NoteSummary]:
        with self._read() as db:
            rows = rows_of_paths(db, f"SELECT {NOTE_COLUMNS} FROM notes", paths)
        return {row[0]: note_of(row) for row in rows}

    def expiring(self, paths: Iterable[str] | None = None) -> dict[str, NoteSummary]:
        """The notes (of ``paths`` only, when given) whose frontmatter names ``expires``: the
        few that search must check against today (``reme_core.search.expiry``). The partial
        index ``notes_expires`` holds just those: no note's frontmatter is parsed (that scan was
        ~6 ms of every first search at 10,000 notes). Its condition is this query's, verbatim."""
        sql = f"SELECT {NOTE_COLUMNS} FROM notes WHERE json_extract(frontmatter, '$.expires')"
        with self._read() as db:
            rows = rows_of_paths(db, sql + " IS NOT NULL", paths, joiner="AND")
        return {row[0]: note_of(row) for row in rows}

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """The chunks ``ids`` whose text their note still holds."""
        found: dict[str, Chunk] = {}
        for row, text in self._resolved(ids):
            found[chunk_id(row.path, row.ordinal)] = Chunk(
                path=row.path,
                ordinal=row.ordinal,
                start_line=row.start_line,
                end_line=row.end_line,
                heading=row.heading,
                text=text,
            )
        return found

    def hit_rows(self, ids: Sequence[str]) -> dict[str, HitRow]:
        """The chunks ``ids`` with their notes' names, in one query (a search's hits). A chunk
        whose note no longer holds its text (edited since it was indexed, or gone) is left out."""
        found: dict[str, HitRow] = {}
        resolver = spans.Resolver(self._read_note)
        for *chunk, name in self._rows_of(ids, with_name=True):
            row = ChunkRow.of(tuple(chunk))
            text = resolver.text(row.path, row.heading, row.digest, row.span, row.text)
            if text is not None:
                found[chunk_id(row.path, row.ordinal)] = HitRow(
                    row.path, row.start_line, row.end_line, row.heading, text, name
                )
        return found

    def labels(self, paths: Iterable[str]) -> dict[str, NoteLabel]:
        """Name and description of each indexed note among ``paths``."""
        # The generation is read before the rows: rows read while a write commits are kept
        # under the older generation, which the next search (seeing the newer one) replaces.
        generation = self.generation
        known, memo = self._label_memo
        if known != generation:
            memo = {}
            self._label_memo = (generation, memo)
        wanted = list(dict.fromkeys(paths))
        missing = [path for path in wanted if path not in memo]
        if missing:
            with self._read() as db:
                rows = rows_of_paths(db, "SELECT path, name, description FROM notes", missing)
            fetched: dict[str, NoteLabel | None] = dict.fromkeys(missing)
            fetched.update((path, NoteLabel(name, description)) for path, name, description in rows)
            if len(memo) + len(fetched) > _LABEL_MEMO_MAX:
                memo.clear()
            memo.update(fetched)
        else:
            fetched = {}
        found = {}
        for path in wanted:
            label = fetched[path] if path in fetched else memo.get(path)
            if label is not None:
                found[path] = label
        return found

    def chunk_texts(self, ids: Sequence[str]) -> dict[str, str]:
        """Chunk id -> the text the keyword arm indexes (``Chunk.keyword_body``), for the ids
        the catalog holds (a keyword index's text source)."""
        resolved = self._resolved(ids)
        own = self._arm_texts("keyword_text", {row.path for row, _ in resolved})
        return {
            (cid := chunk_id(row.path, row.ordinal)): own.get(cid, text) for row, text in resolved
        }

    def chunk_rows(self, paths: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
        """``(chunk_id, path, text the vector arm embeds)`` of every chunk, or of the chunks of
        ``paths``, in note order; chunks whose note no longer holds their text are left out."""
        paths = None if paths is None else list(paths)
        resolver = spans.Resolver(self._read_note)
        own = self._arm_texts("vector_text", paths)
        return [
            ((cid := chunk_id(row.path, row.ordinal)), row.path, own.get(cid, text))
            for row in self._chunk_rows(paths)
            if (text := resolver.text(row.path, row.heading, row.digest, row.span, row.text))
            is not None
        ]

    def chunk_hashes(self, paths: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
        """``(chunk_id, path, SHA-256 hex of the text the vector arm embeds)`` of every chunk,
        or of ``paths``'s: what changed, without reading a note (nor parsing spans: the vector
        pass asks this of every chunk, 57k at 10k notes, on every ``reme index``)."""
        sql = "SELECT path, ordinal, digest, vector_text FROM chunks"
        with self._read() as db:
            rows = rows_of_paths(db, sql, paths, order="ORDER BY path, ordinal")
        return [
            (chunk_id(path, ordinal), path, digest.hex() if own is None else _hex_digest(own))
            for path, ordinal, digest, own in rows
        ]

    def _arm_texts(self, column: str, paths: Iterable[str] | None) -> dict[str, str]:
        """Chunk id -> the per-arm text in ``column`` of the chunks of ``paths`` that have one."""
        sql = f"SELECT path, ordinal, {column} FROM chunks WHERE {column} IS NOT NULL"
        with self._read() as db:
            rows = rows_of_paths(db, sql, paths, joiner="AND")
        return {chunk_id(path, ordinal): text for path, ordinal, text in rows}

    def _chunk_rows(self, paths: Iterable[str] | None) -> list[ChunkRow]:
        sql = f"SELECT {CHUNK_COLUMNS} FROM chunks"
        with self._read() as db:
            rows = rows_of_paths(db, sql, paths, order="ORDER BY path, ordinal")
        return [ChunkRow.of(row) for row in rows]

    def _resolved(self, ids: Sequence[str]) -> list[tuple[ChunkRow, str]]:
        """The rows of ``ids`` the catalog holds, with their texts (those still readable)."""
        resolver = spans.Resolver(self._read_note)
        out: list[tuple[ChunkRow, str]] = []
        for row in map(ChunkRow.of, self._rows_of(ids)):
            text = resolver.text(row.path, row.heading, row.digest, row.span, row.text)
            if text is not None:
                out.append((row, text))
        return out

    def _rows_of(self, ids: Sequence[str], *, with_name: bool = False) -> list[tuple]:
        """The stored rows of the chunks ``ids`` (``CHUNK_COLUMNS``, then the note's name when
        ``with_name``): one primary-key lookup per id."""
        keys = [(path, int(ordinal)) for path, _, ordinal in (cid.rpartition("#") for cid in ids)
                if ordinal.isdigit()]  # fmt: skip
        columns = ", ".join(f"c.{c}" for c in CHUNK_COLUMNS.split(", "))
        name = ", n.name" if with_name else ""
        join = " JOIN notes n ON n.path = c.path" if with_name else ""
        rows: list[tuple] = []
        with self._read() as db:
            for start in range(0, len(keys), 400):  # two parameters each: under SQLite's 999
                batch = keys[start : start + 400]
                values = ",".join(["(?, ?)"] * len(batch))
                rows += db.execute(
                    f"WITH wanted(path, ordinal) AS (VALUES {values}) SELECT {columns}{name}"
                    " FROM wanted w JOIN chunks c ON c.path = w.path AND c.ordinal = w.ordinal"
                    f"{join}",
                    [value for key in batch for value in key],
                ).fetchall()
        return rows

    def chunk_ids(
        self,
        *,
        statuses: Sequence[str] | None = None,
        since: dt.date | None = None,
        until: dt.date | None = None,
        path_patterns: Sequence[str] = (),
        paths: set[str] | None = None,
    ) -> set[str]:
        """Ids of chunks whose note passes every filter given. A note without a date fails date filters."""
        by_path = self.chunk_ids_by_path(
            statuses=statuses, since=since, until=until, path_patterns=path_patterns, paths=paths
        )
        return set().union(*by_path.values())

    def chunk_ids_by_path(
        self,
        *,
        statuses: Sequence[str] | None = None,
        since: dt.date | None = None,
        until: dt.date | None = None,
        path_patterns: Sequence[str] = (),
        paths: set[str] | None = None,
    ) -> dict[str, list[str]]:
        """``chunk_ids`` grouped by note path (a covering index answers it: no chunk is read)."""
        clauses, params = _note_clauses(statuses, since, until)
        where = " AND ".join(clauses) or "1"
        sql = (
            "SELECT c.path || '#' || c.ordinal, c.path FROM chunks c JOIN notes n"
            f" ON n.path = c.path WHERE {where}"
        )
        with self._read() as db:
            rows = rows_of_paths(
                db,
                sql,
                None if paths is None else sorted(paths),
                column="c.path",
                joiner="AND",
                params=params,
            )
        by_path: dict[str, list[str]] = {}
        for cid, path in rows:
            by_path.setdefault(path, []).append(cid)
        if path_patterns:
            by_path = {p: ids for p, ids in by_path.items() if _matches_any(p, path_patterns)}
        return by_path

    def chunked_paths(
        self,
        *,
        statuses: Sequence[str] | None = None,
        since: dt.date | None = None,
        until: dt.date | None = None,
        path_patterns: Sequence[str] = (),
        paths: set[str] | None = None,
    ) -> set[str]:
        """The paths of the notes with at least one chunk that pass every filter given: the
        keys of ``chunk_ids_by_path`` with the same filters, from one row per note (no chunk
        id is built: at 10,000 notes that query made 57k rows, this one 10k)."""
        clauses, params = _note_clauses(statuses, since, until)
        clauses.insert(0, "EXISTS (SELECT 1 FROM chunks c WHERE c.path = n.path)")
        sql = f"SELECT n.path FROM notes n WHERE {' AND '.join(clauses)}"
        with self._read() as db:
            rows = rows_of_paths(
                db,
                sql,
                None if paths is None else sorted(paths),
                column="n.path",
                joiner="AND",
                params=params,
            )
        found = {row[0] for row in rows}
        if path_patterns:
            found = {p for p in found if _matches_any(p, path_patterns)}
        return found

    def note_count(self) -> int:
        """Indexed notes (one count of the notes table's rows)."""
        with self._read() as db:
            return db.execute("SELECT COUNT(*) FROM notes").fetchone()[0]

    def counts(self) -> dict[str, int]:
        with self._read() as db:
            notes = db.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
            chunks = db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            problems = db.execute("SELECT COUNT(*) FROM problems").fetchone()[0]
        return {"files": notes, "chunks": chunks, "problem_count": problems}

    def paths(self) -> set[str]:
        """Every indexed path."""
        with self._read() as db:
            return {row[0] for row in db.execute("SELECT path FROM notes")}

    def all_chunk_ids(self) -> set[str]:
        """Every chunk id, unfiltered (cheaper than ``chunk_ids()``: no join)."""
        with self._read() as db:
            return {row[0] for row in db.execute("SELECT path || '#' || ordinal FROM chunks")}

    def paths_with_tags(self) -> set[str]:
        """Paths whose note lists any tag (no tag list is parsed)."""
        with self._read() as db:
            return {row[0] for row in db.execute("SELECT path FROM notes WHERE tags != '[]'")}

    def tags_by_path(self, paths: Iterable[str] | None = None) -> dict[str, list[str]]:
        """The tags of every note that has any (of ``paths`` when given)."""
        sql = "SELECT path, tags FROM notes WHERE tags != '[]'"
        with self._read() as db:
            rows = rows_of_paths(db, sql, paths, joiner="AND")
        # One JSON array of every note's list: a single parse, not one per note.
        lists = json.loads("[" + ",".join(tags for _, tags in rows) + "]")
        return {path: tags for (path, _), tags in zip(rows, lists, strict=True)}

    def problems(self) -> dict[str, str]:
        """Path -> message; messages stored by older versions lose their path prefix here."""
        with self._read() as db:
            rows = db.execute("SELECT path, message FROM problems ORDER BY path").fetchall()
        return {path: problem_message(path, message) for path, message in rows}

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A read connection for this block, from the pool (opened when none is free)."""
        return self._pool.read()


def problem_message(path: str, message: str) -> str:
    """``message`` without a leading ``"<path>: "``: errors name their file, but every place that
    shows a problem already prints the path in front of it."""
    return message.removeprefix(f"{path}: ")


def _matches_any(path: str, patterns: Sequence[str]) -> bool:
    """A path matches a pattern when it equals it, lies under it as a folder, or matches it as a glob.

    Globs follow the workspace rules (``*`` stays within one folder, ``**`` crosses folders), the
    same as ``index.exclude``, so ``daily/*.md`` means the day pages, not every note under daily/.
    """
    if not patterns:
        return True
    return path_matches(path, patterns)


def _hex_digest(text: str) -> str:
    return spans.digest(text).hex()


def _note_clauses(
    statuses: Sequence[str] | None, since: dt.date | None, until: dt.date | None
) -> tuple[list[str], list[object]]:
    """The WHERE clauses (over the notes table as ``n``) and parameters of the note filters."""
    clauses: list[str] = []
    params: list[object] = []
    if statuses is not None:
        clauses.append(f"n.status IN ({','.join('?' * len(statuses))})")
        params.extend(statuses)
    if since is not None:
        clauses.append("n.date >= ?")
        params.append(since.isoformat())
    if until is not None:
        clauses.append("n.date <= ?")
        params.append(until.isoformat())
    return clauses, params
