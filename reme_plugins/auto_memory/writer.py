"""One auto_memory call for one session, run under the session's lock.

Order of work, chosen so that nothing is lost when something fails:

1. merge the (redacted) messages into ``sessions/<id>.jsonl`` and save it;
2. with a model, summarise the notes that earlier calls could only write as verbatim excerpts;
3. with a model, defer: while fewer than ``min_pending_turns`` turns are pending and the oldest
   is younger than ``flush_after_minutes`` (and the call does not ask to flush), stop here; the
   turns wait in the transcript for a later call, which summarises them all in one batch;
4. turn the pending lines (after the cursor) into notes, one day at a time and in batches that
   fit the prompt budget; the cursor moves past a batch only once its note is written.

A model failure raises; the transcript is already saved and the cursor still points before the
failed batch, so the next call (with or without new messages) processes those turns.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reme_core.api import AgentTask, LlmError, Prompts, dump_note, note_date, update_frontmatter
from reme_plugins.auto_memory import note as notes
from reme_plugins.auto_memory.cursor import SessionCursor, load_cursor, save_cursor
from reme_plugins.auto_memory.draft import NoteDraft, check_draft
from reme_plugins.auto_memory.facts import merge_facts
from reme_plugins.auto_memory.note import Labels, NoteBody, NoteState, read_note
from reme_plugins.auto_memory.prompt import Context, PromptBuilder
from reme_plugins.auto_memory.request import AutoMemoryRequest, AutoMemorySettings
from reme_plugins.auto_memory.session_images import image_items, names_images
from reme_plugins.auto_memory.transcript import (
    AutoMemoryError,
    Entry,
    Transcript,
    load_transcript,
    save_transcript,
    transcript_path,
)

if TYPE_CHECKING:
    from reme_core.api import PipelineRun

STATUS_ORDER = ("written", "updated", "unsummarised", "trivial", "deferred", "unchanged")
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 600


@dataclass
class Outcome:
    path: str | None
    date: str
    status: str
    turns: int

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "date": self.date, "status": self.status, "turns": self.turns}


@dataclass
class SessionWriter:
    run: PipelineRun
    request: AutoMemoryRequest
    settings: AutoMemorySettings
    prompts: Prompts
    outcomes: list[Outcome] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reme = self.run.reme
        self.sid = self.request.session_id
        self.source = transcript_path(self.sid)
        self.tz = self.reme.settings.tzinfo()
        self.labels = Labels.from_prompts(self.prompts)
        self.now = self.request.now or dt.datetime.now(dt.UTC)
        self.hint = self.request.hint
        # Both modes need the pipeline's model (the agent wrapper runs on it); without one the
        # turns are kept as verbatim excerpts, to be summarised once a model is configured.
        self.uses_model = self.run.llm is not None

    # -- the call --------------------------------------------------------------------------

    def process(self) -> dict[str, Any]:
        transcript = load_transcript(self.reme, self.sid)
        added = transcript.merge(self.request.messages)
        if added:
            save_transcript(self.reme, transcript, added)
            self.run.record(f"APPEND {self.source}")
        cursor = load_cursor(self.reme.state_dir, self.sid)
        # A transcript shortened by hand cannot keep lines the cursor counted.
        cursor.line = min(cursor.line, transcript.line_count)
        # A deferred call's hint (Claude Code's project folder) serves the call that summarises.
        self.hint = self.hint or cursor.hint
        self.builder = PromptBuilder(
            self.prompts, self.labels, self.settings, self.tz, self.sid, self.source, self.hint
        )
        if self.uses_model:
            for path in list(cursor.unsummarised):
                self._summarise(transcript, cursor, path)
        pending = [e for e in transcript.entries if e.line > cursor.line]
        if pending:
            # Recorded before any model call, so turns a failed call leaves are flushed later
            # by the idle job too, not only by the session's next call.
            self._mark_pending(cursor, pending)
            if self._defer(pending, cursor):
                return self._result(len(added), pending=len(pending))
        for date, entries in self._days(transcript, pending):
            while entries:
                entries = self._next_batch(transcript, cursor, date, entries)
        if cursor.line < transcript.line_count or cursor.pending_since is not None:
            cursor.line = transcript.line_count  # trailing lines that are not messages
            cursor.pending_since = cursor.pipeline = cursor.hint = None
            save_cursor(self.reme.state_dir, self.sid, cursor)
        return self._result(len(added))

    def _mark_pending(self, cursor: SessionCursor, pending: list[Entry]) -> None:
        since = min((e.when for e in pending if e.when is not None), default=self.now)
        marked = (since, self.run.name, self.hint)
        if (cursor.pending_since, cursor.pipeline, cursor.hint) != marked:
            cursor.pending_since, cursor.pipeline, cursor.hint = marked
            save_cursor(self.reme.state_dir, self.sid, cursor)

    def _defer(self, pending: list[Entry], cursor: SessionCursor) -> bool:
        """Whether the pending turns wait for more (only a model call is worth batching)."""
        if self.request.flush or not self.uses_model:
            return False
        if len(pending) >= self.settings.min_pending_turns:
            return False
        assert cursor.pending_since is not None
        age = self.now - cursor.pending_since
        return age < dt.timedelta(minutes=self.settings.flush_after_minutes)

    def _next_batch(
        self, transcript: Transcript, cursor: SessionCursor, date: dt.date, entries: list[Entry]
    ) -> list[Entry]:
        """Process the next batch of ``entries`` for ``date``; return the rest."""
        path = notes.find_session_note(self.reme, date, self.sid)
        if not self.uses_model:
            batch, rest = entries, []
            path = self._excerpt(date, batch, path)
            cursor.mark_unsummarised(path, [e.line for e in batch])
        else:
            state = self._read_note(path) if path else None
            batch, rest = self._take(transcript, date, entries, state, path)
            self._model_batch(transcript, date, batch, state, path)
        cursor.line = batch[-1].line
        save_cursor(self.reme.state_dir, self.sid, cursor)
        return rest

    def _days(
        self, transcript: Transcript, pending: list[Entry]
    ) -> list[tuple[dt.date, list[Entry]]]:
        """Pending entries in runs of one day: the ``date`` param, else each turn's time (or the
        time it was saved; a hand-written line takes its neighbour's day), else today."""
        if not pending:
            return []
        if self.request.date is not None:
            return [(self.request.date, pending)]
        timed = [e.when.astimezone(self.tz).date() for e in transcript.entries if e.when]
        current = timed[0] if timed else dt.datetime.now(self.tz).date()
        day_of: dict[int, dt.date] = {}
        for entry in transcript.entries:
            if entry.when is not None:
                current = entry.when.astimezone(self.tz).date()
            day_of[entry.line] = current
        runs: list[tuple[dt.date, list[Entry]]] = []
        for entry in pending:
            day = day_of[entry.line]
            if runs and runs[-1][0] == day:
                runs[-1][1].append(entry)
            else:
                runs.append((day, [entry]))
        return runs

    # -- model batches -----------------------------------------------------------------------

    def _take(
        self,
        transcript: Transcript,
        date: dt.date,
        entries: list[Entry],
        state: NoteState | None,
        path: str | None,
    ) -> tuple[list[Entry], list[Entry]]:
        """As many entries as fit the prompt budget next to the fixed part (at least one)."""
        context = self.builder.context(transcript, entries)
        agentic = self.settings.mode == "agentic"
        fixed = self.builder.messages(
            date, state, context, [], note_path=(path or "") if agentic else None
        )
        count = self.builder.fits(fixed, entries)
        return entries[:count], entries[count:]

    def _model_batch(
        self,
        transcript: Transcript,
        date: dt.date,
        batch: list[Entry],
        state: NoteState | None,
        path: str | None,
    ) -> None:
        context = self.builder.context(transcript, batch)
        if self.settings.mode == "agentic":
            self._agentic(date, batch, context, state, path)
        else:
            self._structured(date, batch, context, state)

    def _structured(
        self, date: dt.date, batch: list[Entry], context: Context, state: NoteState | None
    ) -> None:
        llm = self.run.require_llm("auto_memory")
        system, user = self.builder.messages(date, state, context, batch)
        try:
            draft = llm.structured(
                [{"role": "system", "content": system}, {"role": "user", "content": user}],
                NoteDraft,
                max_retries=self.settings.max_retries,
            )
        except LlmError as exc:
            raise self._pending_error(batch, exc) from exc
        if draft.trivial:
            self._outcome(state.path if state else None, date, "trivial", batch)
            return
        existing = state.body.facts() if state else []
        recorded = state.body.anchored("timeline") if state else set()
        shown = [*context.entries, *batch]
        checked = check_draft(draft, batch, shown, len(existing), recorded)
        self.warnings += checked.warnings
        fields = {
            "name": notes.one_line(draft.name)[:MAX_NAME_CHARS],
            "description": notes.one_line(draft.description)[:MAX_DESCRIPTION_CHARS],
        }
        body = state.body if state else NoteBody.new(fields["name"], self.labels)
        body.set_head(fields["name"], draft.summary)
        body.set_facts(merge_facts(existing, checked.facts, self.source))
        timeline = [
            notes.timeline_item(text, e, self.source, self.tz) for e, text in checked.timeline
        ] + image_items(batch, self.source, self.tz)  # every image, linked to its turn
        body.append("timeline", timeline)
        if state is None:
            path = notes.new_note_path(
                self.reme, date, notes.slug(draft.name) or notes.slug(self.sid)
            )
            text = dump_note({**fields, **self._provenance(date)}, body.render())
            self._write(path, text, None, date, batch)
        else:
            missing = {k: v for k, v in self._provenance(date).items() if k not in state.front}
            text = update_frontmatter(
                state.head + body.render(), {**fields, **missing}, path=state.path
            )
            self._write(state.path, text, state, date, batch)

    def _agentic(
        self,
        date: dt.date,
        batch: list[Entry],
        context: Context,
        state: NoteState | None,
        path: str | None,
    ) -> None:
        path = path or notes.new_note_path(self.reme, date, notes.slug(self.sid))
        instructions, prompt = self.builder.messages(date, state, context, batch, note_path=path)
        task = AgentTask(
            instructions=instructions, prompt=prompt, max_turns=self.settings.agent_max_turns
        )
        result = self.run.agent(task, [path])
        if result.stopped == "error":
            raise self._pending_error(batch, LlmError(result.error or "the agent failed"))
        after = self._read_note(path)
        if after is None or (state is not None and after.hash == state.hash):
            if result.answer.strip().upper().startswith("TRIVIAL"):
                self._outcome(state.path if state else None, date, "trivial", batch)
                return
            raise AutoMemoryError(
                f"the agent did not write {path} (answer: {result.answer[:200]!r}); "
                f"{self._pending_lines(batch)} stay pending"
            )
        problem = self._agent_problem(state, after)
        if problem:
            self._restore(path, state)
            raise AutoMemoryError(
                f"the agent's note {path} was rejected and restored: {problem}; "
                f"{self._pending_lines(batch)} stay pending"
            )
        missing = {
            k: v for k, v in self._provenance(date).items() if after.front.get(k) in (None, "")
        }
        if missing:
            self.reme.files.update_frontmatter(path, missing, expected_hash=after.hash)
        self._done(path, state is None, date, batch)

    def _agent_problem(self, before: NoteState | None, after: NoteState) -> str | None:
        for key in ("name", "description"):
            if not str(after.front.get(key) or "").strip():
                return f"frontmatter has no {key}"
        if str(after.front.get("session_id", self.sid)) != self.sid:
            return f"session_id is not {self.sid}"
        if before is not None:
            old, new = before.body.timeline_text(), after.body.timeline_text()
            if old.strip() and not new.startswith(old.rstrip("\n")):
                return "existing timeline lines were changed (the timeline is append-only)"
        return None

    def _restore(self, path: str, before: NoteState | None) -> None:
        current = self._read_note(path)
        if current is None:
            return
        if before is None:
            self.reme.files.delete(path, expected_hash=current.hash)
        else:
            self.reme.files.write(path, before.text, expected_hash=current.hash)

    # -- excerpts (no model) and summarising them later -----------------------------------------

    def _excerpt(self, date: dt.date, batch: list[Entry], path: str | None) -> str:
        state = self._read_note(path) if path else None
        body = state.body if state else None
        if body is None:
            first = next((e.content for e in batch if e.role == "user"), batch[0].content)
            words = " ".join(first.split()[:8])
            name = self.prompts.render("excerpt_name", first_words=words[:80])
            body = NoteBody.new(name, self.labels)
        recorded = body.anchored("excerpt")
        shown_before = len(recorded)
        spoken = [  # and the tool results that returned images, linked where they are kept
            e
            for e in batch
            if (e.role in ("user", "assistant") or names_images(e.content))
            and e.line not in recorded
        ]
        room = max(self.settings.excerpt_turns - shown_before, 0)
        lines: list[str] = []
        for entry in spoken[:room]:
            lines += notes.excerpt_item(entry, self.source, self.tz, self.settings.excerpt_chars)
        hidden = spoken[room:]
        if hidden:
            lines.append(
                self.prompts.render(
                    "excerpt_more",
                    count=len(hidden),
                    source=self.source,
                    first=hidden[0].line,
                    last=hidden[-1].line,
                ).rstrip("\n")
                + "\n"
            )
        body.append("excerpt", lines, banner=self.labels.banner)
        body.ensure("excerpt")
        if state is None:
            front = {
                "name": notes.one_line(name),
                "description": notes.one_line(
                    self.prompts.render(
                        "excerpt_description", session_id=self.sid, date=date.isoformat()
                    )
                ),
                **self._provenance(date),
                "summarised": False,
            }
            path = notes.new_note_path(self.reme, date, notes.slug(words) or notes.slug(self.sid))
            self._write(path, dump_note(front, body.render()), None, date, batch, "unsummarised")
            return path
        text = update_frontmatter(
            state.head + body.render(), {"summarised": False}, path=state.path
        )
        self._write(state.path, text, state, date, batch, "unsummarised")
        return state.path

    def _summarise(self, transcript: Transcript, cursor: SessionCursor, path: str) -> None:
        """Summarise the lines an excerpt note holds, then drop its excerpt section."""
        state = self._read_note(path)
        if state is None:
            cursor.unsummarised.pop(path, None)  # the note was deleted or moved: let it go
            save_cursor(self.reme.state_dir, self.sid, cursor)
            return
        date = note_date(path, state.front.get("date")) or dt.datetime.now(self.tz).date()
        wanted = set(cursor.unsummarised[path])
        entries = [e for e in transcript.entries if e.line in wanted]
        if not entries:  # the transcript lost those lines: nothing left to summarise them from
            cursor.unsummarised.pop(path, None)
            save_cursor(self.reme.state_dir, self.sid, cursor)
            return
        while entries:
            batch, entries = self._take(transcript, date, entries, state, path)
            self._model_batch(transcript, date, batch, state, path)
            cursor.mark_summarised(path, [e.line for e in batch])
            save_cursor(self.reme.state_dir, self.sid, cursor)
            state = self._read_note(path)
            if state is None:
                break
        if state is not None:
            self._finish_excerpt(state)
        cursor.unsummarised.pop(path, None)
        save_cursor(self.reme.state_dir, self.sid, cursor)

    def _finish_excerpt(self, state: NoteState) -> None:
        body = state.body
        if body.section("excerpt") is None and state.front.get("summarised") is not False:
            return
        if _excerpt_only(body):
            # Only an excerpt, and the model found nothing worth keeping: a trivial session
            # has no note (the history keeps the excerpt; `reme revert` brings it back).
            self.reme.files.delete(state.path, expected_hash=state.hash)
            self.run.record(f"DELETE {state.path}")
            self.changed.append(state.path)
            return
        body.drop("excerpt")
        text = update_frontmatter(state.head + body.render(), {}, ["summarised"], path=state.path)
        self.reme.files.write(state.path, text, expected_hash=state.hash)
        if state.path not in self.changed:
            self.changed.append(state.path)
            self.run.record(f"UPDATE {state.path}")

    # -- files -----------------------------------------------------------------------------

    def _provenance(self, date: dt.date) -> dict[str, Any]:
        return {"session_id": self.sid, "date": date, "source": f"[[{self.source}]]"}

    def _read_note(self, path: str | None) -> NoteState | None:
        return read_note(self.reme, path, self.labels)

    def _write(
        self,
        path: str,
        text: str,
        state: NoteState | None,
        date: dt.date,
        batch: list[Entry],
        status: str | None = None,
    ) -> None:
        # expected_hash: an edit made by hand since the note was read is a conflict, not lost.
        self.reme.files.write(path, text, expected_hash=state.hash if state else None)
        self._done(path, state is None, date, batch, status)

    def _done(
        self, path: str, created: bool, date: dt.date, batch: list[Entry], status: str | None = None
    ) -> None:
        if path not in self.changed:
            self.changed.append(path)
            self.run.record(f"{'CREATE' if created else 'UPDATE'} {path}")
        self._outcome(path, date, status or ("written" if created else "updated"), batch)

    def _outcome(self, path: str | None, date: dt.date, status: str, batch: list[Entry]) -> None:
        self.outcomes.append(Outcome(path, date.isoformat(), status, len(batch)))

    def _pending_lines(self, batch: list[Entry]) -> str:
        return f"lines {batch[0].line}-{batch[-1].line} of {self.source}"

    def _pending_error(self, batch: list[Entry], exc: LlmError) -> LlmError:
        return LlmError(
            f"auto_memory could not summarise {self._pending_lines(batch)}; they are saved and "
            f"stay pending for the next call: {exc}"
        )

    def _result(self, added: int, pending: int = 0) -> dict[str, Any]:
        """``pending``: turns left waiting by a deferred call (0 otherwise)."""
        statuses = [o.status for o in self.outcomes] or ["deferred" if pending else "unchanged"]
        status = next(s for s in STATUS_ORDER if s in statuses)
        notes_written = [o for o in self.outcomes if o.path]
        return {
            "session_id": self.sid,
            "transcript": self.source,
            "added": added,
            "turns": sum(o.turns for o in self.outcomes),
            "status": status,
            "note": notes_written[-1].path if notes_written else None,
            "notes": [o.as_dict() for o in self.outcomes],
            "changed": list(self.changed),
            "redacted": dict(self.request.redacted),
            "warnings": list(self.warnings),
            "deferred": bool(pending),
            "pending": pending,
        }


def _excerpt_only(body: NoteBody) -> bool:
    """Nothing in the note but its title and the excerpt: no summary, facts or other sections."""
    head = [line for line in body.head if line.strip()]
    return len(head) <= 1 and all(s.key == "excerpt" for s in body.sections)
