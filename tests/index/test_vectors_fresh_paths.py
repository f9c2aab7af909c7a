"""A first index stores each note's vectors without deleting first (the store holds none of
them); a note it does hold is still cleared before its new chunks are stored."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from conftest import FAKE_VECTORS, defaults_plus

from reme_core import hookimpl
from reme_core.runtime import Reme
from reme_plugins.vector_local import LocalFileStore


class RecordingStore(LocalFileStore):
    name: ClassVar[str] = "recording"
    deleted: ClassVar[list[str]] = []

    def delete_paths(self, paths):  # type: ignore[no-untyped-def]
        self.deleted.extend([paths] if isinstance(paths, str) else paths)
        super().delete_paths(paths)


class Extras:
    @hookimpl
    def register_file_stores(self, register):  # type: ignore[no-untyped-def]
        register(RecordingStore)


def _open(workspace: Path) -> Reme:
    return Reme.open(
        workspace,
        plugins=defaults_plus(recording=Extras()),
        env={},
        overrides=[*FAKE_VECTORS, "components.file_store.name=recording"],
    )


def _ids(reme: Reme) -> set[str]:
    assert reme.vectors is not None
    return reme.vectors.store.ids()


def test_fresh_paths_are_stored_without_a_delete_and_held_ones_are_cleared(
    workspace: Path,
) -> None:
    RecordingStore.deleted.clear()
    with _open(workspace) as reme:
        reme.index()
        first = _ids(reme)
        assert first and RecordingStore.deleted == []  # nothing held: nothing to delete
        by_path: dict[str, set[str]] = {}
        for cid in first:
            by_path.setdefault(cid.rsplit("#", 1)[0], set()).add(cid)
        target = next(p for p, ids in sorted(by_path.items()) if len(ids) >= 2)
        reme.files.write(target, "# Short now\n\nOne line only.\n")
        after = {c for c in _ids(reme) if c.rsplit("#", 1)[0] == target}
    assert target in RecordingStore.deleted  # the note it held was cleared first
    assert len(after) == 1 < len(by_path[target])  # its old chunks are gone, not left stale
    RecordingStore.deleted.clear()
    with _open(workspace) as reme:
        reme.index()  # nothing changed: nothing stored, nothing deleted
        assert RecordingStore.deleted == []
        assert {c for c in _ids(reme) if c.rsplit("#", 1)[0] == target} == after
