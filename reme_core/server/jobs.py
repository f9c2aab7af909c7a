"""The scheduled jobs on an open workspace: what each does and the one-line summary it records."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from reme_core.server.scheduler import STATE_FILE, Clock, JobResult, Scheduler, utc_now
from reme_core.service.lifecycle import archive_expired

if TYPE_CHECKING:
    from reme_core.runtime import Reme

AUTO_MEMORY_STEP = "auto_memory"
"""The step whose pipelines the ``auto_memory_flush`` job sweeps (``flush: idle``)."""


RESOURCE_PIPELINE = "auto_resource"
"""The pipeline the ``resource_inbox`` job runs over ``resource/``."""


def run_job(reme: Reme, name: str, now: datetime | None = None) -> JobResult:
    """Run job ``name`` (a built-in: ``dream``, ``optimize``, ``auto_memory_flush``,
    ``resource_inbox``, ``expire``; or one of ``server.schedule.pipelines``) on ``reme``; errors
    propagate to the caller, which records them. ``now``: the scheduler's clock."""
    if name == "dream":
        return _dream(reme)
    if name == "optimize":
        return _optimize(reme)
    if name == "auto_memory_flush":
        return _auto_memory_flush(reme, now or utc_now())
    if name == "resource_inbox":
        return _pipeline(reme, RESOURCE_PIPELINE, {})
    if name == "proactive":
        return _pipeline(reme, "proactive", {})
    if name == "expire":
        return _expire(reme, now or utc_now())
    scheduled = reme.settings.server.schedule.pipelines.get(name)
    if scheduled is not None:
        return _pipeline(reme, scheduled.pipeline, dict(scheduled.params))
    raise ValueError(f"unknown scheduled job {name!r}")


def scheduler_for(reme: Reme, clock: Clock = utc_now) -> Scheduler:
    """The scheduler of one served workspace, its state in that workspace's ``.reme/``; jobs
    see the scheduler's clock (``auto_memory_flush`` measures idle time on it)."""
    scheduler = Scheduler(
        reme.settings,
        lambda name: run_job(reme, name, now=scheduler.clock()),
        reme.state_dir / STATE_FILE,
        clock=clock,
    )
    return scheduler


def _dream(reme: Reme) -> JobResult:
    result = reme.run("dream", {})
    out = result.outputs
    details: dict[str, Any] = {
        "changed_notes": _count(out.get("pending")),
        "units": _count(out.get("units")),
        "written": _count(out.get("written")),
        "failed": _count(out.get("failed")) + _count(out.get("extract_failures")),
        "deferred": _count(out.get("deferred")),
        "history": result.history,
        "usage": result.usage.model_dump(),
        "seconds": round(result.seconds, 2),
    }
    usage = result.usage
    summary = (
        f"{details['units']} unit(s) from {details['changed_notes']} changed note(s): "
        f"{details['written']} written, {details['failed']} failed"
    )
    if details["deferred"]:
        summary += f", {details['deferred']} deferred"
    if usage.calls:
        tokens = usage.prompt_tokens + usage.completion_tokens
        summary += f"; {usage.calls} model call(s), {tokens} tokens"
    return JobResult(summary=summary, details=details)


def _optimize(reme: Reme) -> JobResult:
    started = time.perf_counter()
    reme.optimize()
    seconds = time.perf_counter() - started
    with reme.indexer.lock.read():
        keyword = reme.keyword.stats()
    details: dict[str, Any] = {"keyword_index": keyword, "seconds": round(seconds, 2)}
    summary = f"keyword index optimised in {seconds:.1f} s"
    if "chunks" in keyword:
        summary += f" ({keyword['chunks']} chunks)"
    if reme.vectors is not None:
        vectors = reme.vectors.status()
        details["vectors"] = vectors.get("state")
        summary += f"; vectors {vectors.get('state')}"
    return JobResult(summary=summary, details=details)


def _expire(reme: Reme, now: datetime) -> JobResult:
    """Archive the notes that expired (``reme_core.service.lifecycle``), as of the scheduler's
    day in the workspace's zone."""
    report = archive_expired(reme, today=now.astimezone(reme.settings.tzinfo()).date())
    summary = f"{len(report.archived)} expired note(s) archived"
    if report.invalid:
        summary += f"; {len(report.invalid)} with an expires: that cannot be read"
    return JobResult(summary=summary, details=report.model_dump(mode="json"))


def _pipeline(reme: Reme, pipeline: str, params: dict[str, Any]) -> JobResult:
    """Any configured pipeline: its outputs' sizes, history commit, model usage."""
    result = reme.run(pipeline, params)
    sizes = {key: _count(value) for key, value in result.outputs.items() if _count(value)}
    usage = result.usage
    details: dict[str, Any] = {
        "pipeline": pipeline,
        "outputs": sizes,
        "history": result.history,
        "usage": usage.model_dump(),
        "seconds": round(result.seconds, 2),
    }
    shown = ", ".join(f"{count} {key}" for key, count in sizes.items()) or "nothing to do"
    summary = f"{pipeline}: {shown}"
    if usage.calls:
        tokens = usage.prompt_tokens + usage.completion_tokens
        summary += f"; {usage.calls} model call(s), {tokens} tokens"
    return JobResult(summary=summary, details=details)


def _auto_memory_flush(reme: Reme, now: datetime) -> JobResult:
    """Sweep each pipeline with an auto_memory step: sessions whose pending turns are older than
    its ``flush_after_minutes`` are summarised; fresher ones keep waiting for more turns."""
    pipelines = [
        name
        for name, config in reme.settings.pipelines.items()
        if any(step.name == AUTO_MEMORY_STEP for step in config.steps)
    ]
    details: dict[str, Any] = {
        "pipelines": pipelines,
        "flushed": [],
        "failed": [],
        "waiting": 0,
        "history": [],
        "calls": 0,
        "tokens": 0,
    }
    for name in pipelines:
        result = reme.run(name, {"flush": "idle", "now": now.isoformat()})
        out = result.outputs
        details["flushed"] += [f.get("session_id") for f in out.get("flushed") or []]
        details["failed"] += list(out.get("failed") or [])
        details["waiting"] += _count(out.get("waiting"))
        if result.history:
            details["history"].append(result.history)
        details["calls"] += result.usage.calls
        details["tokens"] += result.usage.prompt_tokens + result.usage.completion_tokens
    summary = (
        f"{len(details['flushed'])} session(s) flushed, {len(details['failed'])} failed, "
        f"{details['waiting']} still waiting"
    )
    if details["calls"]:
        summary += f"; {details['calls']} model call(s), {details['tokens']} tokens"
    return JobResult(summary=summary, details=details)


def _count(value: Any) -> int:
    # Steps report lists (of units, paths); a count is what a status line needs.
    if isinstance(value, list | dict):
        return len(value)
    return int(value) if isinstance(value, int) else 0
