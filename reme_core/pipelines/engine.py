"""Runs a configured pipeline: each step in order over one shared state, timed and accounted."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from reme_core.components import LlmUsage
from reme_core.errors import ConfigError, RemeError
from reme_core.pipelines.run import PipelineRun
from reme_core.settings import resolve_component
from reme_core.workspace.history import HistoryError

if TYPE_CHECKING:
    from reme_core.runtime import Reme


class StepReport(BaseModel):
    name: str
    seconds: float
    keys: list[str]
    """The state keys this step added or changed."""


class PipelineResult(BaseModel):
    pipeline: str
    params: dict[str, Any]
    """The params as given, with lists and mappings summarised (``[12 items]``): a transcript is
    not echoed back, nor written into the history's commit messages."""
    outputs: dict[str, Any] = Field(default_factory=dict)
    """Everything the steps added to the state (params excluded)."""
    steps: list[StepReport] = Field(default_factory=list)
    seconds: float = 0.0
    history: str | None = None
    """The history commit holding this run's file changes (``reme revert`` takes it); None when
    the run changed no file."""
    history_error: str | None = None
    usage: LlmUsage = Field(default_factory=LlmUsage)
    """LLM calls and tokens this run spent (zero when no step used the model)."""
    verbs: list[str] = Field(default_factory=list)
    """What the steps report having done (``CREATE digest/wiki/x.md``), as in the history."""
    run_id: str | None = None
    """This run's id; proposals it queued for review (``review: queue``) carry it."""


class PipelineError(RemeError):
    """A pipeline is unknown, or one of its steps failed (the message names the step)."""


def run_pipeline(reme: Reme, name: str, params: dict[str, Any]) -> PipelineResult:
    """Run pipeline ``name`` with ``params`` as the initial state."""
    with reme.history.batch():  # the run's own commit holds its steps' writes
        return _run_pipeline(reme, name, params)


def _run_pipeline(reme: Reme, name: str, params: dict[str, Any]) -> PipelineResult:
    pipelines = reme.settings.pipelines
    if name not in pipelines:
        available = ", ".join(sorted(pipelines)) or "none"
        raise PipelineError(f"unknown pipeline {name!r} (configured: {available})")
    state: dict[str, Any] = dict(params)
    result = PipelineResult(pipeline=name, params=_echo(params))
    started = time.perf_counter()
    steps = [
        (
            selection,
            *resolve_component(reme.plugins, "step", selection, f"pipelines.{name}.steps[{i}]"),
        )
        for i, selection in enumerate(pipelines[name].steps)
    ]
    if pipelines[name].review == "queue":
        _check_reviewable(name, [(selection.name, cls) for selection, cls, _ in steps])
    history_error = _snapshot(reme)
    run = PipelineRun(reme=reme, name=name, llm=reme.llm_for(name))
    result.run_id = run.id
    usage_before = run.llm.usage.model_copy() if run.llm is not None else LlmUsage()
    for selection, cls, settings in steps:
        step = cls(settings, reme.context)
        t0 = time.perf_counter()
        try:
            changes = step.run(run, state)
        except ConfigError:
            raise  # a configuration problem (no model set): exit code 2, message as is
        except RemeError as exc:
            # Files earlier steps wrote stay written; commit them under this run's name rather
            # than leaving them to the next run's "changes made outside reme" snapshot.
            if history_error is None:
                _record(
                    reme, _commit_message(name, params, [*run.verbs, f"FAILED at {selection.name}"])
                )
            raise PipelineError(f"{name}: step {selection.name!r} failed: {exc}") from exc
        finally:
            step.close()
        if not isinstance(changes, dict):
            raise PipelineError(
                f"{name}: step {selection.name!r} returned {type(changes).__name__}, not a dict"
            )
        changes = {key: _plain(value) for key, value in changes.items()}
        state.update(changes)
        result.outputs.update(changes)
        result.steps.append(
            StepReport(name=selection.name, seconds=time.perf_counter() - t0, keys=sorted(changes))
        )
    result.seconds = time.perf_counter() - started
    if run.llm is not None:
        # Cumulative counters on a shared model: concurrent runs of one pipeline would each
        # count the other's calls. The server issue serialises runs per pipeline.
        result.usage = run.llm.usage.since(usage_before)
    result.verbs = list(run.verbs)
    if history_error is None:
        history_error = _record(reme, _commit_message(name, params, run.verbs), result)
    result.history_error = history_error
    return result


def _check_reviewable(name: str, steps: list[tuple[str, type]]) -> None:
    """``review: queue`` needs every step to honour it (propose, or change no note)."""
    unable = [step for step, cls in steps if not getattr(cls, "supports_review", False)]
    if unable:
        raise ConfigError(
            f"pipelines.{name}.review: queue, but step(s) {', '.join(map(repr, unable))} change "
            "notes without proposing them for review; use review: apply for this pipeline "
            "(steps that can queue: dream_extract, dream_integrate, dream_finish, auto_tag)"
        )


def _snapshot(reme: Reme) -> str | None:
    """Commit what changed since the last commit (reme's own writes, and edits made outside
    reme, as separate entries), so the run's commit holds only the run's changes; return an
    error message instead of raising."""
    try:
        reme.history.snapshot()
    except HistoryError as exc:
        return str(exc)
    return None


def _record(reme: Reme, message: str, result: PipelineResult | None = None) -> str | None:
    """Commit the workspace's changes to its history; return an error message instead of raising
    (a run whose files are written must not be reported as failed because git is missing)."""
    try:
        run = reme.history.record(message)
    except HistoryError as exc:
        return str(exc)
    if result is not None:
        result.history = run
    return None


def _commit_message(name: str, params: dict[str, Any], verbs: list[str]) -> str:
    """``reme run NAME (k=v, ...)`` then one line per verb, so ``reme history`` says what
    each run did."""
    summary = ", ".join(f"{k}={_short(v)}" for k, v in params.items())
    message = f"reme run {name}" + (f" ({summary})" if summary else "")
    if verbs:
        message += "\n\n" + "\n".join(verbs)
    return message


def _short(value: Any) -> str:
    if isinstance(value, list | tuple | dict):
        return _summary(value)
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _summary(value: list[Any] | tuple[Any, ...] | dict[Any, Any]) -> str:
    # Structured params carry content (messages may hold secrets that steps redact); only their
    # size is repeated.
    return f"{{{len(value)} keys}}" if isinstance(value, dict) else f"[{len(value)} items]"


def _echo(params: dict[str, Any]) -> dict[str, Any]:
    return {
        key: _summary(value) if isinstance(value, list | tuple | dict) else value
        for key, value in params.items()
    }


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value
