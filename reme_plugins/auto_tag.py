"""The ``auto_tag`` step: frontmatter ``tags`` for notes whose content changed.

Which notes: ``changed`` when an earlier step put it in the state (auto_resource, dream's finish),
else the ``paths`` param, else (``reme run auto_tag`` alone) every active note whose bytes differ
from when this step last looked at it (a hash checkpoint in ``.reme/auto_tag.json``). Resource
files, non-Markdown files and notes that are not active are skipped with the reason.

The model sees the notes in batches under a token budget, with the workspace's most used tags to
reuse. Every batch is asked before anything is written, so output the model never gets right
fails the step cleanly with no note touched. Tags only ever add up to ``max_tags``: a tag a person
wrote is never dropped, and a note edited while the model was thinking is a conflict, not
overwritten.

Adds ``tagged`` (path -> the note's tags after the run), ``tag_skipped`` and ``tag_conflicts``
(``{path, reason}``), ``tag_ignored`` (paths the model answered for but was not asked about) and
``tag_remaining`` (changed notes left for the next run by ``max_notes``).

With ``pipelines.<name>.review: queue`` no note is written: each note's new tags become a TAG
proposal (``tag_proposals``: path -> proposal id) for ``reme review``. The checkpoint records
the note's hash as seen, so the note is not asked about again until it changes; approval
records the tagged note's hash, a rejected proposal is not made again for the same note.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from reme_core.api import (
    ComponentSettings,
    ConfigError,
    ConflictError,
    LlmError,
    Note,
    NotFoundError,
    Prompts,
    Proposal,
    RemeError,
    ReviewApi,
    Reviewer,
    Step,
    WorkspaceError,
    atomic_write,
    batches,
    content_hash,
    estimate_tokens,
    fit,
    hookimpl,
    named_lock,
    normalise_tags,
    parse_note,
    update_frontmatter,
)

CHECKPOINT_FILE = "auto_tag.json"
RESOURCE_DIR = "resource/"
MAX_TAG_CHARS = 48
_SEPARATOR = "\n\n"
_SPLICE_MARGIN = 2  # estimates round up per piece; see auto_resource.summarise


class NoteTags(BaseModel):
    path: str
    tags: list[str] = Field(default_factory=list)


class TagAnswer(BaseModel):
    """The model's answer for one batch."""

    notes: list[NoteTags]


@dataclass(frozen=True)
class Candidate:
    path: str
    text: str
    content_hash: str
    note: Note


def clean_tag(raw: Any) -> str:
    """One tag as this workspace writes them: lowercase, words joined by hyphens, ``/`` nests."""
    tag = str(raw).strip().lstrip("#").lower()
    tag = re.sub(r"[\s_]+", "-", tag)
    tag = re.sub(r"[^\w/-]", "", tag)
    tag = re.sub(r"-{2,}", "-", re.sub(r"/{2,}", "/", tag))
    return tag.strip("-/")[:MAX_TAG_CHARS].strip("-/")


def merge_tags(existing: Sequence[str], proposed: Sequence[str], max_tags: int) -> list[str]:
    """``existing`` as written, then new proposals until the note holds ``max_tags``."""
    known = set(normalise_tags(list(existing)))
    merged = list(existing)
    for tag in normalise_tags([clean_tag(t) for t in proposed]):
        if len(merged) >= max_tags:
            break
        if tag and tag not in known:
            known.add(tag)
            merged.append(tag)
    return merged


