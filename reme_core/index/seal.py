"""The drift check's shortcut: a seal over the state files of the catalog and every projection.

The full drift check (``reme_core.index.drift``) reads every chunk id of the catalog and of each
projection: at 10k notes, 57k ids and most of a no-op ``reme index``. It can only find something
after a state file changed in a way reme's own passes did not: a process killed between two
projections (the catalog's intent log names those paths, and is read on every scan anyway), or a
file under ``.reme/`` deleted, restored from a backup or edited by hand. So when the projections
are known to agree, reme takes a seal: each state file's size, mtime, ctime and inode. A scan that
finds the intent log empty and the seal intact skips the id comparisons; any difference at all (a
file added, gone, replaced or written) runs them, and a clean check seals again.

What keeps it sound:

- Components name their state files (``Component.state_files``). When one cannot (None), there is
  no seal and every scan runs the full check.
- Opening a workspace and searching it write nothing under ``.reme/``.
- In a process the seal follows reme's own writes only when it held just before them.
- On disk (``.reme/drift-seal.json``) it is written when the workspace closes, after every
  database is closed (SQLite folds its write-ahead log into the main file then), and only when the
  files were still as sealed before closing: nothing but this process's passes wrote them since
  its last check. As git does for its index, an entry whose mtime is not older than the seal
  file's own could be written again within the same timestamp tick unseen: the seal is rewritten
  after a short wait, and dropped where the filesystem's clock is too coarse for that.

The catalog's recorded file stats (what a scan compares each file's stat with) are saved beside
the seal (``drift-seal.stamps``, marshalled and compressed, named by its digest in the seal):
while the seal holds, the catalog is unchanged, so the next process reads them from there, in a
third of the time SQLite takes. So is the embedding model whose vectors were known to match the
catalog: while the seal holds, ``reme index`` has no vector pass to run either.

Not covered: a state file changed while reme has the workspace open, during one of reme's own
passes or in the same timestamp tick as one, without changing its size. ``reme status`` always
runs the full check, and ``reme reindex`` rebuilds every projection from the notes.

This module holds the seal on disk (``take``, ``load``, ``save``, ``drop``) and, in
``SealKeeper``, the seal as one process follows it between the indexer's passes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reme_core.workspace.atomic import atomic_write

if TYPE_CHECKING:
    from reme_core.index.catalog import FileStamp

SEAL_FILE = "drift-seal.json"
STAMPS_FILE = "drift-seal.stamps"
FORMAT = 1
RACY_RETRIES = 5
RACY_WAIT_S = 0.01
"""How long to wait before sealing again when a file is as new as the seal (a Linux timestamp
tick is 1 to 10 ms)."""

Entry = tuple[str, int, int, int, int]
"""A state file: its path (relative to the state folder when inside it), size, mtime_ns,
ctime_ns and inode; size -1 for a named file that does not exist."""
Seal = tuple[Entry, ...]


def take(state_dir: Path, files: Iterable[Path]) -> Seal:
    """The seal of ``files`` now: every file beneath a named folder, and beside a SQLite
    database its write-ahead log and rollback journal (an empty log holds nothing: left out).
    Shared-memory files (``-shm``) are left out: readers write them."""
    entries: dict[str, Entry] = {}
    for named in files:
        if named.is_dir():
            for folder, _, names in os.walk(named):
                for name in names:
                    _add(entries, state_dir, Path(folder) / name, must_exist=False)
            continue
        _add(entries, state_dir, named, must_exist=True)
        for side in ("-wal", "-journal"):
            _add(entries, state_dir, Path(f"{named}{side}"), must_exist=False)
    return tuple(entries[key] for key in sorted(entries))


@dataclass(frozen=True)
class Saved:
    """What the last clean close left."""

    files: Seal
    stamps: str | None
    """The digest of the catalog's stamps saved with the seal (None: none usable)."""
    vectors: str | None
    """The embedding model whose vectors were known to match the catalog under this seal."""


def load(state_dir: Path) -> Saved | None:
    """The seal the last clean close left; None when there is none or it cannot be read."""
    try:
        data = json.loads((state_dir / SEAL_FILE).read_text("utf-8"))
        if data.get("format") != FORMAT:
            return None
        files = tuple(
            (str(path), int(size), int(mtime), int(ctime), int(inode))
            for path, size, mtime, ctime, inode in data["files"]
        )
        stamps = data.get("stamps") if data.get("marshal") == marshal.version else None
        vectors = data.get("vectors")
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return Saved(files, str(stamps) if stamps else None, str(vectors) if vectors else None)


