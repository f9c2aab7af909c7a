"""Runs the scheduled jobs (dream, index optimise, auto_memory flush) on cron expressions in the
configured time zone.

One background thread sleeps until the next due job, runs it, and records the outcome in
``.reme/scheduler.json`` (written atomically, so ``reme status`` can read it while a server runs).
Jobs run one at a time; a failing job is recorded with its error and the schedule goes on.

Catch-up (``server.schedule.catch_up``): at start, a job whose scheduled time passed since its
last recorded run (the server was down) runs once, however many times it was missed. A job with
no record at all does not run at start: a fresh install should not spend model tokens dreaming
the moment ``reme serve`` first starts. Instead that start is remembered (``armed``), so a
scheduled time missed after it is caught up like any other.

Times are computed on the wall clock of the zone and compared in UTC: Python compares two
datetimes that share a tzinfo by wall time, ignoring the offset, which is wrong across a DST
change.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, Literal

from croniter import croniter
from croniter.croniter import CroniterError
from pydantic import BaseModel, Field, ValidationError

from reme_core.errors import ConfigError, RemeError
from reme_core.settings import Settings
from reme_core.workspace.atomic import atomic_write

JOBS = ("dream", "optimize", "auto_memory_flush", "resource_inbox", "expire", "proactive")
"""The built-in jobs; ``server.schedule.pipelines`` adds any configured pipeline by job name."""
STATE_FILE = "scheduler.json"
MAX_WAIT_SECONDS = 60.0
"""The thread re-reads the clock at least this often: its wait runs on a monotonic clock, so after
a suspend or a wall-clock change a long wait would fire late."""
DST_MARGIN = timedelta(hours=3)
"""Wider than any DST shift: how far around a wall time a gap can move the real instant."""
MAX_CANDIDATES = 2000

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class JobResult(BaseModel):
    """What a job reports: one line for ``reme status``, and counts for JSON readers."""

    summary: str
    details: dict[str, Any] = Field(default_factory=dict)


class RunRecord(BaseModel):
    job: str
    trigger: Literal["schedule", "catch_up"]
    scheduled: datetime
    """The cron time this run was for (in the past for a catch-up run)."""
    started: datetime
    finished: datetime | None = None
    ok: bool | None = None
    """None while running."""
    summary: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None


class JobState(BaseModel):
    armed: datetime | None = None
    """When a scheduler first watched this job: the reference for catch-up before any run."""
    last: RunRecord | None = None
    running: RunRecord | None = None


class ProcessInfo(BaseModel):
    pid: int
    started: datetime
    stopped: datetime | None = None


class SchedulerState(BaseModel):
    version: Literal[1] = 1
    process: ProcessInfo | None = None
    jobs: dict[str, JobState] = Field(default_factory=dict)


# -- cron ------------------------------------------------------------------------------------


def check_cron(job: str, expr: str) -> str:
    """Return ``expr`` if it is a usable cron expression; else a ConfigError naming the key."""
    key = f"server.schedule.{job}"
    fields = expr.split()
    # croniter also reads a sixth field as seconds (at the end); Quartz users would expect it at
    # the start, so only the documented five fields (or an @daily-style alias) are accepted.
    if not (len(fields) == 5 or (len(fields) == 1 and expr.strip().startswith("@"))):
        raise ConfigError(
            f"{key}: {expr!r} is not a cron expression: expected five fields "
            "(minute hour day month weekday), such as '0 3 * * *', or null to turn it off"
        )
    try:
        croniter(expr, datetime(2000, 1, 1)).get_next(datetime)
    except CroniterError as exc:
        detail = "it never fires" if "find next date" in str(exc) else str(exc)
        raise ConfigError(f"{key}: invalid cron expression {expr!r}: {detail}") from None
    return expr


def schedule_crons(settings: Settings) -> dict[str, str | None]:
    """Each job's validated cron expression, None where turned off."""
    schedule = settings.server.schedule
    crons: dict[str, str | None] = {}
    for job in JOBS:
        expr = getattr(schedule, job)
        crons[job] = None if expr is None else check_cron(job, expr)
    for job, scheduled in schedule.pipelines.items():
        key = f"server.schedule.pipelines.{job}"
        if job in JOBS:
            raise ConfigError(f"{key}: {job!r} is a built-in job's name; choose another job name")
        if scheduled.pipeline not in settings.pipelines:
            known = ", ".join(sorted(settings.pipelines))
            raise ConfigError(
                f"{key}.pipeline: no pipeline named {scheduled.pipeline!r} is configured "
                f"(configured: {known})"
            )
        crons[job] = check_cron(f"pipelines.{job}.cron", scheduled.cron)
    return crons


