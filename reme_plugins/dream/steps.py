"""The dream steps: ``dream_extract``, ``dream_integrate``, ``dream_finish`` (then ``auto_tag``).

Params (state): ``date`` (``YYYY-MM-DD``: only that day's notes; default every unprocessed
day) and ``dry_run`` (decide and verify, write and checkpoint nothing). Units travel between
the steps as plain dicts. ``dream_finish`` leaves ``changed`` (the digest nodes written) for
``auto_tag``.

With ``pipelines.dream.review: queue`` dream_integrate writes nothing: each verified change
becomes a proposal (``proposals`` in the outputs) for ``reme review``; units review already
holds (a pending proposal, a rejection with the same sources) are left out by dream_extract.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Set
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError

from reme_core.api import ComponentSettings, ConfigError, Step, hookimpl, named_lock

from .agentic import AgentIntegration
from .checkpoint import (
    checkpoint_path,
    forget_notes,
    load_checkpoint,
    record_run,
    save_checkpoint,
)
from .extract import extract_units
from .integrate import Integrator
from .review import DreamReviewer, held_by_review, proposer
from .units import DreamError, DreamParams, DreamUnit, UnitOutcome

LOCK = "dream"
"""Held while a step reads or writes the checkpoint or the digest, so two runs do not mix."""
PROMPTS = ("reme_plugins", "dream")


def _models(state: dict[str, Any], key: str, model: type[Any]) -> list[Any]:
    value = state.get(key, [])
    if not isinstance(value, list):
        raise DreamError(f"state {key!r} must be a list, got {type(value).__name__}")
    try:
        return [model.model_validate(item) for item in value]
    except ValidationError as exc:
        raise DreamError(f"state {key!r} is malformed: {exc.errors()[0]['msg']}") from None


class DreamExtract(Step):
    """Units from the daily notes changed since their last consolidation, plus queued units."""

    name: ClassVar[str] = "dream_extract"
    supports_review: ClassVar[bool] = True  # writes no note

    class Settings(ComponentSettings):
        max_units: int = Field(20, ge=1, le=1000)
        """Units integrated per run at most; the rest wait in the queue."""
        batch_tokens: int = Field(6000, ge=500, le=200_000)
        """Token budget of one extraction prompt's notes (a longer note is sent in parts)."""
        extract_retries: int = Field(1, ge=0, le=10)
        """Extra attempts at a batch after a model error."""
        output_retries: int | None = Field(None, ge=0, le=10)
        """Retries of invalid structured output inside one call; None = the model's default."""

    settings: Settings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        params = DreamParams.from_state(state)
        llm = run.require_llm("dream")
        prompts = run.prompts(*PROMPTS)
        reme = run.reme
        with named_lock(reme.state_dir, LOCK):
            checkpoint = load_checkpoint(reme.state_dir)
        # Units review holds are left out in either mode: switching back to `apply` must not
        # apply what a person rejected.
        reviewed = held_by_review(reme, checkpoint, run.name)
        report = extract_units(
            reme,
            llm,
            prompts,
            checkpoint,
            day=params.date,
            max_units=self.settings.max_units,
            batch_tokens=self.settings.batch_tokens,
            retries=self.settings.extract_retries,
            output_retries=self.settings.output_retries,
            reviewed=reviewed,
        )
        return {
            "units": [u.model_dump(mode="json") for u in report.units],
            "deferred": [u.model_dump(mode="json") for u in report.deferred],
            "extracted": report.extracted,
            "stale": report.stale,
            "pending": report.pending,
            "extract_failures": [f.model_dump(mode="json") for f in report.failures],
            "problems": report.problems,
            "reviewed": report.reviewed,
        }