def load_stamps(state_dir: Path, digest: str) -> dict[str, Any] | None:
    """The stamps saved with the seal, when the file is the one the seal names (else None)."""
    try:
        data = (state_dir / STAMPS_FILE).read_bytes()
        if _digest(data) != digest:
            return None
        stamps = marshal.loads(zlib.decompress(data))
    except (OSError, ValueError, EOFError, TypeError, zlib.error):
        return None
    return stamps if isinstance(stamps, dict) else None


def save(
    state_dir: Path,
    seal: Seal,
    stamps: Mapping[str, Any] | None = None,
    vectors: str | None = None,
    *,
    kept_stamps: str | None = None,
) -> bool:
    """Write ``seal``, with ``stamps`` (plain values only) and ``vectors`` (see ``Saved``),
    where the next process finds them, once no entry is as new as the seal file itself; False
    (and no seal on disk) when that does not happen within a few ticks. ``kept_stamps``: the
    digest of the stamps file already there, named again instead of writing ``stamps``."""
    record: dict[str, Any] = {"format": FORMAT, "files": [list(e) for e in seal]}
    if vectors is not None:
        record["vectors"] = vectors
    if stamps is not None:
        # Compressed: a quarter of the size (0.24 MB at 10k notes) for 3 ms when read.
        data = zlib.compress(marshal.dumps(dict(stamps)), 1)
        atomic_write(state_dir / STAMPS_FILE, data)  # first: the seal names what is there
        kept_stamps = _digest(data)
    if kept_stamps is not None:
        record.update(stamps=kept_stamps, marshal=marshal.version)
    path = state_dir / SEAL_FILE
    payload = json.dumps(record).encode()
    newest = max((mtime for _, size, mtime, _, _ in seal if size >= 0), default=0)
    for attempt in range(RACY_RETRIES):
        if attempt:
            time.sleep(RACY_WAIT_S)
        atomic_write(path, payload)
        if path.stat().st_mtime_ns > newest:
            return True
    drop(state_dir)
    return False


def drop(state_dir: Path) -> None:
    """Remove the seal on disk: the next process runs the full check."""
    for name in (SEAL_FILE, STAMPS_FILE):
        with contextlib.suppress(FileNotFoundError):
            (state_dir / name).unlink()


@dataclass(frozen=True)
class SealAtClose:
    """What ``SealKeeper.before_close`` found, for ``after_close``."""

    held: bool
    stamps: dict[str, FileStamp] | None = None
    """The catalog's stamps to save with a new seal; None: keep the seal on disk as it is."""
    vectors: str | None = None
    """The model whose vectors are settled (``Indexer.vectors_settled``), saved with the seal."""


