"""What an agent changed among some workspace notes, and putting it back.

Agentic modes let an agent edit notes with its file tools, then treat what it wrote as a proposal
for the ordinary, verified write path: the notes are taken before the run, compared after it,
and every change is put back (through ``FileTools``, so the journal records it and a hand edit
made meanwhile is a conflict, not an overwrite) before the verified version is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reme_core.workspace.hashing import content_hash
from reme_core.workspace.tools import FileTools


@dataclass(frozen=True)
class NoteSnapshot:
    """The text of every Markdown note under ``paths`` (files or folders) at one moment."""

    root: Path
    paths: tuple[str, ...]
    texts: dict[str, str]

    @classmethod
    def take(cls, root: Path, paths: list[str]) -> NoteSnapshot:
        texts: dict[str, str] = {}
        for prefix in paths:
            base = root / prefix
            if base.is_file():
                found = [base]
            else:
                found = sorted(base.rglob("*.md")) if base.is_dir() else []
            for path in found:
                try:
                    texts[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue  # not a note the agent can have edited as text
        return cls(root, tuple(paths), texts)

    def changes(self) -> dict[str, str | None]:
        """Path -> its text now (None: deleted), for every note that differs from the snapshot."""
        now = NoteSnapshot.take(self.root, list(self.paths)).texts
        return {
            path: now.get(path)
            for path in sorted(self.texts.keys() | now.keys())
            if self.texts.get(path) != now.get(path)
        }

    def put_back(self, files: FileTools, changes: dict[str, str | None]) -> None:
        """Undo ``changes`` (from ``changes()``): each note as it was, new ones deleted."""
        for path, now in changes.items():
            if path in self.texts:
                expected = content_hash(now) if now is not None else None
                files.write(path, self.texts[path], expected_hash=expected, create_only=now is None)
            elif now is not None:
                files.delete(path, expected_hash=content_hash(now))
