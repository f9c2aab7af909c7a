"""Drift: where the projections (keyword index, vectors, tags, graph) and the catalog disagree with
each other or with the files on disk.

The projections live in separate files and become durable one after another, so a process killed
between two of them (or a state file edited or restored by hand) leaves them disagreeing, and a
content-hash scan alone never notices: the catalog says the file is unchanged. The check compares
sets of ids (chunk ids, paths), never contents, so it stays cheap at 10k notes; ``reme status``
reports it and ``reme index`` repairs it (``Indexer.scan``). A pass that was interrupted is also
known precisely, from the catalog's intent log (``Catalog.begin_pass``).

Not covered by ids alone: a projection holding an older text under the same chunk id. The intent
log covers that for interrupted passes; ``reme reindex`` rebuilds everything in any case.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from reme_core.schema.chunk import chunk_path
from reme_core.schema.tags import normalise_tag

if TYPE_CHECKING:
    from reme_core.components import Graph, KeywordIndex, TagIndex
    from reme_core.index.catalog import Catalog

SAMPLE = 5
"""Paths named per finding in status."""
SERVED = "`reme reindex` while a server runs: it goes through the server, `reme index` refuses"
"""What works instead of ``reme index`` while ``reme serve`` holds the workspace."""
REPAIR = f"`reme index` repairs it ({SERVED})"
CATCH_UP = f"`reme index` catches up ({SERVED})"


class VectorIds(Protocol):
    """The vector side of the check (``VectorIndex``)."""

    def drift(self, chunk_ids: set[str]) -> tuple[set[str], set[str]] | None: ...


class Indexes(Protocol):
    """What ``measure`` compares: the catalog, every projection and the files in scope.

    ``Indexer`` is one. Named here, not imported, so this module depends on the catalog and the
    components only, and the indexer on it, not both ways.
    """

    @property
    def catalog(self) -> Catalog: ...
    @property
    def keyword(self) -> KeywordIndex: ...
    @property
    def tags(self) -> TagIndex | None: ...
    @property
    def graph(self) -> Graph | None: ...
    @property
    def vectors(self) -> VectorIds | None: ...
    def scope_files(self) -> list[str]: ...


@dataclass
class Drift:
    """What disagrees. Chunk-level findings hold chunk ids, the others paths; None: not checked
    (the component cannot list its ids, or vectors are off)."""

    unindexed: set[str] = field(default_factory=set)
    """Files in scope on disk that the catalog lacks (and that are not known problems)."""
    vanished: set[str] = field(default_factory=set)
    """Catalog paths whose file is gone."""
    keyword_missing: set[str] | None = None
    keyword_orphans: set[str] | None = None
    vectors_missing: set[str] | None = None
    """Chunks recorded as embedded and stored that the vector store does not hold."""
    vectors_orphans: set[str] | None = None
    tags_missing: set[str] | None = None
    tags_orphans: set[str] | None = None
    graph_orphans: set[str] | None = None
    unsettled: set[str] = field(default_factory=set)
    """Paths of a pass that began but never finished persisting (intent log)."""
    rebuild_interrupted: bool = False

    @property
    def found(self) -> bool:
        return bool(self.count)

    @property
    def agrees(self) -> bool:
        """Whether the catalog and every projection compared agree and no pass was left half
        done (files new to the catalog or gone from disk are a scan's ordinary work)."""
        return self.count == len(self.unindexed) + len(self.vanished)

    @property
    def count(self) -> int:
        """Findings in all: chunks, paths, and 1 for an interrupted rebuild."""
        sets = (
            self.unindexed,
            self.vanished,
            self.keyword_missing,
            self.keyword_orphans,
            self.vectors_missing,
            self.vectors_orphans,
            self.tags_missing,
            self.tags_orphans,
            self.graph_orphans,
            self.unsettled,
        )
        return sum(len(s) for s in sets if s) + int(self.rebuild_interrupted)

    def repair_paths(self) -> set[str]:
        """Paths to apply again to the catalog, keyword index, tags and graph. New and vanished
        files are the scan's ordinary work, not listed; vector drift is repaired by the vector
        reconcile that follows a scan (it compares the store's ids with the catalog)."""
        paths = set(self.unsettled)
        for ids in (self.keyword_missing, self.keyword_orphans):
            paths.update(chunk_path(cid) for cid in ids or ())
        for found in (self.tags_missing, self.tags_orphans, self.graph_orphans):
            paths.update(found or ())
        return paths

    def summary(self) -> dict[str, Any]:
        """The ``drift`` section of ``reme status``: counts, a few paths each, problem lines."""
        out: dict[str, Any] = {
            "found": self.found,
            "count": self.count,
            "files": {
                "unindexed": len(self.unindexed),
                "vanished": len(self.vanished),
                "sample": _sample(self.unindexed | self.vanished),
            },
        }
        for name, missing, orphans in (
            ("keyword", self.keyword_missing, self.keyword_orphans),
            ("vectors", self.vectors_missing, self.vectors_orphans),
            ("tags", self.tags_missing, self.tags_orphans),
        ):
            if missing is None and orphans is None:
                out[name] = None
                continue
            ids = (missing or set()) | (orphans or set())
            out[name] = {
                "missing": len(missing or ()),
                "orphans": len(orphans or ()),
                "sample": _sample(_paths(ids) if name != "tags" else ids),
            }
        out["graph"] = (
            None
            if self.graph_orphans is None
            else {"orphans": len(self.graph_orphans), "sample": _sample(self.graph_orphans)}
        )
        out["interrupted"] = {
            "paths": len(self.unsettled),
            "rebuild": self.rebuild_interrupted,
            "sample": _sample(self.unsettled),
        }
        out["problems"] = self.problems()
        return out

    def problems(self) -> list[str]:
        """One line per kind of disagreement, naming a few paths and what repairs it."""
        lines: list[str] = []
        if self.rebuild_interrupted:
            lines.append(f"a reindex was interrupted before it finished; {CATCH_UP}")
        if self.unsettled:
            lines.append(
                f"an index pass was interrupted before {len(self.unsettled)} path(s) were "
                f"persisted in every index ({_names(self.unsettled)}); "
                f"{CATCH_UP}"
            )
        if self.unindexed or self.vanished:
            parts = []
            if self.unindexed:
                parts.append(
                    f"{len(self.unindexed)} file(s) not indexed ({_names(self.unindexed)})"
                )
            if self.vanished:
                parts.append(
                    f"{len(self.vanished)} indexed file(s) gone from disk ({_names(self.vanished)})"
                )
            lines.append(f"files: {', '.join(parts)}; {CATCH_UP}")
        for label, unit, missing, orphans, as_paths in (
            ("keyword index", "chunk", self.keyword_missing, self.keyword_orphans, True),
            ("vectors", "chunk", self.vectors_missing, self.vectors_orphans, True),
            ("tag index", "note", self.tags_missing, self.tags_orphans, False),
            ("link graph", "note", None, self.graph_orphans, False),
        ):
            parts = []
            if missing:
                names = _paths(missing) if as_paths else missing
                parts.append(f"{len(missing)} {unit}(s) of the catalog missing ({_names(names)})")
            if orphans:
                names = _paths(orphans) if as_paths else orphans
                parts.append(
                    f"{len(orphans)} orphan {unit}(s) not in the catalog ({_names(names)})"
                )
            if parts:
                lines.append(f"{label}: {', '.join(parts)}; {REPAIR}")
        return lines


def measure(
    indexer: Indexes,
    on_disk: Iterable[str] | None = None,
    indexed: set[str] | None = None,
    *,
    projections: bool = True,
) -> Drift:
    """Compare the catalog with the files and with every projection, by ids.

    Call with no writer running (under ``indexer.writers`` or the read side of ``indexer.lock``),
    so that the sets are read from one state. ``indexed``: the catalog's paths, when the caller
    has just read them (the scan has). ``projections=False``: the files and the intent log only,
    for a scan that found the drift seal intact (``reme_core.index.seal``); the projections'
    findings stay None (not checked).
    """
    catalog = indexer.catalog
    files = set(on_disk) if on_disk is not None else set(indexer.scope_files())
    if indexed is None:
        indexed = catalog.paths()
    problems = set(catalog.problems())
    unsettled, rebuilding = catalog.unsettled()
    drift = Drift(
        unindexed=files - indexed - problems,
        vanished=indexed - files,
        unsettled=unsettled,
        rebuild_interrupted=rebuilding,
    )
    if not projections:
        return drift
    ids = catalog.all_chunk_ids()
    held = indexer.keyword.chunk_ids()
    if held is not None:
        # Nearly always equal: one comparison instead of two differences of 50k-id sets.
        same = held == ids
        drift.keyword_missing = set() if same else ids - held
        drift.keyword_orphans = set() if same else held - ids
    if indexer.tags is not None:
        tagged = indexer.tags.tagged_paths()
        if tagged is not None:
            # Only notes with tags the tag index lacks need their tags parsed: a tag list may
            # hold nothing the index keeps ("#" or "/" alone normalise to "").
            untagged = catalog.paths_with_tags() - tagged
            drift.tags_missing = {
                path
                for path, tags in catalog.tags_by_path(untagged).items()
                if any(map(normalise_tag, tags))
            }
            drift.tags_orphans = tagged - indexed
    if indexer.graph is not None:
        sources = indexer.graph.sources()
        if sources is not None:
            drift.graph_orphans = sources - indexed
    if indexer.vectors is not None:
        found = indexer.vectors.drift(ids)
        if found is not None:
            drift.vectors_missing, drift.vectors_orphans = found
    return drift


def _paths(chunk_ids: Iterable[str]) -> set[str]:
    return {chunk_path(cid) for cid in chunk_ids}


def _sample(paths: Iterable[str]) -> list[str]:
    return sorted(paths)[:SAMPLE]


def _names(paths: Iterable[str]) -> str:
    found = sorted(paths)
    shown = ", ".join(found[:SAMPLE])
    return shown + (f" and {len(found) - SAMPLE} more" if len(found) > SAMPLE else "")