class DreamIntegrate(Step):
    """Each unit into one digest node, applied and verified by the core."""

    name: ClassVar[str] = "dream_integrate"
    supports_review: ClassVar[bool] = True
    reviewer: ClassVar[DreamReviewer] = DreamReviewer()
    """Verifies this step's proposals again when they are approved."""

    class Settings(ComponentSettings):
        candidates: int = Field(5, ge=1, le=50)
        """Digest nodes recalled per unit and shown to the model."""
        candidate_tokens: int = Field(1500, ge=100, le=100_000)
        """Token budget of each candidate's text in the prompt; a longer node is shown up to it
        with a line saying how many lines are left out (edits still apply to the whole file)."""
        max_decision_retries: int = Field(2, ge=0, le=10)
        """Extra attempts after a rejected decision or a model error."""
        output_retries: int | None = Field(None, ge=0, le=10)
        """Retries of invalid structured output inside one call; None = the model's default."""
        mode: Literal["structured", "agentic"] = "structured"
        """structured: the model answers with a decision; agentic: the configured agent wrapper
        edits the node (confined to the candidates and the unit's bucket) and names its verb;
        its edit is put back and goes through the same verifier as a decision."""
        agent_max_turns: int = Field(12, ge=1, le=200)

    settings: Settings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        params = DreamParams.from_state(state)
        units: list[DreamUnit] = _models(state, "units", DreamUnit)
        agent = self._agent(run, params) if self.settings.mode == "agentic" else None
        integrator = Integrator(
            reme=run.reme,
            llm=run.llm if agent is not None else run.require_llm("dream"),
            agent=agent,
            prompts=run.prompts(*PROMPTS),
            candidates=self.settings.candidates,
            candidate_tokens=self.settings.candidate_tokens,
            retries=self.settings.max_decision_retries,
            output_retries=self.settings.output_retries,
            dry_run=params.dry_run,
            record=run.record,
            propose=(
                proposer(run.reme, pipeline=run.name, step=self.name, run_id=run.id)
                if run.review == "queue"
                else None
            ),
        )
        outcomes: list[UnitOutcome] = []
        written: list[str] = []
        with named_lock(run.reme.state_dir, LOCK):
            for unit in units:
                outcome, path = integrator.integrate(unit)
                outcomes.append(outcome)
                if path is not None and path not in written:
                    written.append(path)
        return {
            "decisions": [o.model_dump(mode="json") for o in outcomes],
            "written": written,
            "proposals": [o.proposal for o in outcomes if o.result == "proposed"],
            "failed": [
                {"unit": o.name, "sources": o.sources, "reason": o.reason}
                for o in outcomes
                if not o.succeeded
            ],
        }

    def _agent(self, run: Any, params: DreamParams) -> AgentIntegration:
        if run.reme.agent_wrapper is None:
            raise ConfigError("dream mode agentic needs components.agent_wrapper (e.g. toolloop)")
        if params.dry_run:
            # The agent edits files to decide (they are put back): that is not "write nothing".
            raise DreamError(
                "--dry-run needs mode structured: in mode agentic the agent edits files"
            )
        return AgentIntegration(
            reme=run.reme,
            prompts=run.prompts(*PROMPTS),
            run_agent=run.agent,
            max_turns=self.settings.agent_max_turns,
        )


class DreamFinish(Step):
    """Checkpoint what was consolidated; hand the changed nodes to auto_tag."""

    name: ClassVar[str] = "dream_finish"
    supports_review: ClassVar[bool] = True  # writes no note

    @classmethod
    def forget_paths(cls, state_dir: Path, paths: Set[str]) -> list[str]:
        """Purged notes leave the checkpoint (``checkpoint.forget_notes``)."""
        with named_lock(state_dir, LOCK):
            return (
                [checkpoint_path(state_dir).relative_to(state_dir).as_posix()]
                if forget_notes(state_dir, paths)
                else []
            )

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        params = DreamParams.from_state(state)
        written = [p for p in state.get("written", []) if isinstance(p, str)]
        if params.dry_run:
            return {"changed": [], "checkpoint": {"saved": False, "reason": "dry run"}}
        units = {u.id: u for u in _models(state, "units", DreamUnit)}
        outcomes: list[UnitOutcome] = _models(state, "decisions", UnitOutcome)
        extracted = state.get("extracted", {})
        if not isinstance(extracted, dict):
            raise DreamError("state 'extracted' must map note paths to hashes")
        reme = run.reme
        now = dt.datetime.now(reme.settings.tzinfo()).isoformat(timespec="seconds")
        with named_lock(reme.state_dir, LOCK):
            checkpoint = record_run(
                load_checkpoint(reme.state_dir),
                now=now,
                extracted={str(k): str(v) for k, v in extracted.items()},
                outcomes=[o for o in outcomes if o.unit in units],
                units=units,
                deferred=_models(state, "deferred", DreamUnit),
                stale=[str(s) for s in state.get("stale", [])],
            )
            path = save_checkpoint(reme.state_dir, checkpoint)
        return {
            "changed": sorted(set(written)),
            "checkpoint": {
                "saved": True,
                "path": str(path.relative_to(reme.root)),
                "notes": len(extracted),
                "queued": len(checkpoint.queue),
                "failed": sum(q.status == "failed" for q in checkpoint.queue),
            },
        }


@hookimpl
def register_steps(register: Callable[[type[Step]], None]) -> None:
    register(DreamExtract)
    register(DreamIntegrate)
    register(DreamFinish)


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    from .cli import dream_command

    register(dream_command)
