"""Any configured pipeline on a schedule, and the resource inbox job (issue 15, part 5)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import KEYWORD_ONLY_ENV
from fake_llm import plugins_with

from reme_core.components import Step
from reme_core.errors import ConfigError
from reme_core.runtime import Reme
from reme_core.server.jobs import run_job, scheduler_for
from reme_core.server.scheduler import schedule_crons
from reme_core.settings import load_settings
from reme_core.workspace import init_workspace


class StampStep(Step):
    """A user's own step: writes one note naming the params it was given."""

    name: ClassVar[str] = "stamp"
    runs: ClassVar[list[dict[str, Any]]] = []

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        StampStep.runs.append(dict(state))
        path = f"digest/wiki/stamp-{state['label']}.md"
        run.reme.files.write(path, f"# Stamp\nlabel {state['label']}\n")
        return {"stamped": [path]}


class FakeClock:
    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _open(root: Path, *overrides: str) -> Reme:
    init_workspace(root)
    settings = [
        "timezone=UTC",
        "server.schedule.dream=null",
        "server.schedule.optimize=null",
        "server.schedule.auto_memory_flush=null",
        *overrides,
    ]
    return Reme.open(
        root, plugins=plugins_with(StampStep), env=KEYWORD_ONLY_ENV, overrides=settings
    )


def _fire(reme: Reme, job: str) -> Any:
    """Start a scheduler at 03:59 and move its clock past the 04:00 fire time."""
    clock = FakeClock(datetime(2026, 12, 1, 3, 59, tzinfo=UTC))
    scheduler = scheduler_for(reme, clock=clock)
    scheduler.load()
    assert scheduler.run_pending() == []  # nothing due before its time
    clock.now += timedelta(minutes=2)
    [record] = scheduler.run_pending()
    assert record.job == job and record.trigger == "schedule"
    return record


def test_a_custom_pipeline_runs_on_its_cron_with_its_params(tmp_path: Path) -> None:
    StampStep.runs.clear()
    root = tmp_path / "ws"
    with _open(
        root,
        "pipelines.stamping={steps: [{name: stamp}]}",
        "server.schedule.pipelines={nightly_stamp: {cron: '0 4 * * *', pipeline: stamping, "
        "params: {label: night}}}",
    ) as reme:
        record = _fire(reme, "nightly_stamp")
        assert record.ok, record.error
        assert record.summary == "stamping: 1 stamped"
        assert record.details["history"]  # a run that changed files is one history entry
    assert StampStep.runs[0]["label"] == "night"
    assert (root / "digest/wiki/stamp-night.md").read_text() == "# Stamp\nlabel night\n"


def test_the_resource_inbox_job_turns_a_dropped_file_into_a_note(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    script = [{"name": "On-call list", "description": "Who is on call.", "summary": "Two."}]
    init_workspace(root)
    (root / "script.json").write_text(json.dumps(script), encoding="utf-8")
    assert (root / "resource" / "inbox").is_dir()  # `reme init` makes the inbox
    (root / "resource/inbox/oncall.txt").write_text("Mira and Ade are on call.\n")
    with _open(
        root,
        "server.schedule.resource_inbox='0 4 * * *'",
        "pipelines.auto_resource.steps=[{name: auto_resource}]",
        "components.llm={name: scripted, settings: {path: script.json}}",
    ) as reme:
        record = _fire(reme, "resource_inbox")
        assert record.ok, record.error
        assert record.details["usage"]["calls"] == 1
        notes = [p for p in reme.catalog.hashes() if p.startswith("daily/")]
    assert len(notes) == 1
    text = (root / notes[0]).read_text()
    assert "On-call list" in text and "resource/inbox/oncall.txt" in text


def test_a_scheduled_run_without_a_model_is_recorded_as_failed_not_fatal(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with _open(root, "server.schedule.resource_inbox='0 4 * * *'") as reme:
        (root / "resource/inbox/a.txt").write_text("text\n")
        record = _fire(reme, "resource_inbox")
    assert record.ok is False and "needs a model" in (record.error or "")


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (
            "{x: {cron: '0 4 * * *', pipeline: nowhere}}",
            r"pipelines\.x\.pipeline: no pipeline named 'nowhere'",
        ),
        ("{dream: {cron: '0 4 * * *', pipeline: auto_tag}}", "built-in job's name"),
        ("{x: {cron: 'every day', pipeline: auto_tag}}", r"pipelines\.x\.cron.*not a cron"),
    ],
)
def test_bad_scheduled_pipelines_are_config_errors(schedule: str, message: str) -> None:
    settings = load_settings(overrides=[f"server.schedule.pipelines={schedule}"], env={})
    with pytest.raises(ConfigError, match=message):
        schedule_crons(settings)


def test_an_unknown_key_in_a_scheduled_pipeline_names_its_path() -> None:
    bad = "server.schedule.pipelines={x: {cron: '0 4 * * *', pipeline: auto_tag, parms: {}}}"
    with pytest.raises(ConfigError, match=r"server\.schedule\.pipelines\.x\.parms"):
        load_settings(overrides=[bad], env={})


def test_run_job_knows_scheduled_pipelines(tmp_path: Path) -> None:
    StampStep.runs.clear()
    with _open(
        tmp_path / "ws",
        "pipelines.stamping={steps: [{name: stamp}]}",
        "server.schedule.pipelines={s: {cron: '0 4 * * *', pipeline: stamping, params: {label: a}}}",
    ) as reme:
        assert run_job(reme, "s").details["outputs"] == {"stamped": 1}
        with pytest.raises(ValueError, match="unknown scheduled job"):
            run_job(reme, "lunch")
