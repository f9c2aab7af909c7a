"""The scheduler: cron times in a zone across DST, catch-up, failures, the thread, the state file,
the job functions and ``reme status``. Time is a fake clock except where the thread's real wait is
the thing under test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV

from reme_core.cli import cli
from reme_core.errors import ConfigError
from reme_core.pipelines.engine import PipelineResult
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.server.jobs import run_job, scheduler_for
from reme_core.server.scheduler import (
    JobResult,
    Scheduler,
    load_state,
    next_fire,
    schedule_status,
)
from reme_core.settings import Settings, load_settings
from reme_core.workspace import init_workspace

PARIS = ZoneInfo("Europe/Paris")


def paris(*args: int) -> datetime:
    return datetime(*args, tzinfo=PARIS)  # type: ignore[misc]


class FakeClock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Jobs:
    """A run_job that records calls; ``fail[name]`` is raised instead of succeeding."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail: dict[str, Exception] = {}
        self.during: Callable[[str], None] | None = None

    def __call__(self, name: str) -> JobResult:
        self.calls.append(name)
        if self.during is not None:
            self.during(name)
        if name in self.fail:
            raise self.fail[name]
        return JobResult(summary=f"{name} done", details={"n": len(self.calls)})


def settings(*overrides: str) -> Settings:
    # The two nightly jobs only; the auto_memory flush (every 15 minutes) and proactive (18:00)
    # have their own tests.
    base = [
        "timezone=Europe/Paris",
        "server.schedule.auto_memory_flush=null",
        "server.schedule.proactive=null",
    ]
    return load_settings(overrides=[*base, *overrides], env={})


def scheduler(path: Path, clock: FakeClock, jobs: Jobs, *overrides: str) -> Scheduler:
    return Scheduler(settings(*overrides), jobs, path, clock=clock)


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    return tmp_path / ".reme" / "scheduler.json"


# -- cron times ------------------------------------------------------------------------------


def test_next_fire_keeps_the_wall_time_across_dst_changes() -> None:
    # Spring forward in Paris: 2024-03-31 02:00 CET -> 03:00 CEST.
    before = next_fire("0 3 * * *", paris(2024, 3, 29, 12), PARIS)
    spring = next_fire("0 3 * * *", before, PARIS)
    after = next_fire("0 3 * * *", spring, PARIS)
    assert [t.astimezone(PARIS).strftime("%m-%d %H:%M") for t in (before, spring, after)] == [
        "03-30 03:00",
        "03-31 03:00",
        "04-01 03:00",
    ]
    assert [t.hour for t in (before, spring, after)] == [2, 1, 1]  # UTC: the offset changed
    assert spring - before == timedelta(hours=23)


def test_a_skipped_wall_time_fires_once_after_the_gap_and_a_repeated_one_once() -> None:
    skipped = next_fire("30 2 * * *", paris(2024, 3, 30, 12), PARIS)
    assert skipped == datetime(2024, 3, 31, 1, 30, tzinfo=UTC)  # 03:30 CEST
    assert next_fire("30 2 * * *", skipped, PARIS) == datetime(2024, 4, 1, 0, 30, tzinfo=UTC)
    # At 03:10 summer time the wall clock is past 02:30, but the shifted run is still ahead.
    assert next_fire("30 2 * * *", paris(2024, 3, 31, 3, 10), PARIS) == skipped

    # Fall back: 2024-10-27 03:00 CEST -> 02:00 CET, so 02:30 happens twice; it fires once.
    first = next_fire("30 2 * * *", paris(2024, 10, 26, 12), PARIS)
    assert first == datetime(2024, 10, 27, 0, 30, tzinfo=UTC)  # 02:30 CEST
    assert next_fire("30 2 * * *", first, PARIS) == datetime(2024, 10, 28, 1, 30, tzinfo=UTC)


def test_a_half_hour_dst_gap_keeps_fire_times_in_order() -> None:
    # Lord Howe Island skips 02:00-02:30. 02:10 moves to 02:40, after the real 02:30: both run,
    # in time order, each once.
    zone = ZoneInfo("Australia/Lord_Howe")
    t, fired = datetime(2024, 10, 6, 1, 0, tzinfo=zone), []
    for _ in range(3):
        t = next_fire("10,30 2 * * *", t, zone)
        fired.append(t.astimezone(zone).strftime("%d %H:%M"))
    assert fired == ["06 02:30", "06 02:40", "07 02:10"]


