"""``expires:`` honoured by search: a date, or a duration from ``created`` (else the note's
date); an expired note is left out like an archived one, found when archived notes are asked
for, and expires at midnight without being written again (issue 24)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FAKE_VECTORS

from reme_core.runtime import Reme
from reme_core.schema import NoteSummary, SearchFilters
from reme_core.search.expiry import expiry_of, parse_duration, parse_expires
from reme_core.service.operations import OPERATIONS

TODAY = dt.date(2026, 12, 3)
NOTES = {
    "digest/wiki/by-date.md": "---\nexpires: 2026-12-01\n---\n\n# Wombat roster\n\nwombat shifts\n",
    "digest/wiki/later.md": "---\nexpires: 2027-01-01\n---\n\n# Wombat later\n\nwombat duties\n",
    "digest/wiki/by-duration.md": (
        "---\ncreated: 2026-11-01\nexpires: 30d\n---\n\n# Wombat duration\n\nwombat feeding\n"
    ),
    "daily/2026-11-20/from-date.md": "---\nexpires: 2w\n---\n\n# Wombat daily\n\nwombat walk\n",
    "digest/wiki/keeps.md": "# Wombat keeps\n\nwombat forever\n",
    "digest/wiki/broken.md": "---\nexpires: soon\n---\n\n# Wombat broken\n\nwombat unknown\n",
}


@pytest.fixture
def reme(root: Path, default_plugins) -> Iterator[Reme]:
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    opened = Reme.open(root, plugins=default_plugins, env={}, overrides=FAKE_VECTORS)
    opened.index()
    opened.searcher._allowed.today = lambda: TODAY
    yield opened
    opened.close()


def found(reme: Reme, **filters: object) -> set[str]:
    response = reme.search("wombat", limit=20, filters=SearchFilters(**filters))
    return {hit.path for hit in response.hits}


def test_search_leaves_expired_notes_out_by_date_and_by_duration(reme: Reme) -> None:
    # by-date expired on 12-01; by-duration on 11-01 + 30d = 12-01; from-date on 11-20 + 14d =
    # 12-04 (not yet). A malformed expires never hides a note.
    assert found(reme) == {
        "digest/wiki/later.md",
        "daily/2026-11-20/from-date.md",
        "digest/wiki/keeps.md",
        "digest/wiki/broken.md",
    }
    # Both arms: the vector arm is held to the same allowed set.
    response = reme.search("wombat", limit=20)
    assert "vector" in response.arms


def test_expired_notes_are_found_as_archived(reme: Reme) -> None:
    assert found(reme, statuses=["archived"]) == {
        "digest/wiki/by-date.md",
        "digest/wiki/by-duration.md",
    }
    assert len(found(reme, statuses=["active", "archived"])) == len(NOTES)


def test_a_note_expires_at_midnight_without_a_write(reme: Reme) -> None:
    assert "daily/2026-11-20/from-date.md" in found(reme)
    reme.searcher._allowed.today = lambda: TODAY + dt.timedelta(days=1)
    assert "daily/2026-11-20/from-date.md" not in found(reme)
    reme.searcher._allowed.today = lambda: dt.date(2026, 11, 30)
    assert "digest/wiki/by-date.md" in found(reme)


def test_an_edit_that_adds_expires_takes_effect_at_once(reme: Reme) -> None:
    reme.files.update_frontmatter("digest/wiki/keeps.md", {"expires": "2026-01-01"})
    assert "digest/wiki/keeps.md" not in found(reme)
    reme.files.update_frontmatter("digest/wiki/keeps.md", {}, remove=["expires"])
    assert "digest/wiki/keeps.md" in found(reme)


def test_expires_values() -> None:
    assert parse_expires("2026-03-01") == dt.date(2026, 3, 1)
    assert parse_expires(dt.date(2026, 3, 1)) == dt.date(2026, 3, 1)
    assert parse_expires("90d") == dt.timedelta(days=90)
    assert parse_duration("12w") == dt.timedelta(days=84)
    for bad in ("soon", "3m", "0d", "-1d", "99999999d", ""):
        with pytest.raises(ValueError, match="expires"):
            parse_expires(bad)
    note = NoteSummary(path="x.md", content_hash="h", size=1, frontmatter={"expires": "3d"})
    assert expiry_of(note) is None  # a duration with nothing to count from


POLICY = 'lifecycle.expire={"sessions/": 90d, "sessions/keep/": 1000w}'
SESSIONS = {
    "sessions/2026-08-01/old.md": "---\ndate: 2026-08-01\n---\n\n# Old\n\nwombat standup old\n",
    "sessions/2026-11-30/new.md": "---\ndate: 2026-11-30\n---\n\n# New\n\nwombat standup new\n",
    "sessions/keep/2026-01-01/kept.md": "---\ndate: 2026-01-01\n---\n\nwombat standup kept\n",
    "sessions/2026-01-02/own.md": (
        "---\ndate: 2026-01-02\nexpires: 2027-01-01\n---\n\nwombat standup own\n"
    ),
    "sessions/undated.md": "# Undated\n\nwombat standup undated\n",
    "sessions/2026-01-03/done.md": (
        "---\ndate: 2026-01-03\nstatus: superseded\n---\n\nwombat standup done\n"
    ),
}


def test_search_honours_the_folder_policy_before_the_expire_job_ran(
    root: Path, default_plugins
) -> None:
    for rel, text in SESSIONS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    old = dt.datetime(2026, 1, 5, tzinfo=dt.UTC).timestamp()
    os.utime(root / "sessions/undated.md", (old, old))  # counts from the file's day
    with Reme.open(
        root, plugins=default_plugins, env={}, overrides=[*FAKE_VECTORS, POLICY, "timezone=UTC"]
    ) as opened:
        opened.index()
        opened.searcher._allowed.today = lambda: TODAY

        def standup(*statuses: str) -> set[str]:
            filters = SearchFilters(statuses=list(statuses)) if statuses else None
            return {h.path for h in opened.search("wombat standup", limit=20, filters=filters).hits}

        # old (08-01 + 90d) and undated (its file's day) are past sessions/' 90 days; kept's
        # folder keeps 1000 weeks; own's expires: wins over the folder; new is recent.
        assert standup() == {
            "sessions/2026-11-30/new.md",
            "sessions/keep/2026-01-01/kept.md",
            "sessions/2026-01-02/own.md",
        }
        # Found as archived, as the job would leave them; the superseded one stays superseded.
        assert standup("archived") == {"sessions/2026-08-01/old.md", "sessions/undated.md"}
        assert standup("superseded") == {"sessions/2026-01-03/done.md"}
        # The job archives exactly what search already left out.
        report = OPERATIONS["expire"].call(opened, {"today": TODAY.isoformat()})
        assert set(report["archived"]) == {"sessions/2026-08-01/old.md", "sessions/undated.md"}
        opened.index()
        assert standup("archived") == {"sessions/2026-08-01/old.md", "sessions/undated.md"}
        assert standup() == {
            "sessions/2026-11-30/new.md",
            "sessions/keep/2026-01-01/kept.md",
            "sessions/2026-01-02/own.md",
        }