def next_fire(expr: str, after: datetime, tz: tzinfo) -> datetime:
    """The first time strictly after ``after`` that ``expr`` fires on the wall clock of ``tz``,
    in UTC.

    A wall time skipped by a spring-forward change fires as if the change had not happened yet
    (02:30 becomes 03:30 summer time); a wall time repeated in autumn fires once, the first time.
    """
    after = after.astimezone(UTC)
    local = after.astimezone(tz).replace(tzinfo=None)
    # Start before `after`: a skipped wall time moves later, past candidates that follow it.
    it = croniter(expr, local - DST_MARGIN)
    best: datetime | None = None
    best_wall: datetime | None = None
    for _ in range(MAX_CANDIDATES):
        wall = it.get_next(datetime)
        if best_wall is not None and wall > best_wall + DST_MARGIN:
            break
        when = wall.replace(tzinfo=tz).astimezone(UTC)  # fold=0: the first of a repeated time
        if when > after and (best is None or when < best):
            best, best_wall = when, wall
    if best is None:  # only a cron that fires every minute for more than the margin gets here
        raise ConfigError(f"cron expression {expr!r}: no fire time found after {after}")
    return best


# -- state file ------------------------------------------------------------------------------


def load_state(path: Path) -> tuple[SchedulerState, str | None]:
    """The recorded state, and a problem message when the file could not be used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return SchedulerState(), None
    except OSError as exc:
        return SchedulerState(), f"{path} cannot be read: {exc}"
    try:
        return SchedulerState.model_validate(json.loads(raw)), None
    except (ValueError, ValidationError) as exc:
        return SchedulerState(), f"{path} is not a valid scheduler state ({exc.__class__.__name__})"


def save_state(path: Path, state: SchedulerState) -> None:
    atomic_write(path, (state.model_dump_json(indent=2) + "\n").encode("utf-8"))


# -- the scheduler ---------------------------------------------------------------------------


class Scheduler:
    """Runs ``run_job(name)`` for each enabled job on its cron schedule.

    ``start()`` loads the state, decides catch-up and starts the thread; ``stop()`` ends it.
    ``load()`` and ``run_pending()`` are the same steps without the thread (tests, a one-shot run).
    """

    def __init__(
        self,
        settings: Settings,
        run_job: Callable[[str], JobResult],
        state_path: Path,
        *,
        clock: Clock = utc_now,
    ):
        self.crons = schedule_crons(settings)  # invalid cron: ConfigError before serving
        self.catch_up = settings.server.schedule.catch_up
        self.tz = settings.tzinfo()
        self.run_job = run_job
        self.state_path = state_path
        self.clock = clock
        self.state = SchedulerState()
        self.problem: str | None = None
        self._due: dict[str, tuple[datetime, Literal["schedule", "catch_up"]]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def load(self) -> None:
        """Read the state file, close out a run the last process left unfinished, and work out
        when each job is next due (now, for a catch-up)."""
        state, self.problem = load_state(self.state_path)
        if self.problem is not None:
            log.warning("scheduler: %s; starting with no record", self.problem)
        now = self._now()
        with self._lock:
            self.state = state
            state.process = ProcessInfo(pid=os.getpid(), started=self._local(now))
            self._due.clear()
            for job, expr in self.crons.items():
                job_state = state.jobs.setdefault(job, JobState())
                if job_state.running is not None:
                    # Only one scheduler serves a workspace, so a leftover run was cut short.
                    job_state.last = job_state.running.model_copy(
                        update={"ok": False, "error": "interrupted: the server stopped mid-run"}
                    )
                    job_state.running = None
                if expr is None:
                    continue
                reference = job_state.last.started if job_state.last else job_state.armed
                if job_state.armed is None:
                    job_state.armed = self._local(now)
                if self.catch_up and reference is not None:
                    missed = next_fire(expr, reference, self.tz)
                    if missed <= now:
                        self._due[job] = (missed, "catch_up")
                        continue
                self._due[job] = (next_fire(expr, now, self.tz), "schedule")
            self._save()

    def start(self) -> None:
        """Load, then run due jobs (catch-up first) on a daemon thread."""
        if self._thread is not None:
            raise RuntimeError("scheduler already started")
        self.load()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="reme-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> bool:
        """End the thread; True if it ended within ``timeout`` (a job in progress is not killed:
        its run is recorded as interrupted at the next start if the process exits first)."""
        self._stop.set()
        ended = True
        if self._thread is not None:
            self._thread.join(timeout)
            ended = not self._thread.is_alive()
            self._thread = None
        with self._lock:
            if self.state.process is not None:
                self.state.process.stopped = self._local(self._now())
                self._save()
        return ended

    def run_pending(self) -> list[RunRecord]:
        """Run every job due now, earliest first, one at a time; return their records."""
        records: list[RunRecord] = []
        while not self._stop.is_set():
            with self._lock:
                if not self._due:
                    break
                job, (due, trigger) = min(self._due.items(), key=lambda item: item[1][0])
            if due > self._now():
                break
            records.append(self._run(job, due, trigger))
        return records

    def seconds_until_next(self) -> float | None:
        with self._lock:
            if not self._due:
                return None
            due = min(d for d, _ in self._due.values())
        return max(0.0, (due - self._now()).total_seconds())

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_pending()
                wait = self.seconds_until_next()
            except Exception as exc:  # a bug here must not end scheduling for the server's life
                log.exception("scheduler loop failed")
                self.problem = f"scheduler loop failed: {exc}"
                wait = MAX_WAIT_SECONDS
            self._stop.wait(MAX_WAIT_SECONDS if wait is None else min(wait, MAX_WAIT_SECONDS))

    def _run(self, job: str, due: datetime, trigger: Literal["schedule", "catch_up"]) -> RunRecord:
        record = RunRecord(
            job=job, trigger=trigger, scheduled=self._local(due), started=self._local(self._now())
        )
        with self._lock:
            self.state.jobs.setdefault(job, JobState()).running = record
            self._save()
        try:
            result = self.run_job(job)
            update: dict[str, Any] = {"ok": True, "summary": result.summary}
            update["details"] = result.details
        except Exception as exc:  # any failure is the job's, recorded; the schedule goes on
            if not isinstance(exc, RemeError):
                log.exception("scheduled job %s failed", job)
            update = {"ok": False, "error": _message(exc)}
        finished = self._now()
        record = record.model_copy(update={**update, "finished": self._local(finished)})
        with self._lock:
            job_state = self.state.jobs.setdefault(job, JobState())
            job_state.running = None
            job_state.last = record
            expr = self.crons[job]
            if expr is not None:
                # From the finish, not the due time: fires missed during a long run are coalesced.
                self._due[job] = (next_fire(expr, finished, self.tz), "schedule")
            self._save()
        return record

    # -- reporting ---------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """Per job: cron, enabled, next run, last run (time, ok, summary or error), running."""
        with self._lock:
            state = self.state.model_copy(deep=True)
            due = {job: when for job, (when, _) in self._due.items()}
        running = self._thread is not None and self._thread.is_alive()
        return describe(self.crons, self.catch_up, self.tz, state, due, running, self.problem)

    # -- helpers -----------------------------------------------------------------------------

    def _now(self) -> datetime:
        return self.clock().astimezone(UTC)

    def _local(self, when: datetime) -> datetime:
        return when.astimezone(self.tz)

    def _save(self) -> None:
        # The caller holds the lock. A full disk must not kill the thread: the run still counts.
        try:
            save_state(self.state_path, self.state)
        except OSError as exc:
            log.warning("scheduler: cannot write %s: %s", self.state_path, exc)
            self.problem = f"cannot write {self.state_path}: {exc}"


def _message(exc: BaseException) -> str:
    text = str(exc) or exc.__class__.__name__
    return text if isinstance(exc, RemeError) else f"{exc.__class__.__name__}: {text}"


def describe(
    crons: dict[str, str | None],
    catch_up: bool,
    tz: tzinfo,
    state: SchedulerState,
    due: dict[str, datetime],
    running: bool | None,
    problem: str | None,
) -> dict[str, Any]:
    """The schedule as plain JSON data, times in ``tz``."""

    def iso(when: datetime | None) -> str | None:
        return when.astimezone(tz).isoformat(timespec="seconds") if when else None

    def run(record: RunRecord | None) -> dict[str, Any] | None:
        if record is None:
            return None
        data = record.model_dump(mode="json", exclude={"started", "finished", "scheduled"})
        data.update(
            scheduled=iso(record.scheduled),
            started=iso(record.started),
            finished=iso(record.finished),
        )
        return data

    jobs = {}
    for job, expr in crons.items():
        job_state = state.jobs.get(job, JobState())
        jobs[job] = {
            "cron": expr,
            "enabled": expr is not None,
            "next": iso(due.get(job)),
            "last": run(job_state.last),
            "running": run(job_state.running),
        }
    process = state.process
    return {
        "timezone": getattr(tz, "key", None) or str(tz),
        "catch_up": catch_up,
        "scheduler": {
            "running": running,
            "pid": process.pid if process else None,
            "started": iso(process.started) if process else None,
            "stopped": iso(process.stopped) if process else None,
        },
        "jobs": jobs,
        "problem": problem,
    }


def schedule_status(settings: Settings, state_path: Path, now: datetime | None = None) -> dict:
    """The schedule without a running scheduler (``reme status``): the state file, and next
    times computed from the config. An invalid cron is reported, not raised: status is where a
    user goes to find out what is wrong."""
    now = (now or utc_now()).astimezone(UTC)
    tz = settings.tzinfo()
    state, problem = load_state(state_path)
    schedule = settings.server.schedule
    crons: dict[str, str | None] = {}
    due: dict[str, datetime] = {}
    for job in JOBS:
        expr = getattr(schedule, job)
        crons[job] = expr
        if expr is None:
            continue
        try:
            due[job] = next_fire(check_cron(job, expr), now, tz)
        except ConfigError as exc:
            problem = f"{problem}; {exc}" if problem else str(exc)
    process = state.process
    running = None if process is None else process.stopped is None and _pid_alive(process.pid)
    return describe(crons, schedule.catch_up, tz, state, due, running, problem)


def _pid_alive(pid: int) -> bool | None:
    """Whether a process with this id exists; None where that cannot be asked safely."""
    if os.name != "posix":
        return None  # on Windows os.kill(pid, 0) would terminate the process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    except OSError:
        return None
    return True