def test_next_fire_is_strictly_after_and_honours_the_zone() -> None:
    at = paris(2024, 6, 1, 3, 0)
    assert next_fire("0 3 * * *", at, PARIS) == paris(2024, 6, 2, 3, 0)
    assert next_fire("0 3 * * *", at - timedelta(seconds=1), PARIS) == at
    tokyo = next_fire("0 3 * * *", at, ZoneInfo("Asia/Tokyo"))
    assert tokyo.astimezone(ZoneInfo("Asia/Tokyo")).hour == 3


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        ("61 3 * * *", "out of range"),
        ("0 3 * *", "five fields"),
        ("0 3 * * * 0", "five fields"),
        ("0 3 31 2 *", "never fires"),
        ("nightly", "five fields"),
    ],
)
def test_an_invalid_cron_is_a_config_error_naming_the_key(
    state_path: Path, expr: str, why: str
) -> None:
    with pytest.raises(ConfigError, match=r"server\.schedule\.optimize") as caught:
        scheduler(
            state_path, FakeClock(paris(2024, 6, 1)), Jobs(), f"server.schedule.optimize={expr}"
        )
    assert why in str(caught.value)
    assert not state_path.exists()


def test_an_alias_is_accepted(state_path: Path) -> None:
    sched = scheduler(
        state_path, FakeClock(paris(2024, 6, 1, 12)), Jobs(), "server.schedule.dream='@daily'"
    )
    sched.load()
    assert sched.status()["jobs"]["dream"]["next"] == "2024-06-02T00:00:00+02:00"


# -- catch-up --------------------------------------------------------------------------------


def test_a_fresh_install_does_not_run_at_start_but_a_later_miss_is_caught_up(
    state_path: Path,
) -> None:
    clock, jobs = FakeClock(paris(2024, 6, 1, 10)), Jobs()
    first = scheduler(state_path, clock, jobs)
    first.load()
    assert first.run_pending() == []
    first.stop()
    assert jobs.calls == []
    armed = load_state(state_path)[0].jobs["dream"].armed
    assert armed == paris(2024, 6, 1, 10)

    # Down over three nights: each job runs once, dream (03:00) before optimize (03:30).
    clock.now = paris(2024, 6, 4, 9)
    second = scheduler(state_path, clock, jobs)
    second.load()
    records = second.run_pending()
    assert jobs.calls == ["dream", "optimize"]
    assert [r.trigger for r in records] == ["catch_up", "catch_up"]
    assert records[0].scheduled == paris(2024, 6, 2, 3, 0)  # the first time it missed
    assert second.run_pending() == []

    # A restart the same morning finds nothing missed: catch-up ran once, not once per start.
    third = scheduler(state_path, clock, jobs)
    third.load()
    assert third.run_pending() == []
    assert jobs.calls == ["dream", "optimize"]
    assert third.status()["jobs"]["dream"]["next"] == "2024-06-05T03:00:00+02:00"
    clock.now = paris(2024, 6, 5, 3, 0)
    assert [(r.job, r.trigger) for r in third.run_pending()] == [("dream", "schedule")]


def test_catch_up_off_waits_for_the_next_scheduled_time(state_path: Path) -> None:
    clock, jobs = FakeClock(paris(2024, 6, 1, 10)), Jobs()
    scheduler(state_path, clock, jobs).load()
    clock.now = paris(2024, 6, 4, 9)
    sched = scheduler(state_path, clock, jobs, "server.schedule.catch_up=false")
    sched.load()
    assert sched.run_pending() == []
    clock.now = paris(2024, 6, 5, 3, 0)
    assert [r.trigger for r in sched.run_pending()] == ["schedule"]
    assert jobs.calls == ["dream"]


