"""The scheduled jobs on an open workspace: what each does and the one-line summary it records."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from reme_core.server.scheduler import STATE_FILE, JobResult, Scheduler

if TYPE_CHECKING:
    from reme_core.runtime import Reme


def run_job(reme: Reme, name: str) -> JobResult:
    """Run job ``name`` (``dream`` or ``optimize``) on ``reme``; errors propagate to the caller,
    which records them."""
    if name == "dream":
        return _dream(reme)
    if name == "optimize":
        return _optimize(reme)
    raise ValueError(f"unknown scheduled job {name!r}")


def scheduler_for(reme: Reme) -> Scheduler:
    """The scheduler of one served workspace, its state in that workspace's ``.reme/``."""
    return Scheduler(reme.settings, lambda name: run_job(reme, name), reme.state_dir / STATE_FILE)


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
    with reme.indexer.lock:
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


def _count(value: Any) -> int:
    # Steps report lists (of units, paths); a count is what a status line needs.
    if isinstance(value, list | dict):
        return len(value)
    return int(value) if isinstance(value, int) else 0
