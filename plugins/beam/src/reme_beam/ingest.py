"""One conversation into a fresh workspace, session by session, in time order.

``raw``: the configured ``auto_memory`` steps run without a model, so each session is saved as
its transcript (``sessions/<id>.jsonl``, one message per line with its BEAM id) plus a note of
verbatim excerpts; ``excerpt_turns`` and ``excerpt_chars`` are raised to quote every turn whole,
so the note's anchors name exactly the turns it shows and the note holds every word of them (the
named configs index the notes only, ``index.exclude: sessions/**``, so each message is indexed
once: the note is then its only searchable copy). No LLM call, whatever ``components.llm`` says (a raw workspace can
still be questioned by a model).

``memory``: the same steps with the pipeline's model (``pipelines.auto_memory.llm``, else
``components.llm``): one summarised note per session and day. With ``dream``, the ``dream``
pipeline runs after each day's sessions, as the nightly schedule would.

Steps run in-process rather than through ``Reme.run``: the benchmark needs no revertable history,
and raw mode must run ``auto_memory`` without the model that QA may use.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from itertools import groupby
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from reme_beam.sessions import Session
from reme_beam.usage import USAGE_KEYS, snapshot, spent
from reme_core.api import ComponentSelection, ConfigError, Llm, PipelineRun, resolve_component

if TYPE_CHECKING:
    from reme_core.api import Reme

Mode = Literal["raw", "memory"]
RAW_EXCERPT_TURNS = 1_000_000
"""Raw notes quote every turn (auto_memory quotes 40 and links the rest by default)."""
RAW_EXCERPT_CHARS = 1_000_000_000
"""... each one whole (auto_memory cuts a quoted turn at 600 characters by default)."""


class IngestReport(BaseModel):
    mode: Mode
    sessions: int = 0
    messages: int = 0
    notes: list[str] = Field(default_factory=list)
    dream_runs: int = 0
    seconds: float = 0.0
    usage: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    warnings: list[str] = Field(default_factory=list)


def ingest(
    reme: Reme, sessions: Iterable[Session], mode: Mode, dream: bool = False
) -> IngestReport:
    """Write every session through ``auto_memory`` (and ``dream``), then index what changed."""
    report = IngestReport(mode=mode)
    started = time.perf_counter()
    memory_llm = reme.llm_for("auto_memory") if mode == "memory" else None
    if mode == "memory" and memory_llm is None:
        raise ConfigError(
            "memory mode needs a model: set components.llm (or pipelines.auto_memory.llm)"
        )
    dream_llm = reme.llm_for("dream") if dream else None
    if dream and (mode != "memory" or dream_llm is None):
        raise ConfigError("dream needs memory mode and a model (components.llm)")
    raw = {"excerpt_turns": RAW_EXCERPT_TURNS, "excerpt_chars": RAW_EXCERPT_CHARS}
    patch = {"auto_memory": raw} if mode == "raw" else {}
    before = snapshot([memory_llm, dream_llm])
    for _, day in groupby(sessions, key=lambda s: s.date):
        for session in day:
            params = {"session_id": session.id, "messages": session.messages}
            out = run_steps(reme, "auto_memory", params, memory_llm, patch)
            report.sessions += 1
            report.messages += len(session.messages)
            report.notes += [n for n in out.get("changed", []) if n not in report.notes]
            report.warnings += [str(w) for w in out.get("warnings", [])]
        if dream:
            run_steps(reme, "dream", {}, dream_llm)
            report.dream_runs += 1
    reme.index()  # vectors of everything written (keyword indexing happened on each write)
    report.usage = spent(before, snapshot([memory_llm, dream_llm]))
    report.seconds = time.perf_counter() - started
    return report


def run_steps(
    reme: Reme,
    pipeline: str,
    params: dict[str, Any],
    llm: Llm | None,
    patch: dict[str, dict[str, Any]] | None = None,
    default_steps: list[str] | None = None,
) -> dict[str, Any]:
    """Run pipeline ``pipeline``'s configured steps with ``llm``; ``patch`` adds settings to
    the steps it names. A pipeline that is not configured runs ``default_steps`` (by name, with
    default settings) when given. Returns what the steps added to the state."""
    config = reme.settings.pipelines.get(pipeline)
    if config is not None:
        selections = list(config.steps)
    elif default_steps:
        selections = [ComponentSelection(name=name) for name in default_steps]
    else:
        raise ConfigError(f"pipelines.{pipeline}: not configured")
    run = PipelineRun(reme=reme, name=pipeline, llm=llm)
    state = dict(params)
    outputs: dict[str, Any] = {}
    for i, selection in enumerate(selections):
        extra = (patch or {}).get(selection.name)
        if extra:
            selection = ComponentSelection(
                name=selection.name, settings={**selection.settings, **extra}
            )
        cls, settings = resolve_component(
            reme.plugins, "step", selection, f"pipelines.{pipeline}.steps[{i}]"
        )
        step = cls(settings, reme.context)
        try:
            changes = step.run(run, state) or {}
        finally:
            step.close()
        state.update(changes)
        outputs.update(changes)
    return outputs