def test_scheduled_runs_fire_at_their_times_one_at_a_time(state_path: Path) -> None:
    clock, jobs = FakeClock(paris(2024, 6, 1, 2, 59)), Jobs()
    sched = scheduler(state_path, clock, jobs)
    sched.load()
    assert sched.seconds_until_next() == 60.0
    assert sched.run_pending() == []
    clock.now = paris(2024, 6, 1, 3, 0)
    assert [r.job for r in sched.run_pending()] == ["dream"]
    clock.now = paris(2024, 6, 1, 3, 29)
    assert sched.run_pending() == []
    clock.now = paris(2024, 6, 1, 3, 30)
    assert [r.job for r in sched.run_pending()] == ["optimize"]
    assert jobs.calls == ["dream", "optimize"]


def test_a_long_run_coalesces_missed_times_and_the_other_job_runs_after_it(
    state_path: Path,
) -> None:
    clock, jobs = FakeClock(paris(2024, 6, 1, 2, 59)), Jobs()
    sched = scheduler(state_path, clock, jobs, "server.schedule.optimize='*/30 * * * *'")
    sched.load()
    clock.now = paris(2024, 6, 1, 3, 0)
    # dream runs for two days (on the fake clock): optimize waits, then runs once, not ~100 times.
    jobs.during = lambda name: (
        setattr(clock, "now", clock.now + timedelta(days=2, hours=1)) if name == "dream" else None
    )
    assert [r.job for r in sched.run_pending()] == ["dream", "optimize"]
    status = sched.status()["jobs"]
    assert status["dream"]["next"] == "2024-06-04T03:00:00+02:00"
    assert status["optimize"]["next"] == "2024-06-03T04:30:00+02:00"


# -- failures, disabled jobs -----------------------------------------------------------------


def test_a_failing_job_is_recorded_and_the_next_job_still_runs(state_path: Path) -> None:
    clock, jobs = FakeClock(paris(2024, 6, 1, 2)), Jobs()
    jobs.fail["dream"] = ConfigError("dream needs a model: set components.llm")
    sched = scheduler(state_path, clock, jobs)
    sched.load()
    clock.now = paris(2024, 6, 1, 4)
    records = sched.run_pending()
    assert [(r.job, r.ok) for r in records] == [("dream", False), ("optimize", True)]

    jobs.fail["optimize"] = RuntimeError("disk on fire")
    clock.now = paris(2024, 6, 2, 4)
    sched.run_pending()
    status = sched.status()["jobs"]
    assert status["dream"]["last"]["error"] == "dream needs a model: set components.llm"
    assert status["dream"]["last"]["summary"] is None
    assert status["optimize"]["last"]["error"] == "RuntimeError: disk on fire"
    assert status["dream"]["next"] == "2024-06-03T03:00:00+02:00"  # still scheduled
    assert jobs.calls == ["dream", "optimize", "dream", "optimize"]


def test_a_disabled_job_never_runs(state_path: Path) -> None:
    clock, jobs = FakeClock(paris(2024, 6, 1, 2)), Jobs()
    scheduler(state_path, clock, jobs).load()  # armed: both would be caught up
    clock.now = paris(2024, 6, 3, 12)
    sched = scheduler(state_path, clock, jobs, "server.schedule.dream=null")
    sched.load()
    sched.run_pending()
    clock.now = paris(2024, 6, 10, 12)
    sched.run_pending()
    assert set(jobs.calls) == {"optimize"}
    dream = sched.status()["jobs"]["dream"]
    assert dream == {"cron": None, "enabled": False, "next": None, "last": None, "running": None}


# -- the thread ------------------------------------------------------------------------------


def test_stop_interrupts_the_wait_promptly(state_path: Path) -> None:
    sched = Scheduler(settings(), Jobs(), state_path)  # the real clock: next run hours away
    sched.start()
    assert sched.status()["scheduler"]["running"] is True
    time.sleep(0.05)  # let the thread reach its wait
    started = time.monotonic()
    assert sched.stop() is True
    assert time.monotonic() - started < 1.0
    status = sched.status()
    assert status["scheduler"]["running"] is False
    assert status["scheduler"]["stopped"] is not None


