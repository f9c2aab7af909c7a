"""Bringing resource notes in line with the files in ``resource/``.

A file without a note gets one (``daily/<today>/resource-<stem>.md``); a file whose bytes no
longer match its note's ``resource_hash`` rewrites that same note; a file that moved (same bytes
under a new name) repoints its note; a note whose file is gone is archived with the reason. A file
the model failed on gets nothing written and stays pending: the next run sees it again.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from reme_core.api import (
    ConflictError,
    Llm,
    LlmError,
    LockTimeout,
    NotFoundError,
    PathOutsideWorkspaceError,
    WorkspaceError,
    WorkspacePaths,
    content_hash,
    named_lock,
    path_matches,
)
from reme_plugins.auto_resource import note
from reme_plugins.auto_resource.agentic import AgentNoteRejected, AgentNoteWriter
from reme_plugins.auto_resource.claims import ARCHIVED_PREFIX, RESOURCE_DIR, Claim, find_claims
from reme_plugins.auto_resource.forgotten import SKIPPED, load_forgotten, still_forgotten
from reme_plugins.auto_resource.image_note import ImageNoteWriter
from reme_plugins.auto_resource.images import ImageAnswerRejected, is_image
from reme_plugins.auto_resource.readers import ResourceSkipped, read_resource
from reme_plugins.auto_resource.session_context import turn_context
from reme_plugins.auto_resource.summarise import Summariser

if TYPE_CHECKING:
    from reme_core.api import PipelineRun

NO_MODEL = (
    "auto_resource needs a model for this file: set components.llm (or pipelines.auto_resource.llm)"
)
"""Why a text file waits when no model is configured (images are noted without one)."""

Action = Literal["created", "updated", "renamed", "restored", "archived"]


class NoteAction(BaseModel):
    resource: str
    note: str
    action: Action


class Problem(BaseModel):
    path: str
    reason: str


class Outcome(BaseModel):
    """What one run did; the step returns these keys."""

    notes: list[NoteAction] = Field(default_factory=list)
    skipped: list[Problem] = Field(default_factory=list)
    """Files that cannot become a note as they are (binary, empty, too large, ...)."""
    pending: list[Problem] = Field(default_factory=list)
    """Files left for the next run (the model failed, a note changed underneath, a lock held)."""
    changed: list[str] = Field(default_factory=list)
    """Note paths written, in order."""
    unchanged: int = 0


@dataclass(frozen=True)
class Limits:
    max_prompt_tokens: int
    max_parts: int
    max_file_bytes: int
    max_key_points: int
    lock_timeout_seconds: float
    mode: Literal["structured", "agentic"] = "structured"
    agent_max_turns: int = 12
    vision: bool = False
    max_image_pixels: int = 40_000_000


class Reconciler:
    """One run of the step over the whole of ``resource/`` or one file in it."""

    def __init__(self, run: PipelineRun, llm: Llm | None, limits: Limits):
        self.run = run
        self.reme = run.reme
        self.llm = llm
        self.limits = limits
        self.prompts = run.prompts("reme_plugins", "auto_resource")
        self.outcome = Outcome()
        self.images = ImageNoteWriter(self.prompts, limits.max_image_pixels, limits.max_key_points)
        # Only a model the config marks as reading images is sent one.
        self.sees_images = llm is not None and limits.vision
        self.forgotten = load_forgotten(self.reme.state_dir)
        """Files kept when their note was purged (``forgotten``): not noted again."""
        self._repointed: set[str] = set()
        """Notes a rename moved onto another file this run: their old file is not deleted."""

    # -- entry points ------------------------------------------------------------------------

    def reconcile_all(self) -> Outcome:
        claims = find_claims(self.reme.catalog)
        present = self._resource_files()
        orphans = self._orphans(claims, set(present))
        excluded = self.reme.settings.index.exclude
        for rel in present:
            # Files kept out of the index stay out of the model's prompts too.
            if not path_matches(rel, excluded):
                self._file(rel, claims.get(rel), orphans)
        for source, claim in sorted(claims.items()):
            gone = source not in present and claim.status == "active"
            if gone and claim.note not in self._repointed:
                self._archive(source)
        return self.outcome

    def reconcile_one(self, rel: str) -> Outcome:
        claims = find_claims(self.reme.catalog)
        if (self.reme.root / rel).is_file():
            self._file(rel, claims.get(rel), self._orphans(claims, None))
        elif rel in claims:
            if claims[rel].status == "active":
                self._archive(rel)
            else:
                self.outcome.unchanged += 1
        else:
            raise NotFoundError(f"{rel} does not exist and no resource note names it")
        return self.outcome

    # -- one file ----------------------------------------------------------------------------

    def _file(self, rel: str, claim: Claim | None, orphans: dict[str, Claim]) -> None:
        absolute = self.reme.root / rel
        try:
            size = absolute.stat().st_size
            if size > self.limits.max_file_bytes:
                self._skip(
                    rel,
                    f"the file is {size} bytes, over the {self.limits.max_file_bytes}-byte limit "
                    "(the step's max_file_bytes)",
                )
                return
            data = absolute.read_bytes()
        except OSError as exc:
            self._skip(rel, f"cannot read the file: {exc.strerror or exc}")
            return
        digest = content_hash(data)
        if rel in self.forgotten and still_forgotten(self.reme.state_dir, rel, digest):
            self._skip(rel, SKIPPED)
            return
        if claim is not None and self._current(claim, digest) and not claim.archived_by_us:
            self.outcome.unchanged += 1  # the common case decides without a lock or a read
            return
        try:
            with named_lock(
                self.reme.state_dir, f"auto_resource:{rel}", self.limits.lock_timeout_seconds
            ):
                self._apply(rel, data, digest, orphans)
        except LockTimeout:
            self._pend(rel, "another run is processing this file; it is picked up next run")

    def _apply(self, rel: str, data: bytes, digest: str, orphans: dict[str, Claim]) -> None:
        # Decide again under the lock: another run may have written the note meanwhile.
        claim = find_claims(self.reme.catalog).get(rel)
        if claim is not None and self._current(claim, digest):
            if claim.archived_by_us:
                self._restore(rel, claim)
            else:
                self.outcome.unchanged += 1
            return
        orphan = orphans.get(digest) if claim is None else None
        if orphan is not None and not (self.reme.root / orphan.source).exists():
            del orphans[digest]
            self._rename(rel, orphan)
            return
        # Read the note before the model runs, so a hand edit made meanwhile is a conflict.
        current: tuple[str, str] | None = None
        if claim is not None:
            try:
                current = self._read_note(claim.note)
            except NotFoundError:
                claim = None  # deleted by hand and not reindexed yet: write a new note
            except WorkspaceError as exc:
                self._skip(rel, f"cannot update {claim.note}: {exc}")
                return
        if is_image(rel):
            self._image(rel, data, digest, claim, current)
            return
        if self.limits.mode == "agentic":
            # The agent wrapper brings its own model (agent_cli) or uses the pipeline's.
            self._by_agent(rel, data, digest, claim, current)
            return
        if self.llm is None:
            self._pend(rel, NO_MODEL)
            return
        try:
            resource = read_resource(rel, data)
            summariser = Summariser(
                self.llm, self.prompts, self.limits.max_prompt_tokens, self.limits.max_parts
            )
            summary = summariser.summarise(rel, resource)
        except ResourceSkipped as exc:
            self._skip(rel, str(exc))
            return
        except LlmError as exc:
            self._pend(rel, f"the model failed, nothing was written: {exc}")
            return
        keys = note.owned_keys(summary, rel, digest, resource.kind)
        text = note.body(summary, rel, self.prompts, self.limits.max_key_points)
        self._save(rel, claim, current, keys, text)

    def _image(
        self,
        rel: str,
        data: bytes,
        digest: str,
        claim: Claim | None,
        current: tuple[str, str] | None,
    ) -> None:
        try:
            info = self.images.inspect(rel, data)
            context = turn_context(self.reme.root, rel)
            if self.sees_images:
                assert self.llm is not None
                keys, text = self.images.described(self.llm, rel, data, digest, info, context)
            else:
                keys, text = self.images.unsummarised(rel, digest, info, context)
        except ImageAnswerRejected as exc:
            self._pend(rel, str(exc))
            return
        except ResourceSkipped as exc:
            self._skip(rel, str(exc))
            return
        except LlmError as exc:
            self._pend(rel, f"the model failed, nothing was written: {exc}")
            return
        self._save(rel, claim, current, keys, text)

    def _save(
        self,
        rel: str,
        claim: Claim | None,
        current: tuple[str, str] | None,
        keys: dict[str, object],
        text: str,
    ) -> None:
        if claim is None or current is None:
            self._create(rel, note.new_note(keys, text))
            return
        old, before = current
        new = note.rewritten(old, claim.note, keys, text, reactivate=claim.archived_by_us)
        self._write(rel, claim.note, new, before, "updated")

    def _by_agent(
        self,
        rel: str,
        data: bytes,
        digest: str,
        claim: Claim | None,
        current: tuple[str, str] | None,
    ) -> None:
        updating = claim is not None and current is not None
        path = claim.note if updating and claim is not None else self._free_path(rel)
        writer = AgentNoteWriter(
            self.run, self.prompts, self.limits.max_prompt_tokens, self.limits.agent_max_turns
        )
        try:
            writer.write(
                rel,
                read_resource(rel, data),
                digest,
                path,
                current if updating else None,
                reactivate=bool(claim and claim.archived_by_us),
            )
        except ResourceSkipped as exc:
            self._skip(rel, str(exc))
            return
        except (LlmError, AgentNoteRejected) as exc:
            self._pend(rel, f"{exc}; nothing was kept")
            return
        except ConflictError:
            self._pend(rel, f"{path} changed while the agent wrote it; run again")
            return
        self._done(
            rel, path, "updated" if updating else "created", "UPDATE" if updating else "CREATE"
        )

    # -- writes ------------------------------------------------------------------------------

    def _create(self, rel: str, text: str) -> None:
        path = self._free_path(rel)
        try:
            self.reme.files.write(path, text)
        except WorkspaceError as exc:
            self._skip(rel, f"cannot write {path}: {exc}")
            return
        self._done(rel, path, "created", "CREATE")

    def _write(self, rel: str, path: str, text: str, before: str, action: Action) -> None:
        try:
            self.reme.files.write(path, text, expected_hash=before)
        except ConflictError:
            self._pend(rel, f"{path} changed while it was being rewritten; run again")
            return
        except WorkspaceError as exc:
            self._skip(rel, f"cannot update {path}: {exc}")
            return
        self._done(rel, path, action, "UPDATE")

    def _rename(self, rel: str, orphan: Claim) -> None:
        try:
            old, before = self._read_note(orphan.note)
            new = note.renamed(old, orphan.note, orphan.source, rel, orphan.archived_by_us)
        except WorkspaceError as exc:
            self._skip(rel, f"cannot update {orphan.note}: {exc}")
            return
        self._repointed.add(orphan.note)
        self._write(rel, orphan.note, new, before, "renamed")

    def _restore(self, rel: str, claim: Claim) -> None:
        self._frontmatter(rel, claim, {}, note.ARCHIVE_KEYS, "restored", "UPDATE")

    def _archive(self, source: str) -> None:
        try:
            with named_lock(
                self.reme.state_dir, f"auto_resource:{source}", self.limits.lock_timeout_seconds
            ):
                claim = find_claims(self.reme.catalog).get(source)
                if claim is None or claim.status != "active" or (self.reme.root / source).exists():
                    return  # another run got here first, or the file came back
                reason = f"{ARCHIVED_PREFIX}{source} deleted on {self._today()}"
                keys = {"status": "archived", "archived_reason": reason}
                self._frontmatter(source, claim, keys, (), "archived", "ARCHIVE")
        except LockTimeout:
            self._pend(source, "another run is processing this file; it is picked up next run")

    def _frontmatter(
        self,
        rel: str,
        claim: Claim,
        keys: dict[str, str],
        remove: tuple[str, ...],
        action: Action,
        verb: str,
    ) -> None:
        try:
            _, before = self._read_note(claim.note)
            self.reme.files.update_frontmatter(claim.note, keys, remove, expected_hash=before)
        except ConflictError:
            self._pend(rel, f"{claim.note} changed while it was being updated; run again")
            return
        except WorkspaceError as exc:
            self._skip(rel, f"cannot update {claim.note}: {exc}")
            return
        self._done(rel, claim.note, action, verb)

    def _done(self, rel: str, path: str, action: Action, verb: str) -> None:
        self.outcome.notes.append(NoteAction(resource=rel, note=path, action=action))
        if path not in self.outcome.changed:
            self.outcome.changed.append(path)
        self.run.record(f"{verb} {path}")

    def _skip(self, rel: str, reason: str) -> None:
        self.outcome.skipped.append(Problem(path=rel, reason=reason))

    def _pend(self, rel: str, reason: str) -> None:
        self.outcome.pending.append(Problem(path=rel, reason=reason))

    # -- helpers -----------------------------------------------------------------------------

    def _current(self, claim: Claim, digest: str) -> bool:
        """The claim's note is up to date with these bytes (an image note written without a
        vision model is not, once one is configured)."""
        if claim.resource_hash != digest:
            return False
        return not (claim.summarised is False and self.sees_images)

    def _read_note(self, path: str) -> tuple[str, str]:
        """The note's text and hash, read from disk (the catalog may lag a hand edit)."""
        _, absolute = self.reme.paths.resolve(path)
        if not absolute.is_file():
            raise NotFoundError(f"{path} does not exist")
        data = absolute.read_bytes()
        try:
            return data.decode("utf-8"), content_hash(data)
        except UnicodeDecodeError:
            raise WorkspaceError(f"{path} is not valid UTF-8 text") from None

    def _resource_files(self) -> list[str]:
        folder = self.reme.root / RESOURCE_DIR
        if not folder.is_dir() or not self.reme.paths.is_inside(folder):
            return []
        # Rooted at resource/, the walk also refuses links that leave resource/.
        return [f"{RESOURCE_DIR}/{rel}" for rel in WorkspacePaths(folder).iter_files()]

    def _orphans(self, claims: dict[str, Claim], present: set[str] | None) -> dict[str, Claim]:
        """Resource hash -> a claim whose file is gone: a new file with those bytes is a rename."""
        orphans: dict[str, Claim] = {}
        for source, claim in sorted(claims.items()):
            gone = source not in present if present is not None else not self._exists(source)
            if gone and claim.resource_hash and claim.resource_hash not in orphans:
                orphans[claim.resource_hash] = claim
        return orphans

    def _exists(self, rel: str) -> bool:
        return os.path.lexists(self.reme.root / rel)

    def _free_path(self, rel: str) -> str:
        folder = f"daily/{self._today()}"
        base = _slug(rel)
        for n in range(1, 1000):
            path = f"{folder}/resource-{base}{'' if n == 1 else f'-{n}'}.md"
            if not os.path.lexists(self.reme.root / path):
                return path
        raise WorkspaceError(f"no free note name for {rel} under {folder}/")

    def _today(self) -> str:
        return dt.datetime.now(self.reme.settings.tzinfo()).date().isoformat()


def _slug(rel: str) -> str:
    stem = PurePosixPath(rel).stem.lower()
    slug = re.sub(r"[^\w]+", "-", stem).strip("-_")[:60].strip("-_")
    return slug or "resource"


def resource_path(paths: WorkspacePaths, value: object) -> str:
    """Check the ``path`` param: one file inside ``resource/``; traversal is refused."""
    if not isinstance(value, str) or not value.strip():
        raise WorkspaceError(
            "auto_resource: `path` must name a file in resource/, "
            "e.g. --param path=resource/report.pdf"
        )
    rel, absolute = paths.resolve(value)
    if not rel.startswith(RESOURCE_DIR + "/"):
        raise PathOutsideWorkspaceError(
            f"auto_resource reads files in {RESOURCE_DIR}/ only; {value!r} is not inside it"
        )
    if absolute.is_dir():
        raise WorkspaceError(f"{rel} is a folder; name one file (or omit path to scan all)")
    return rel
