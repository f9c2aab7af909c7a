"""The expire job: notes whose expires: day came, or whose folder's lifecycle.expire passed,
become archived in one history entry that a revert undoes; the config is validated (issue 24)."""

from __future__ import annotations

import datetime as dt
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.errors import ConfigError
from reme_core.runtime import Reme
from reme_core.server.jobs import run_job, scheduler_for
from reme_core.service.operations import OPERATIONS
from reme_core.settings import load_settings
from reme_core.workspace.notes import parse_note

TODAY = dt.date(2026, 12, 3)
NOTES = {
    "digest/wiki/by-date.md": "---\nexpires: 2026-12-01\n---\n\nold roster\n",
    "digest/wiki/later.md": "---\nexpires: 2027-01-01\n---\n\nlater roster\n",
    "digest/wiki/by-duration.md": "---\ncreated: 2026-11-01\nexpires: 30d\n---\n\nfeeding\n",
    "digest/wiki/broken.md": "---\nexpires: soon\n---\n\nunknown\n",
    "digest/wiki/archived.md": "---\nstatus: archived\nexpires: 2026-01-01\n---\n\ngone\n",
    "sessions/2026-08-01/old.md": "---\ndate: 2026-08-01\n---\n\nold session\n",
    "sessions/2026-11-30/new.md": "---\ndate: 2026-11-30\n---\n\nnew session\n",
    "sessions/keep/2026-01-01/kept.md": "---\ndate: 2026-01-01\n---\n\nkept session\n",
    "sessions/2026-01-02/own.md": "---\ndate: 2026-01-02\nexpires: 2027-01-01\n---\n\nown\n",
}
POLICY = 'lifecycle.expire={"sessions/": 90d, "sessions/keep/": 1000w}'


def _open(root: Path, *overrides: str) -> Reme:
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    reme = Reme.open(root, env=KEYWORD_ONLY_ENV, overrides=["timezone=UTC", *overrides])
    reme.index()
    return reme


def status(root: Path, rel: str) -> str:
    return parse_note(rel, (root / rel).read_text(encoding="utf-8")).status


def test_expire_archives_by_date_duration_and_folder_policy_and_reverts(root: Path) -> None:
    with _open(root, POLICY) as reme:
        before = {rel: (root / rel).read_bytes() for rel in NOTES}
        dry = OPERATIONS["expire"].call(reme, {"dry_run": True, "today": TODAY.isoformat()})
        assert {rel: (root / rel).read_bytes() for rel in NOTES} == before
        report = OPERATIONS["expire"].call(reme, {"today": TODAY.isoformat()})
        assert (
            report["archived"]
            == dry["archived"]
            == {
                "digest/wiki/by-date.md": "2026-12-01",
                "digest/wiki/by-duration.md": "2026-12-01",
                "sessions/2026-08-01/old.md": "2026-10-30",
            }
        )
        assert set(report["invalid"]) == {"digest/wiki/broken.md"}
        assert (
            "not a duration" in report["invalid"]["digest/wiki/broken.md"]
            or "neither" in (report["invalid"]["digest/wiki/broken.md"])
        )
        for rel in report["archived"]:
            assert status(root, rel) == "archived"
        for rel in ("digest/wiki/later.md", "sessions/2026-11-30/new.md", "digest/wiki/broken.md"):
            assert status(root, rel) == "active"
        # The more specific folder wins; a note's own expires: wins over its folder's.
        assert status(root, "sessions/keep/2026-01-01/kept.md") == "active"
        assert status(root, "sessions/2026-01-02/own.md") == "active"
        entry = reme.history.entries(1)[0]
        assert entry.run == report["history"] and entry.message.startswith("reme expire:")
        reme.revert(report["history"])
        assert {rel: (root / rel).read_bytes() for rel in NOTES} == before
        # Nothing expired again: nothing to do, nothing recorded.
        again = OPERATIONS["expire"].call(reme, {"today": "2026-06-01"})
        assert again["archived"] == {} and again["history"] is None


def test_the_scheduled_expire_job(root: Path) -> None:
    with _open(root, POLICY, "server.schedule.expire='0 4 * * *'") as reme:
        clock_now = datetime(2026, 12, 3, 3, 59, tzinfo=UTC)
        scheduler = scheduler_for(reme, clock=lambda: clock_now)
        scheduler.load()
        assert "expire" in scheduler.status()["jobs"]
        record = run_job(reme, "expire", now=clock_now + timedelta(minutes=2))
        assert record.summary.startswith("3 expired note(s) archived")
        assert "1 with an expires: that cannot be read" in record.summary
        assert status(root, "sessions/2026-08-01/old.md") == "archived"


def test_the_job_is_off_by_default_and_the_policy_empty() -> None:
    settings = load_settings(env={})
    assert settings.server.schedule.expire is None and settings.lifecycle.expire == {}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            'lifecycle.expire={"sessions/": 3m}',
            "lifecycle.expire: sessions/: '3m' is not a duration",
        ),
        ('lifecycle.expire={"sessions": 3d}', "'sessions' is not a workspace folder"),
        ('lifecycle.expire={"../x/": 3d}', "'../x/' is not a workspace folder"),
        ('lifecycle.expire={"/abs/": 3d}', "'/abs/' is not a workspace folder"),
        ("lifecycle.purge=true", "lifecycle.purge: unknown key"),
        ("server.schedule.expire='every day'", "server.schedule.expire"),
    ],
)
def test_bad_lifecycle_config_is_an_error_with_its_path(
    override: str, message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as info:
        settings = load_settings(overrides=[override], env={})
        from reme_core.server.scheduler import schedule_crons

        schedule_crons(settings)
    assert message in str(info.value)


def test_a_policy_counts_from_the_file_time_when_the_note_has_no_date(root: Path) -> None:
    with _open(root, 'lifecycle.expire={"digest/procedure/": 3d}') as reme:
        rel = "digest/procedure/undated.md"
        (root / rel).write_text("# Undated\n\nno date anywhere\n", encoding="utf-8")
        old = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
        os.utime(root / rel, (old, old))
        reme.index()
        report = OPERATIONS["expire"].call(reme, {"today": TODAY.isoformat()})
        assert report["archived"][rel] == "2026-11-04"
        assert status(root, rel) == "archived"


def test_spilled_tool_results_older_than_their_policy_are_deleted(root: Path) -> None:
    with _open(root, 'lifecycle.expire={"tool_results/": 3d}') as reme:
        spills = root / "tool_results"
        spills.mkdir(exist_ok=True)
        for name, day in (("old.txt", dt.date(2026, 11, 30)), ("new.txt", dt.date(2026, 12, 2))):
            (spills / name).write_text("spilled output\n", encoding="utf-8")
            stamp = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
            os.utime(spills / name, (stamp, stamp))
        dry = OPERATIONS["expire"].call(reme, {"today": "2026-12-04", "dry_run": True})
        assert dry["deleted"] == [] and (spills / "old.txt").exists()
        report = OPERATIONS["expire"].call(reme, {"today": "2026-12-04"})
        assert report["deleted"] == ["tool_results/old.txt"]
        assert not (spills / "old.txt").exists() and (spills / "new.txt").exists()