def test_the_thread_sleeps_until_a_job_is_due_and_runs_it(state_path: Path) -> None:
    # A clock that runs in real time from 0.3 s before 03:00 Paris.
    base, t0 = paris(2024, 6, 1, 2, 59, 59, 700000), time.monotonic()
    ran = threading.Event()
    jobs = Jobs()
    jobs.during = lambda name: ran.set()
    sched = Scheduler(
        settings("server.schedule.optimize=null"),
        jobs,
        state_path,
        clock=lambda: base + timedelta(seconds=time.monotonic() - t0),
    )
    sched.start()
    try:
        assert ran.wait(5.0)
    finally:
        assert sched.stop()
    assert jobs.calls == ["dream"]
    last = load_state(state_path)[0].jobs["dream"].last
    assert last is not None and last.ok and last.trigger == "schedule"
    assert last.started >= paris(2024, 6, 1, 3, 0)


# -- the state file --------------------------------------------------------------------------


def test_the_state_file_survives_a_restart(state_path: Path) -> None:
    clock, jobs = FakeClock(paris(2024, 6, 1, 2)), Jobs()
    sched = scheduler(state_path, clock, jobs)
    sched.load()
    clock.now = paris(2024, 6, 1, 3, 0)
    sched.run_pending()
    sched.stop()

    data = json.loads(state_path.read_text())
    assert data["jobs"]["dream"]["last"]["summary"] == "dream done"
    assert data["jobs"]["dream"]["last"]["started"] == "2024-06-01T03:00:00+02:00"

    restarted = scheduler(state_path, clock, jobs)
    restarted.load()
    last = restarted.status()["jobs"]["dream"]["last"]
    assert (last["ok"], last["summary"], last["details"]) == (True, "dream done", {"n": 1})
    assert list(state_path.parent.glob("*.tmp")) == []  # atomic write left nothing behind


def test_a_run_cut_short_by_a_stop_is_recorded_as_interrupted(state_path: Path) -> None:
    clock, jobs = FakeClock(paris(2024, 6, 1, 2)), Jobs()
    sched = scheduler(state_path, clock, jobs)
    sched.load()
    clock.now = paris(2024, 6, 1, 3, 0)
    # What the file holds while a job runs, as if the process then died.
    snapshot: dict[str, Any] = {}
    jobs.during = lambda name: snapshot.update(json.loads(state_path.read_text()))
    sched.run_pending()
    assert snapshot["jobs"]["dream"]["running"]["started"] == "2024-06-01T03:00:00+02:00"
    state_path.write_text(json.dumps(snapshot))

    restarted = scheduler(state_path, clock, Jobs())
    restarted.load()
    dream = restarted.status()["jobs"]["dream"]
    assert dream["running"] is None
    assert dream["last"]["ok"] is False
    assert "interrupted" in dream["last"]["error"]
    assert restarted.run_pending() == []  # started runs are not retried at start


def test_an_unreadable_state_file_is_reported_and_replaced(state_path: Path) -> None:
    state_path.parent.mkdir(parents=True)
    state_path.write_text("{not json")
    sched = scheduler(state_path, FakeClock(paris(2024, 6, 1, 2)), Jobs())
    sched.load()
    assert "not a valid scheduler state" in sched.status()["problem"]
    state, problem = load_state(state_path)
    assert problem is None and state.jobs["dream"].armed is not None


def test_schedule_status_without_a_server(state_path: Path) -> None:
    status = schedule_status(settings(), state_path, now=paris(2024, 6, 1, 12))
    assert status["timezone"] == "Europe/Paris"
    assert status["scheduler"] == {"running": None, "pid": None, "started": None, "stopped": None}
    assert status["jobs"]["optimize"]["next"] == "2024-06-02T03:30:00+02:00"
    assert status["jobs"]["dream"]["last"] is None

    bad = schedule_status(settings("server.schedule.dream=0 3"), state_path)
    assert "server.schedule.dream" in bad["problem"]
    assert bad["jobs"]["dream"]["next"] is None
    assert bad["jobs"]["optimize"]["next"] is not None


# -- the jobs --------------------------------------------------------------------------------