def written_tags(value: Any) -> list[str]:
    """A note's ``tags`` as the person wrote them (spelling kept), as a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [t for t in re.split(r"[,\s]+", value) if t]
    if isinstance(value, list | tuple):
        return [str(t) for t in value if t is not None and str(t).strip()]
    return [str(value)]


class Checkpoint:
    """Path -> the content hash this step last saw for it (after its own write)."""

    def __init__(self, file: Path):
        self.file = file
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            notes = data.get("notes", {}) if isinstance(data, dict) else {}
        except (OSError, ValueError):
            notes = {}  # missing or damaged derived state: the cost is retagging, not data
        self.notes: dict[str, str] = {str(k): str(v) for k, v in notes.items()}

    def save(self) -> None:
        data = {"version": 1, "notes": dict(sorted(self.notes.items()))}
        atomic_write(self.file, json.dumps(data, indent=1).encode("utf-8"))


def check_tags(path: str, before: str, after: str, tags: Sequence[str]) -> list[str]:
    """The TAG contract: ``after`` is ``before`` with only its ``tags`` set to ``tags``, and no
    tag that was there is dropped. Returns the checks passed; WorkspaceError when one fails."""
    if update_frontmatter(before, {"tags": list(tags)}, path=path) != after:
        raise WorkspaceError(f"the proposed text of {path} changes more than its tags")
    existing = written_tags(parse_note(path, before).frontmatter.get("tags"))
    dropped = set(normalise_tags(existing)) - set(normalise_tags(list(tags)))
    if dropped:
        raise WorkspaceError(f"the proposal drops tags of {path}: {', '.join(sorted(dropped))}")
    return ["only the tags key changes", "every tag already there is kept"]


class TagReviewer(Reviewer):
    """Verifies a TAG proposal again, and checkpoints the tagged note once approved."""

    def check(self, reme: Any, proposal: Proposal, before: str | None) -> list[str]:
        tags = proposal.payload.get("tags")
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise WorkspaceError(f"proposal {proposal.id} does not hold the tags to set")
        if before is None:
            raise NotFoundError(f"{proposal.target} does not exist")
        return [
            "the note is as it was when proposed",
            *check_tags(proposal.target, before, proposal.content, tags),
        ]

    def applied(self, reme: Any, proposal: Proposal, content_hash: str) -> None:
        with named_lock(reme.state_dir, "auto_tag", AutoTagStep.Settings().lock_timeout_seconds):
            checkpoint = Checkpoint(reme.state_dir / CHECKPOINT_FILE)
            checkpoint.notes[proposal.target] = content_hash  # tagged: not asked about again
            checkpoint.save()


class AutoTagStep(Step):
    """Adds tags to changed notes, reusing the workspace's vocabulary."""

    name: ClassVar[str] = "auto_tag"
    supports_review: ClassVar[bool] = True
    reviewer: ClassVar[TagReviewer] = TagReviewer()

    @classmethod
    def forget_paths(cls, state_dir: Path, paths: Set[str]) -> list[str]:
        """Purged notes leave the hash checkpoint."""
        if not (state_dir / CHECKPOINT_FILE).is_file():
            return []
        with named_lock(state_dir, "auto_tag", cls.Settings().lock_timeout_seconds):
            checkpoint = Checkpoint(state_dir / CHECKPOINT_FILE)
            if not set(checkpoint.notes) & paths:
                return []
            checkpoint.notes = {p: h for p, h in checkpoint.notes.items() if p not in paths}
            checkpoint.save()
        return [CHECKPOINT_FILE]

    class Settings(ComponentSettings):
        max_tags: int = Field(default=6, ge=1, le=50)
        """Tags a note may hold after tagging; a note already at the cap gets none added."""
        max_prompt_tokens: int = Field(default=6000, ge=256)
        """The most tokens one prompt may carry, system message included."""
        note_tokens: int = Field(default=400, ge=32)
        """How much of each note the model sees (name, description, start of the body)."""
        batch_size: int = Field(default=20, ge=1)
        vocabulary_size: int = Field(default=60, ge=0)
        """The most used tags shown to the model for reuse."""
        max_notes: int = Field(default=200, ge=1)
        """Standalone runs tag at most this many notes; the rest wait for the next run."""
        lock_timeout_seconds: float = Field(default=30.0, ge=0)

    settings: Settings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        if run.llm is None and "changed" in state:
            # Following a step that works without a model (auto_memory's verbatim notes): the
            # notes it wrote are kept; tagging waits for a model instead of failing the run.
            return {"tagged": {}, "tag_skipped_reason": "no model configured (components.llm)"}
        llm = run.require_llm("auto_tag")
        reme = run.reme
        with named_lock(reme.state_dir, "auto_tag", self.settings.lock_timeout_seconds):
            checkpoint = Checkpoint(reme.state_dir / CHECKPOINT_FILE)
            paths, standalone = self._select(reme, state, checkpoint)
            candidates, skipped = self._load(reme, paths)
            remaining = max(len(candidates) - self.settings.max_notes, 0) if standalone else 0
            candidates = candidates[: self.settings.max_notes] if standalone else candidates
            prompts = run.prompts("reme_plugins", "auto_tag")
            answers, ignored = self._ask(llm, prompts, candidates, self._vocabulary(reme))
            proposals: dict[str, str] = {}
            if run.review == "queue":
                tagged, conflicts = {}, []
                proposals = self._propose(run, candidates, answers, checkpoint)
            else:
                tagged, conflicts = self._write(run, candidates, answers, checkpoint)
            if standalone:
                live = set(reme.catalog.hashes())
                checkpoint.notes = {p: h for p, h in checkpoint.notes.items() if p in live}
            checkpoint.save()
        out = {
            "tagged": tagged,
            "tag_skipped": skipped,
            "tag_ignored": ignored,
            "tag_conflicts": conflicts,
            "tag_remaining": remaining,
        }
        if run.review == "queue":
            out["tag_proposals"] = proposals
        return out

    # -- which notes -------------------------------------------------------------------------

    def _select(
        self, reme: Any, state: dict[str, Any], checkpoint: Checkpoint
    ) -> tuple[list[str], bool]:
        if "changed" in state:
            # Written by an earlier step of this run: already workspace paths, maybe gone since.
            return [p for p in state["changed"] or [] if isinstance(p, str)], False
        if state.get("paths") is not None:
            return self._given(reme, state["paths"]), False
        catalog = reme.catalog
        changed = [
            path
            for path, digest in sorted(catalog.hashes().items())
            if path.lower().endswith(".md")
            and not path.startswith(RESOURCE_DIR)
            and checkpoint.notes.get(path) != digest
        ]
        active = catalog.notes(changed)
        return [p for p in changed if p in active and active[p].status == "active"], True

    def _given(self, reme: Any, value: Any) -> list[str]:
        """The ``paths`` param, checked before anything is asked or written."""
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(p, str) for p in items):
            raise WorkspaceError("auto_tag: `paths` must be a note path or a list of them")
        paths = []
        for item in items:
            rel, absolute = reme.paths.resolve(item)  # traversal and escapes are refused here
            if not absolute.is_file():
                raise NotFoundError(f"auto_tag: {rel} does not exist")
            paths.append(rel)
        return paths

    def _load(
        self, reme: Any, paths: Sequence[str]
    ) -> tuple[list[Candidate], list[dict[str, str]]]:
        candidates: list[Candidate] = []
        skipped: list[dict[str, str]] = []
        for path in dict.fromkeys(paths):
            try:
                candidates.append(self._candidate(reme, path))
            except RemeError as exc:
                skipped.append({"path": path, "reason": str(exc)})
        return candidates, skipped

    def _candidate(self, reme: Any, path: str) -> Candidate:
        rel, absolute = reme.paths.resolve(path)
        if not rel.lower().endswith(".md"):
            raise WorkspaceError("not a Markdown note")
        if rel.startswith(RESOURCE_DIR):
            raise WorkspaceError("a resource file: its resource note is what gets tagged")
        if not absolute.is_file():
            raise WorkspaceError("does not exist (moved or deleted since)")
        data = absolute.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise WorkspaceError("not valid UTF-8 text") from None
        note = parse_note(rel, text)
        if note.status != "active":
            raise WorkspaceError(f"status {note.status}: only active notes are tagged")
        return Candidate(path=rel, text=text, content_hash=content_hash(data), note=note)

    # -- asking ------------------------------------------------------------------------------

    def _vocabulary(self, reme: Any) -> list[str]:
        if reme.tags is None or self.settings.vocabulary_size == 0:
            return []
        counts = reme.tags.tags()
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return [tag for tag, _ in ranked[: self.settings.vocabulary_size]]

    def _ask(
        self, llm: Any, prompts: Prompts, candidates: list[Candidate], vocabulary: list[str]
    ) -> tuple[dict[str, list[str]], list[str]]:
        """Every batch's answer, path -> proposed tags; paths nobody asked about are set aside."""
        values = {"vocabulary": ", ".join(vocabulary), "max_tags": str(self.settings.max_tags)}
        answers: dict[str, list[str]] = {}
        ignored: list[str] = []
        for batch in self._batches(prompts, candidates, values):
            messages = _messages(prompts, "\n\n".join(b for _, b in batch), len(batch), values)
            try:
                answer = llm.structured(messages, TagAnswer)
            except LlmError as exc:
                raise LlmError(f"auto_tag: the model failed, no tags were written: {exc}") from exc
            asked = {c.path for c, _ in batch}
            for item in answer.notes:
                if item.path in asked:
                    answers.setdefault(item.path, []).extend(item.tags)
                elif item.path not in ignored:
                    ignored.append(item.path)
        return answers, ignored

    def _batches(
        self, prompts: Prompts, candidates: list[Candidate], values: dict[str, str]
    ) -> list[list[tuple[Candidate, str]]]:
        overhead = _SPLICE_MARGIN + sum(
            estimate_tokens(m["content"]) for m in _messages(prompts, "", 999999, values)
        )
        budget = self.settings.max_prompt_tokens - overhead
        per_note = min(self.settings.note_tokens, budget)
        if per_note < 32:
            raise ConfigError(
                f"auto_tag: max_prompt_tokens {self.settings.max_prompt_tokens} is too small; "
                f"the prompt and tag vocabulary alone take {overhead} tokens"
            )
        blocks = [(candidate, fit(_block(candidate), per_note)) for candidate in candidates]
        return list(
            batches(
                blocks,
                budget,
                lambda block: estimate_tokens(block[1]),
                sep=_SEPARATOR,
                max_items=self.settings.batch_size,
            )
        )

    # -- writing -----------------------------------------------------------------------------

    def _write(
        self,
        run: Any,
        candidates: list[Candidate],
        answers: dict[str, list[str]],
        checkpoint: Checkpoint,
    ) -> tuple[dict[str, list[str]], list[dict[str, str]]]:
        tagged: dict[str, list[str]] = {}
        conflicts: list[dict[str, str]] = []
        for candidate in candidates:
            if candidate.path not in answers:
                continue  # not answered: stays changed, so a standalone run asks again
            existing = written_tags(candidate.note.frontmatter.get("tags"))
            merged = merge_tags(existing, answers[candidate.path], self.settings.max_tags)
            if merged == existing:
                checkpoint.notes[candidate.path] = candidate.content_hash
                continue
            try:
                result = run.reme.files.update_frontmatter(
                    candidate.path, {"tags": merged}, expected_hash=candidate.content_hash
                )
            except ConflictError as exc:
                conflicts.append({"path": candidate.path, "reason": str(exc)})
                continue
            checkpoint.notes[candidate.path] = result.content_hash
            tagged[candidate.path] = merged
            run.record(f"TAG {candidate.path}")
        return tagged, conflicts

    def _propose(
        self,
        run: Any,
        candidates: list[Candidate],
        answers: dict[str, list[str]],
        checkpoint: Checkpoint,
    ) -> dict[str, str]:
        """``review: queue``: each note's new tags as a TAG proposal; path -> proposal id."""
        api = ReviewApi(run.reme)
        proposals: dict[str, str] = {}
        for candidate in candidates:
            if candidate.path not in answers:
                continue
            existing = written_tags(candidate.note.frontmatter.get("tags"))
            merged = merge_tags(existing, answers[candidate.path], self.settings.max_tags)
            # Seen either way: the note comes back once it changes (a stale proposal included).
            checkpoint.notes[candidate.path] = candidate.content_hash
            if merged == existing:
                continue
            after = update_frontmatter(candidate.text, {"tags": merged}, path=candidate.path)
            added = [t for t in merged if t not in existing]
            proposal = api.propose(
                pipeline=run.name,
                step=self.name,
                run_id=run.id,
                verb="TAG",
                target=candidate.path,
                content=after,
                before=candidate.text,
                base_hash=candidate.content_hash,
                note="add tags: " + ", ".join(added),
                verdict=check_tags(candidate.path, candidate.text, after, merged),
                payload={"tags": merged},
            )
            if proposal.status == "pending":
                proposals[candidate.path] = proposal.id
        return proposals


def _block(candidate: Candidate) -> str:
    note = candidate.note
    head = [f"### {candidate.path}", f"name: {note.name}"]
    if note.description:
        head.append(f"description: {note.description}")
    tags = written_tags(note.frontmatter.get("tags"))
    if tags:
        head.append(f"tags: {', '.join(tags)}")
    return "\n".join(head) + "\n\n" + note.body.strip()


def _messages(
    prompts: Prompts, notes: str, count: int, values: dict[str, str]
) -> list[dict[str, str]]:
    filled = {**values, "notes": notes, "count": str(count)}
    return [
        {"role": "system", "content": prompts.render("system", **filled)},
        {"role": "user", "content": prompts.render("user", **filled)},
    ]


@hookimpl
def register_steps(register: Callable[[type[Step]], None]) -> None:
    """Register the ``auto_tag`` step."""
    register(AutoTagStep)