class SealKeeper:
    """The seal as the indexer follows it in one process, with what is known only while it holds.

    The indexer's writers call it (under ``Indexer.writers``); ``state_files`` names every file
    the drift check reads (None when a projection cannot name its own: then there is no seal).
    """

    def __init__(self, state_dir: Path, state_files: Callable[[], list[Path] | None]):
        self.state_dir = state_dir
        self._state_files = state_files
        on_disk = load(state_dir)
        self._sealed_on_disk = on_disk.files if on_disk else None
        self._seal = self._sealed_on_disk
        """The state files as they were when the projections last agreed (None: not known); a
        scan that finds them so skips comparing ids."""
        # What is known only while the seal has held throughout; ``unsettle`` forgets it when a
        # writer finds the seal broken, and before the catalog changes.
        self._stamps: dict[str, FileStamp] | None = None
        """The catalog's file stamps as a scan that changed nothing read them."""
        self._disk_stamps = on_disk.stamps if on_disk else None
        """The digest of the stamps saved with the seal on disk."""
        self._disk_stamps_current = self._disk_stamps is not None
        """Whether those stamps still describe the catalog (read at the first sealed scan)."""
        self._settled_on_disk = on_disk.vectors if on_disk else None
        self._vectors_settled = self._settled_on_disk
        """The embedding model whose vectors the last vector pass under the seal found matching
        the catalog (None: not known): while the seal holds, there is no vector pass to run."""

    def holds(self) -> bool:
        """Whether the state files are as they were when the projections last agreed."""
        return self._seal is not None and self._current() == self._seal

    @contextmanager
    def write(self) -> Iterator[bool]:
        """Around a writer: the seal follows reme's own writes when it held just before them,
        which is what this yields. A write that fails half-way leaves nothing sealed; one that
        began unsealed leaves sealing to the pass (a clean check, a rebuild: ``seal``)."""
        held = self.holds()
        self._seal = None
        if not held:  # something else changed the state: nothing known under the seal holds
            self.unsettle()
        yield held
        if held:
            self._seal = self._current()

    def seal(self) -> None:
        """Seal the state files as they are now: the projections are known to agree."""
        self._seal = self._current()

    def stamps(self) -> dict[str, FileStamp] | None:
        """The catalog's file stamps without reading the catalog: as the last scan that changed
        nothing read them, or as saved with the seal on disk (read once). Call while the seal
        holds."""
        if self._stamps is None and self._disk_stamps_current and self._disk_stamps:
            self._stamps = load_stamps(self.state_dir, self._disk_stamps)
            self._disk_stamps_current = self._stamps is not None
        return self._stamps

    def keep_stamps(self, stamps: dict[str, FileStamp]) -> None:
        """Remember ``stamps``: what the catalog holds after a scan that changed nothing."""
        self._stamps = stamps

    def unsettle(self) -> None:
        """Forget what is known only while the seal has held: before the catalog changes (the
        stamps kept or saved no longer describe it, and the vectors may not match it any more,
        or a model may fail to embed the change), and when a writer finds the seal broken."""
        self._stamps = None
        self._disk_stamps_current = False
        self._vectors_settled = None

    def vectors_settled(self, model_id: str) -> bool:
        """Whether the last vector pass under the seal found the vectors of ``model_id``
        matching the catalog, and the seal still holds."""
        return self._vectors_settled == model_id and self.holds()

    def settle_vectors(self, model_id: str | None) -> None:
        """Remember that the vectors of ``model_id`` match the catalog (while the seal holds)."""
        self._vectors_settled = model_id

    def before_close(
        self, catalog_stamps: Callable[[], dict[str, FileStamp]], busy: bool = False
    ) -> SealAtClose:
        """Before any state file closes: whether the seal still holds (not while something
        ``busy`` writes outside the indexer's passes), and the catalog's stamps to save with it
        (``catalog_stamps`` reads them) unless the ones on disk still describe the catalog."""
        current = None if busy else self._current()
        if current is None or current != self._seal:
            return SealAtClose(held=False)
        stamps = None
        if not self._disk_stamps_current:
            stamps = self._stamps or catalog_stamps()
        return SealAtClose(held=True, stamps=stamps, vectors=self._vectors_settled)

    def after_close(self, closing: SealAtClose) -> None:
        """Once every state file is closed: leave the seal for the next process when it held
        before closing (taken now: closing may write, as zvec rewrites its index file), else
        remove the one on disk. Nothing is written when nothing changed."""
        files = self._state_files() if closing.held else None
        if files is None:
            drop(self.state_dir)
            return
        taken = take(self.state_dir, files)
        if (
            closing.stamps is None
            and taken == self._sealed_on_disk
            and closing.vectors == self._settled_on_disk
        ):
            return
        kept = self._disk_stamps if closing.stamps is None else None
        save(self.state_dir, taken, closing.stamps, closing.vectors, kept_stamps=kept)

    def _current(self) -> Seal | None:
        files = self._state_files()
        return None if files is None else take(self.state_dir, files)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _add(entries: dict[str, Entry], state_dir: Path, file: Path, *, must_exist: bool) -> None:
    name = file.name
    if name.endswith("-shm") or name in (SEAL_FILE, STAMPS_FILE):
        return
    try:
        key = file.relative_to(state_dir).as_posix()
    except ValueError:
        key = str(file)
    try:
        st = file.stat()
    except OSError:
        if must_exist:
            entries[key] = (key, -1, 0, 0, 0)
        return
    if st.st_size == 0 and name.endswith("-wal"):
        return
    entries[key] = (key, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