@pytest.fixture
def reme(tmp_path: Path, default_plugins: Plugins) -> Any:
    root = tmp_path / "ws"
    init_workspace(root)
    (root / "digest" / "wiki" / "note.md").write_text("# Note\n\nsome words to index\n")
    with Reme.open(root, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as opened:
        opened.index()
        yield opened


def test_run_job_optimises_and_dream_without_a_model_is_a_config_error(reme: Reme) -> None:
    result = run_job(reme, "optimize")
    assert result.summary.startswith("keyword index optimised")
    assert result.details["keyword_index"]["delta_chunks"] == 0
    with pytest.raises(ConfigError, match="needs a model"):
        run_job(reme, "dream")
    with pytest.raises(ValueError, match="unknown scheduled job"):
        run_job(reme, "lunch")


def test_scheduler_for_a_workspace_records_in_its_state_dir(reme: Reme) -> None:
    sched = scheduler_for(reme)
    assert sched.state_path == reme.state_dir / "scheduler.json"
    sched.clock = FakeClock(paris(2024, 6, 1, 2))
    sched.load()
    sched.clock = FakeClock(paris(2024, 6, 2, 12))
    records = sched.run_pending()  # a day later: each missed job once, earliest first
    assert [(r.job, r.ok) for r in records] == [
        ("auto_memory_flush", True),
        ("dream", False),
        ("optimize", True),
        ("proactive", False),  # on by default at 18:00; without a model it fails, as dream does
    ]
    assert records[0].summary == "0 session(s) flushed, 0 failed, 0 still waiting"
    assert "needs a model" in (records[1].error or "")
    assert "proactive needs a model" in (records[3].error or "")
    assert records[3].scheduled.hour == 18


class FakeDreamReme:
    def run(self, pipeline: str, params: dict[str, Any]) -> PipelineResult:
        assert (pipeline, params) == ("dream", {})
        result = PipelineResult(pipeline="dream", params={}, seconds=1.234)
        result.outputs = {
            "pending": ["daily/a.md", "daily/b.md"],
            "units": [{}, {}, {}],
            "written": ["digest/wiki/x.md"],
            "failed": [{"unit": "u"}],
            "extract_failures": [],
            "deferred": [],
        }
        result.usage.calls, result.usage.prompt_tokens, result.usage.completion_tokens = 4, 900, 100
        return result


def test_the_dream_summary_counts_units_and_usage() -> None:
    result = run_job(FakeDreamReme(), "dream")  # type: ignore[arg-type]
    assert result.summary == (
        "3 unit(s) from 2 changed note(s): 1 written, 1 failed; 4 model call(s), 1000 tokens"
    )
    assert result.details["usage"]["calls"] == 4
    assert result.details["seconds"] == 1.23


# -- reme status -----------------------------------------------------------------------------


def test_reme_status_shows_the_schedule(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    init_workspace(root)
    path = root / ".reme" / "scheduler.json"
    jobs = Jobs()
    jobs.fail["dream"] = ConfigError("dream needs a model: set components.llm")
    clock = FakeClock(paris(2024, 6, 1, 2))
    sched = scheduler(path, clock, jobs)
    sched.load()
    clock.now = paris(2024, 6, 1, 4)
    sched.run_pending()
    sched.stop()

    runner = CliRunner()
    argv = ["status", "--workspace", str(root), "--set", "timezone=Europe/Paris"]
    result = runner.invoke(cli, [*argv, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    schedule = json.loads(result.stdout)["schedule"]
    assert schedule["timezone"] == "Europe/Paris"
    assert schedule["scheduler"]["running"] is False
    assert schedule["jobs"]["dream"]["last"]["error"].startswith("dream needs a model")
    assert schedule["jobs"]["optimize"]["last"]["summary"] == "optimize done"
    assert "T03:30:00+" in schedule["jobs"]["optimize"]["next"]

    text = runner.invoke(cli, argv, catch_exceptions=False).stdout
    assert "schedule (Europe/Paris): not running" in text
    assert "last: 2024-06-01 04:00 FAILED: dream needs a model" in text
    assert "last: 2024-06-01 04:00 ok: optimize done" in text

    off = runner.invoke(cli, [*argv, "--set", "server.schedule.dream=null"]).stdout
    assert "  dream: off" in off
