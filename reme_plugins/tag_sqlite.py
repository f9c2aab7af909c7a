"""The default tag index: one row per (note, tag) in a SQLite table in ``state_dir``.

Tags are stored normalised: surrounding whitespace, a leading ``#`` and stray ``/`` at either end
are dropped, and the rest is case-folded, so ``#Project/ReMe`` is stored as ``project/reme``. The
notes keep the spelling the user wrote; this index is only for lookups.

Nested tags: asking for ``project`` also matches ``project/reme`` and ``project/reme/v2`` (as in
Obsidian), but not ``projects``. Counts from ``tags()`` are per stored tag; a parent is not
counted for its children.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from reme_core.api import ComponentContext, ComponentSettings, TagIndex, hookimpl

# Defined in the core (the drift check needs it too); importing it from here keeps working.
from reme_core.api import normalise_tag as normalise_tag
from reme_plugins.sqlite_util import LockedDb, SqliteFileSettings, open_db, state_file

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS tags (
    path TEXT NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (path, tag)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tags_by_tag ON tags (tag, path);
"""


class SqliteTagIndex(TagIndex):
    """Tags per note in ``<state_dir>/tags.sqlite3``; safe to share between threads."""

    name: ClassVar[str] = "sqlite"

    class Settings(SqliteFileSettings):
        filename: str = "tags.sqlite3"

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self._path = state_file(context, self.settings.filename, "the sqlite tag index")
        self._db = LockedDb(lambda: open_db(self._path, SCHEMA, SCHEMA_VERSION))

    def state_files(self) -> list[Path]:
        return [self._path]

    def set_tags(self, path: str, tags: Iterable[str]) -> None:
        """Replace the tags of ``path``; blanks and case-insensitive duplicates are dropped."""
        if isinstance(tags, str):  # `tags: project` in frontmatter is one tag, not seven letters
            tags = [tags]
        normalised = dict.fromkeys(t for t in map(normalise_tag, tags) if t)
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM tags WHERE path = ?", (path,))
            conn.executemany(
                "INSERT INTO tags (path, tag) VALUES (?, ?)", [(path, t) for t in normalised]
            )

    def remove(self, path: str) -> None:
        """Forget ``path``."""
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM tags WHERE path = ?", (path,))

    def paths(self, tags: Sequence[str], mode: Literal["any", "all"] = "any") -> set[str]:
        """Paths carrying any (or all) of ``tags``, a tag matching its nested tags too.

        An empty list matches nothing in either mode (callers skip an empty filter); so does a
        blank tag.
        """
        if mode not in ("any", "all"):
            raise ValueError(f"tag mode must be 'any' or 'all', got {mode!r}")
        if isinstance(tags, str):
            tags = [tags]
        wanted = list(dict.fromkeys(normalise_tag(t) for t in tags))
        if not wanted:
            return set()
        result: set[str] | None = None
        with self._db.read() as conn:
            for tag in wanted:
                if not tag:
                    found: set[str] = set()
                else:
                    # "tag/" <= t < "tag0" is exactly the strings under "tag/" ('0' follows '/'),
                    # a range the index answers, with no LIKE wildcards to escape.
                    found = {
                        row[0]
                        for row in conn.execute(
                            "SELECT path FROM tags WHERE tag = ? OR (tag >= ? AND tag < ?)",
                            (tag, tag + "/", tag + "0"),
                        )
                    }
                if result is None:
                    result = found
                elif mode == "any":
                    result |= found
                else:
                    result &= found
                if mode == "all" and not result:
                    break
        return result or set()

    def tags(self, path: str | None = None) -> dict[str, int]:
        """Notes per tag over the workspace, or the tags of ``path`` (count 1 each), by tag."""
        with self._db.read() as conn:
            if path is None:
                rows = conn.execute(
                    "SELECT tag, count(*) FROM tags GROUP BY tag ORDER BY tag"
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT tag, 1 FROM tags WHERE path = ? ORDER BY tag", (path,)
                ).fetchall()
        return dict(rows)

    def tagged_paths(self) -> set[str]:
        """Every path with at least one tag."""
        with self._db.read() as conn:
            return {row[0] for row in conn.execute("SELECT DISTINCT path FROM tags")}

    def clear(self) -> None:
        """Drop every tag."""
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM tags")

    def close(self) -> None:
        """Close the database; a later call opens it again."""
        self._db.close()

    def stats(self) -> dict[str, Any]:
        """Numbers for ``reme status``: distinct tags and tagged notes."""
        with self._db.read() as conn:
            tags, notes = conn.execute(
                "SELECT count(DISTINCT tag), count(DISTINCT path) FROM tags"
            ).fetchone()
        return {"tags": tags, "tagged_notes": notes}


@hookimpl
def register_tag_indexes(register: Callable[[type[TagIndex]], None]) -> None:
    """Register the SQLite tag index as ``sqlite``."""
    register(SqliteTagIndex)
