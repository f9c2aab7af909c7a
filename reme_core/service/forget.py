"""Forgetting notes: archived by default (recorded in history, revertible), or purged.

A soft forget sets ``status: archived`` (search leaves archived notes out unless asked) in one
history entry of its own, which ``reme revert`` undoes. A purge removes the note and everything
derived from it: the file, its chunks, keyword rows, vectors, links and tags (the indexer's
removal), its cached embeddings, the review proposals that mention it, the journal's lines about
it and every version of it in the history (rewritten: ``workspace.history_purge``); then the
keyword index and vector store are compacted and every SQLite file under ``.reme/`` rewritten,
so no deleted row's bytes remain. Files a pipeline keeps beside the notes lose the note too
(``Step.forget_in_workspace``: the proactive topics, as one history entry, their past versions
holding it taken out of the history), and files that go with a note are purged with it
(``Step.purged_with``: a resource note's source) or, with ``keep_sources``, kept and recorded so
the step leaves them (``Step.forget_kept``). The report says what went, and ``remaining`` is the proof:
the files (under ``.reme/``, the workspace, and the history's objects) that still hold any trace
of the note, read byte by byte afterwards; empty when nothing does (what a trace is, and where
it is looked for: ``service.forget_proof``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from reme_core.components import Step
from reme_core.errors import (
    NotFoundError,
    PathOutsideWorkspaceError,
    RemeError,
    UnsupportedFileError,
)
from reme_core.index.purge import (
    drop_cached_embeddings,
    rewrite_sqlite,
    sqlite_files,
)
from reme_core.pipelines.locks import named_lock
from reme_core.review.store import ProposalStore
from reme_core.runtime import Reme
from reme_core.service.forget_digests import Citations, citations, unlink_digests
from reme_core.service.forget_proof import proof_needles, traces, unshared
from reme_core.workspace.history import HistoryError
from reme_core.workspace.history_entries import PURGE_REWRITE
from reme_core.workspace.history_purge import blobs_holding, purge_history
from reme_core.workspace.notes import parse_note
from reme_core.workspace.paths import is_internal

LOCK = "forget"


class ForgetConfirmationError(HistoryError):
    """A purge cannot be undone: it runs only with ``confirm`` (``--yes``); ``details`` lists
    the notes it would remove."""

    def __init__(self, message: str, paths: list[str]):
        super().__init__(message)
        self.paths = paths

    @property
    def details(self) -> dict[str, object]:
        return {"paths": self.paths}


class Purged(BaseModel):
    """What a purge removed, counted before it ran."""

    files: list[str] = Field(default_factory=list)
    chunks: int = 0
    vectors: int = 0
    """Vector store rows (the embedding model's stored chunks)."""
    cached_embeddings: int = 0
    links: int = 0
    """Links from the notes (links to them from other notes stay, now unresolved)."""
    tags: int = 0
    proposals: list[str] = Field(default_factory=list)
    journal_entries: int = 0
    history_commits_rewritten: int = 0
    state: list[str] = Field(default_factory=list)
    """The pipelines' state files the notes were dropped from (``.reme/dream/checkpoint.json``,
    the proactive and auto_memory cursors, auto_tag's checkpoint: each step's
    ``forget_paths``)."""
    state_errors: list[str] = Field(default_factory=list)
    """A step whose state could not be read (damaged): why; its file is left as it was."""
    compacted: list[str] = Field(default_factory=list)
    """The SQLite files rewritten (VACUUM), beside the keyword index and vector store."""
    rewritten: dict[str, list[str]] = Field(default_factory=dict)
    """Workspace files a pipeline keeps beside the notes, rewritten without the notes (each
    step's ``forget_in_workspace``: the proactive topics dropped, reopened or unlinked, and the
    note raising them rendered again), with what changed; as one history entry
    (``rewritten_history``)."""
    rewritten_history: str | None = None
    rewritten_errors: list[str] = Field(default_factory=list)
    """A step whose files could not be rewritten (a malformed topics file): why; left as they
    were."""
    vector_store_rebuilt: bool = False
    """The vector store still held the note's chunk ids after its compaction (zvec keeps
    deleted ids in its id map's tables), so it was rebuilt from the cached embeddings of the
    other notes (no model call)."""


class ForgetReport(BaseModel):
    mode: Literal["archive", "purge"]
    dry_run: bool = False
    paths: list[str]
    """The notes forgotten (or, in a dry run, that would be)."""
    unchanged: list[str] = Field(default_factory=list)
    """Archive: notes that were archived already."""
    history: str | None = None
    """Archive: the history entry (``reme revert`` takes it)."""
    history_error: str | None = None
    removed: Purged | None = None
    purged_with: dict[str, str] = Field(default_factory=dict)
    """Purge: files that go with a purged note (each with its note), purged with it and listed
    in ``removed.files``: a resource note's source file under ``resource/``, which the next
    ``auto_resource`` run would otherwise note again (kept when another note summarises it)."""
    kept_sources: dict[str, str] = Field(default_factory=dict)
    """Purge with ``keep_sources``: those files (each with its note) stay, listed as forgotten
    so the step does not note them again (``removed.state`` names its list)."""
    rewrites: dict[str, list[str]] = Field(default_factory=dict)
    """Purge, dry run: the pipeline-kept workspace files that would be rewritten (see
    ``Purged.rewritten``)."""
    citations: Citations | None = None
    """Purge: the other notes linking to a forgotten note, with their citing lines, and what
    ``with_digests`` removed from the digest notes among them (``service.forget_digests``)."""
    remaining: list[str] = Field(default_factory=list)
    """Purge: what still holds a trace of a forgotten note afterwards (``.reme/...``, a
    workspace file, ``history``; ``forget_proof.proof_needles`` says what a trace is); empty is the proof
    nothing does."""


def resolve_targets(reme: Reme, path: str | None, query: str | None, limit: int) -> list[str]:
    """The notes named: one path (confined, existing), or those whose text holds the words of
    ``query`` (keyword matches only: the nearest notes in meaning are not a request to forget)."""
    if path is not None:
        rel, absolute = reme.paths.resolve(path)
        if rel == "" or is_internal(rel):
            raise PathOutsideWorkspaceError(f"{path!r} names no note of the workspace")
        if not absolute.is_file():
            raise NotFoundError(f"no note {rel} in the workspace; nothing was forgotten")
        return [rel]
    assert query is not None
    response = reme.search(query, limit=limit, expand=False)
    found = [hit.path for hit in response.hits if "keyword" in hit.arm_ranks]
    if not found:
        raise NotFoundError(f"no note holds the words of {query!r}; nothing was forgotten")
    return list(dict.fromkeys(found))


def archive(reme: Reme, paths: list[str], dry_run: bool = False) -> ForgetReport:
    """Set ``status: archived`` on each note, as one history entry."""
    texts = {rel: _read_note(reme, rel) for rel in paths}  # every one checked before any write
    unchanged = [rel for rel, text in texts.items() if parse_note(rel, text).status == "archived"]
    todo = [rel for rel in paths if rel not in unchanged]
    report = ForgetReport(mode="archive", dry_run=dry_run, paths=todo, unchanged=unchanged)
    if dry_run or not todo:
        return report
    today = dt.datetime.now(reme.settings.tzinfo()).date().isoformat()
    with named_lock(reme.state_dir, LOCK), reme.history.batch():
        try:
            reme.history.snapshot()  # earlier changes stay out of this entry
        except HistoryError as exc:
            report.history_error = str(exc)
        for rel in todo:
            reme.files.update_frontmatter(rel, {"status": "archived", "archived_on": today})
        if report.history_error is None:
            message = f"reme forget: archived {len(todo)} note(s)\n\n" + "\n".join(todo)
            try:
                report.history = reme.history.record(message)
            except HistoryError as exc:
                report.history_error = str(exc)
    return report


def purge(
    reme: Reme,
    paths: list[str],
    *,
    confirm: bool,
    dry_run: bool = False,
    with_digests: bool = False,
    keep_sources: bool = False,
) -> ForgetReport:
    """Remove the notes and every trace of them under ``.reme/`` (see the module docstring);
    ``with_digests`` also unlinks the digest notes citing them (``service.forget_digests``)."""
    companions = _purged_with(reme, set(paths))
    kept_sources = companions if keep_sources else {}
    if keep_sources:
        companions = {}
    asked, paths = paths, [*paths, *companions]
    texts = {rel: _read_bytes(reme, rel) for rel in paths}
    if dry_run:
        rewrites, _ = _rewrite_kept(reme, set(paths), dry_run=True)
        return ForgetReport(
            mode="purge",
            dry_run=True,
            paths=asked,
            citations=citations(reme, paths),
            purged_with=companions,
            kept_sources=kept_sources,
            rewrites=rewrites,
        )
    if not confirm:
        raise ForgetConfirmationError(
            f"a purge cannot be undone: it would remove {', '.join(paths)} and every version of "
            "it from the history; pass --yes (confirm=true) to purge, or forget without --purge "
            "to archive (revertible); nothing was changed",
            paths,
        )
    removed = Purged(files=list(paths))
    names = set(paths)
    with named_lock(reme.state_dir, LOCK):
        # A note not indexed yet (copied in, no `reme index` since) is indexed first, so that its
        # removal goes the usual way: other notes' links to it re-resolved, its counts reported.
        unindexed = [rel for rel in paths if rel not in reme.catalog.hashes([rel])]
        if unindexed:
            reme.indexer.update(unindexed)
        cited = citations(reme, paths)  # before the links go with the notes
        _count_projections(reme, paths, removed)
        chunks = reme.catalog.chunk_hashes(paths)
        digests = {digest for _, _, digest in chunks}
        rewrites, _ = _rewrite_kept(reme, names, dry_run=True)
        if rewrites:  # earlier changes to those files stay out of the purge's entry
            _snapshot(reme, removed.rewritten_errors)
            digests |= {d for _, _, d in reme.catalog.chunk_hashes(list(rewrites))}
        with reme.history.batch():  # the delete is not committed: the history forgets it next
            for rel in paths:
                _remove_file(reme, rel)
            # The files a pipeline keeps beside the notes (the proactive topics and the note
            # raising them) lose the notes now, committed once the history is rewritten.
            removed.rewritten, errors = _rewrite_kept(reme, names)
            removed.rewritten_errors += errors
        kept = {digest for _, _, digest in reme.catalog.chunk_hashes()}  # shared with others
        if reme.vectors is not None:
            removed.cached_embeddings = drop_cached_embeddings(
                reme.state_dir / "embeddings.sqlite3", digests - kept
            )
        needles = proof_needles(
            texts, chunks, kept_digests=kept, kept_hashes=set(reme.catalog.hashes().values())
        )
        removed.proposals = _drop_proposals(reme.state_dir, names, needles.text)
        removed.journal_entries = reme.journal.drop_paths(names)
        removed.state, removed.state_errors = _forget_in_steps(reme, names, kept_sources)
        # Their past versions that held the note go with it, and its words leave the messages
        # (a proactive run's ``NEW t…: the question``).
        stale = blobs_holding(reme.history, list(removed.rewritten), needles.all)
        removed.history_commits_rewritten = purge_history(
            reme.history, paths, blobs=stale, words=unshared(reme, needles.text)
        )
        _record_rewritten(reme, removed)
        if with_digests:
            unlink_digests(reme, cited, paths)
        reme.optimize()  # keyword tombstones merged away, vector store compacted
        with reme.indexer.writers, reme.indexer.sealed_write():
            removed.compacted = rewrite_sqlite(sqlite_files(reme.state_dir))
        remaining = traces(reme, needles)
        if _in_vector_store(reme, remaining):
            removed.vector_store_rebuilt = True
            _rebuild_vectors(reme)
            remaining = traces(reme, needles)
    return ForgetReport(
        mode="purge",
        paths=asked,
        removed=removed,
        citations=cited,
        remaining=remaining,
        purged_with=companions,
        kept_sources=kept_sources,
    )


def _steps(reme: Reme, hook: str) -> Iterator[tuple[str, Any]]:
    """The registered steps overriding ``Step.<hook>``, each implementation once."""
    seen: set[Any] = set()
    default = getattr(Step, hook).__func__
    for entry in reme.plugins.registry("step").entries():
        method = getattr(getattr(entry.cls, hook), "__func__", None)
        if method is None or method is default or method in seen:
            continue
        seen.add(method)
        yield entry.name, getattr(entry.cls, hook)


def _purged_with(reme: Reme, names: set[str]) -> dict[str, str]:
    """The files that go with the notes (``Step.purged_with``), not already named."""
    found: dict[str, str] = {}
    for _, hook in _steps(reme, "purged_with"):
        for rel, note in hook(reme, names).items():
            if rel not in names:
                found.setdefault(rel, note)
    return dict(sorted(found.items()))


def _rewrite_kept(
    reme: Reme, names: set[str], *, dry_run: bool = False
) -> tuple[dict[str, list[str]], list[str]]:
    """Each step drops the notes from the workspace files it keeps (``Step.forget_in_workspace``)."""
    done: dict[str, list[str]] = {}
    errors: list[str] = []
    for name, hook in _steps(reme, "forget_in_workspace"):
        try:
            for rel, what in hook(reme, names, dry_run).items():
                done.setdefault(rel, []).extend(what)
        except RemeError as exc:
            errors.append(f"{name}: {exc}")
    return dict(sorted(done.items())), errors


def _snapshot(reme: Reme, errors: list[str]) -> None:
    try:
        reme.history.snapshot()
    except HistoryError as exc:
        errors.append(f"history: {exc}")


def _record_rewritten(reme: Reme, removed: Purged) -> None:
    """The rewritten files as one history entry, made after the history is rewritten (so its
    id stays valid); its message names the files, never the purged notes."""
    if not removed.rewritten:
        return
    message = PURGE_REWRITE + ", ".join(removed.rewritten)
    try:
        removed.rewritten_history = reme.history.record(message)
    except HistoryError as exc:
        removed.rewritten_errors.append(f"history: {exc}")


def _forget_in_steps(
    reme: Reme, names: set[str], kept: dict[str, str]
) -> tuple[list[str], list[str]]:
    """Each registered step drops the notes from its own state (``Step.forget_paths``) and
    records the files kept of them (``Step.forget_kept``)."""
    done: list[str] = []
    errors: list[str] = []
    calls = [(n, h, (reme.state_dir, names)) for n, h in _steps(reme, "forget_paths")]
    if kept:
        calls += [(n, h, (reme, kept)) for n, h in _steps(reme, "forget_kept")]
    for name, hook, args in calls:
        try:
            done += [f".reme/{rel}" for rel in hook(*args)]
        except RemeError as exc:
            errors.append(f"{name}: {exc}")
    return sorted(set(done)), errors


def _in_vector_store(reme: Reme, remaining: list[str]) -> bool:
    """Whether any of ``remaining`` is a file of the vector store (its folder under .reme/)."""
    if reme.vectors is None or not remaining:
        return False
    files = reme.vectors.store.state_files() or []
    roots = set()
    for file in files:
        try:
            parts = Path(file).relative_to(reme.state_dir).parts
        except ValueError:
            continue
        roots.add(f".reme/{parts[0]}" + ("/" if len(parts) > 1 else ""))
    return any(
        r == root or (root.endswith("/") and r.startswith(root))
        for r in remaining
        for root in roots
    )


def _rebuild_vectors(reme: Reme) -> None:
    """Recreate the vector store from the cached embeddings of the notes that remain."""
    assert reme.vectors is not None
    with reme.indexer.writers, reme.indexer.sealed_write():
        reme.vectors.clear()
        reme.vectors.reconcile()
        reme.vectors.optimize()


def _read_note(reme: Reme, rel: str) -> str:
    if not rel.lower().endswith(".md"):
        raise UnsupportedFileError(
            f"{rel} is not a Markdown note, which is what can be archived; forget it with "
            "--purge; nothing was changed"
        )
    text = _read_bytes(reme, rel).decode("utf-8", "replace")
    parse_note(rel, text)  # a broken frontmatter refuses here, before anything is written
    return text


def _read_bytes(reme: Reme, rel: str) -> bytes:
    _, absolute = reme.paths.resolve(rel)
    try:
        return absolute.read_bytes()
    except OSError as exc:
        raise NotFoundError(f"cannot read {rel}: {exc.strerror}; nothing was changed") from None


def _count_projections(reme: Reme, paths: list[str], removed: Purged) -> None:
    chunk_ids = {cid for cid, _, _ in reme.catalog.chunk_hashes(paths)}
    removed.chunks = len(chunk_ids)
    if reme.vectors is not None and reme.vectors.model_id is not None:
        stored = reme.embedding_cache.stored(reme.vectors.model_id)
        removed.vectors = sum(1 for cid in chunk_ids if cid in stored)
    if reme.graph is not None:
        removed.links = sum(len(reme.graph.outbound(rel)) for rel in paths)
    removed.tags = sum(len(tags) for tags in reme.catalog.tags_by_path(paths).values())


def _remove_file(reme: Reme, rel: str) -> None:
    if rel.lower().endswith(".md"):
        reme.files.delete(rel)
        return
    # Not a note (a .txt, a .jsonl the chunkers index): the file tools delete only notes.
    _, absolute = reme.paths.resolve(rel, for_write=True)
    with reme.indexer.writers:
        Path(absolute).unlink()
        reme.indexer.update([], [rel])


def _drop_proposals(state_dir: Path, names: set[str], needles: list[bytes]) -> list[str]:
    """Delete the proposals that change, cite or quote a purged note (any status)."""
    store = ProposalStore(state_dir)
    proposals, _ = store.all()
    stems = {n.removesuffix(".md") for n in names}
    dropped = []
    for proposal in proposals:
        raw = "\n".join(_strings(proposal.model_dump(mode="json"))).encode("utf-8")
        mentions = (
            proposal.target in names
            or any(s in names for s in proposal.sources)
            or any(stem.encode("utf-8") in raw for stem in stems)
            or any(needle in raw for needle in needles)
        )
        if mentions:
            store.path(proposal.id).unlink(missing_ok=True)
            dropped.append(proposal.id)
    return dropped


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value (a proposal's text, as written, not JSON-escaped)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
