"""The studio's forgetting and expiry, in-process: Forget and Purge only for an admin token (and
refused by the server for anyone else, nothing changed), a purge only with the note's path typed,
its report, the revert of a forget, the expires / expired / archived / superseded banners, and
the Status page's list of expired and expiring notes."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from reme_core.server.workspaces import DEFAULT
from reme_core.workspace.history_entries import PURGE_REWRITE
from tests.server.api_support import Served, served
from tests.studio.support import csrf_of
from tests.studio.test_routes import browser, disk

FORGET_NOTE = "digest/wiki/forget-me.md"
PURGE_NOTE = "digest/wiki/purge-me.md"
SECRET = "zebra-quokka-7731 is the door code of the old office"


def note(name: str, body: str, **fm: str) -> str:
    head = "".join(f"{k}: {v}\n" for k, v in {"name": name, **fm}.items())
    return f"---\n{head}---\n# {name}\n\n{body}\n"


@pytest.fixture
def api(tmp_path) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    with served(tmp_path) as found:
        for path, text in {
            FORGET_NOTE: note("Forget me", "An outdated plan for the spring offsite."),
            PURGE_NOTE: note("Purge me", SECRET),
            "digest/wiki/links-to-purge.md": "See [[purge-me]].\n",
        }.items():
            assert found.post("write", {"path": path, "content": text}).status_code == 200
        yield found


def csrf(client: TestClient, path: str) -> str:
    response = client.get(f"/studio/browse?path={path}")
    assert response.status_code == 200, response.text
    return csrf_of(response.text)


def post(client: TestClient, url: str, path: str, **fields: str):  # type: ignore[no-untyped-def]
    return client.post(url, data={"csrf": csrf(client, path), "path": path, **fields})


def test_only_an_admin_sees_forget_and_purge(api: Served) -> None:
    admin = browser(api).get(f"/studio/browse?path={FORGET_NOTE}").text
    assert 'action="/studio/forget"' in admin
    assert f'href="/studio/purge?path={FORGET_NOTE}"' in admin
    for who in ("read", "write"):
        html = browser(api, who).get(f"/studio/browse?path={FORGET_NOTE}").text
        assert "/studio/forget" not in html and "/studio/purge" not in html, who


@pytest.mark.parametrize("who", ["read", "write"])
def test_the_purge_page_is_a_403_for_other_tokens(api: Served, who: str) -> None:
    response = browser(api, who).get(f"/studio/purge?path={PURGE_NOTE}")
    assert response.status_code == 403
    assert f"yours is &#39;{who}&#39;" in response.text
    assert 'action="/studio/purge"' not in response.text


@pytest.mark.parametrize("who", ["read", "write"])
def test_the_server_refuses_a_forged_forget_or_purge(api: Served, who: str) -> None:
    client = browser(api, who)
    before = {p: disk(api, p) for p in (FORGET_NOTE, PURGE_NOTE)}
    forget = post(client, "/studio/forget", FORGET_NOTE)
    purge = post(client, "/studio/purge", PURGE_NOTE, confirm_path=PURGE_NOTE)
    assert (forget.status_code, purge.status_code) == (403, 403), (forget.text, purge.text)
    assert "admin" in purge.text
    assert {p: disk(api, p) for p in before} == before


def test_a_forget_or_purge_without_the_csrf_token_is_refused(api: Served) -> None:
    client = browser(api)
    for url in ("/studio/forget", "/studio/purge"):
        fields = {"path": PURGE_NOTE, "confirm_path": PURGE_NOTE}
        response = client.post(url, data=fields)
        assert response.status_code == 403 and "CSRF" in response.text
    assert SECRET in disk(api, PURGE_NOTE)


def test_forget_archives_and_links_the_revert(api: Served) -> None:
    client = browser(api)
    before = disk(api, FORGET_NOTE)
    done = post(client, "/studio/forget", FORGET_NOTE)
    assert done.status_code == 200, done.text
    assert "status: archived" in disk(api, FORGET_NOTE)
    run = re.search(r'href="/studio/history/revert\?run=([0-9a-f]+)"', done.text)
    assert run is not None, done.text
    page = client.get(f"/studio/browse?path={FORGET_NOTE}").text
    assert "Archived</strong> on" in page
    assert 'action="/studio/forget"' not in page  # archived already: no second Forget
    preview = client.get(f"/studio/history/revert?run={run.group(1)}")
    assert preview.status_code == 200 and FORGET_NOTE in preview.text
    reverted = client.post(
        "/studio/revert",
        data={"csrf": csrf_of(preview.text), "run": run.group(1), "confirm": "yes"},
    )
    assert reverted.status_code == 200, reverted.text
    assert disk(api, FORGET_NOTE) == before


@pytest.mark.parametrize("typed", ["", "digest/wiki/purge-me", "digest/wiki/forget-me.md"])
def test_a_purge_without_the_typed_path_changes_nothing(api: Served, typed: str) -> None:
    client = browser(api)
    page = client.get(f"/studio/purge?path={PURGE_NOTE}")
    assert page.status_code == 200
    assert "digest/wiki/links-to-purge.md" in page.text  # its links will dangle
    refused = post(client, "/studio/purge", PURGE_NOTE, confirm_path=typed)
    assert refused.status_code == 409, refused.text
    assert "Not purged" in refused.text and 'name="confirm_path"' in refused.text
    assert SECRET in disk(api, PURGE_NOTE)
    found = api.post("search", {"query": "zebra-quokka-7731"}).json()
    assert PURGE_NOTE in [hit["path"] for hit in found["hits"]]


def test_a_confirmed_purge_removes_every_trace_and_reports_it(api: Served) -> None:
    client = browser(api)
    done = post(client, "/studio/purge", PURGE_NOTE, confirm_path=PURGE_NOTE)
    assert done.status_code == 200, done.text
    assert not (api.project / PURGE_NOTE).exists()
    assert "No trace remains" in done.text
    assert re.search(r"chunks</th><td>[1-9]", done.text), done.text
    found = api.post("search", {"query": "zebra-quokka-7731"}).json()
    assert PURGE_NOTE not in [hit["path"] for hit in found["hits"]]
    held = [
        p
        for p in (api.project / ".reme").rglob("*")
        if p.is_file() and b"zebra-quokka" in p.read_bytes()
    ]
    assert held == []


def test_a_purges_own_entry_says_it_cannot_be_reverted_before_anyone_tries(api: Served) -> None:
    reme = api.registry.get(DEFAULT)
    # The entry a purge records for the files pipelines keep (the proactive topics), as
    # reme_core.service.forget makes it: reverting it is refused whatever the consent.
    (api.project / "daily").mkdir(exist_ok=True)
    (api.project / "daily/_proactive.yaml").write_text("topics: []\n", encoding="utf-8")
    purge = reme.history.record(PURGE_REWRITE + "daily/_proactive.yaml")
    assert purge is not None
    other = reme.history.entries(2)[1].run  # the write before it: revertible
    listed = api.post("history", {"limit": 5}).json()["entries"]
    reasons = {e["run"]: e["not_revertible"] for e in listed}
    assert "cannot be undone" in reasons[purge] and reasons[other] is None
    assert "nothing was changed" not in reasons[purge]  # said before trying, not after

    client = browser(api)
    history = client.get("/studio/history").text
    entries = dict(re.findall(r"<code>([0-9a-f]+)</code>(.*?)</li>", history, re.S))
    assert f"/studio/history/revert?run={purge}" not in entries[purge]
    assert re.search(r"<button[^>]*disabled[^>]*>Revert…</button>", entries[purge])
    assert f"Cannot be reverted: {purge} is part of a purge" in entries[purge]
    assert f'href="/studio/history/revert?run={other}"' in entries[other]
    assert "Cannot be reverted" not in entries[other]
    shown = client.get(f"/studio/history/show?run={purge}").text
    assert "+topics: []" in shown and "Reverting would" not in shown  # no plan it cannot run
    assert "Reverting would" in client.get(f"/studio/history/show?run={other}").text
    preview = client.get(f"/studio/history/revert?run={purge}").text
    assert "Cannot be reverted" in preview and "cannot be undone" in preview
    assert 'action="/studio/revert"' not in preview
    assert re.search(rf"<button[^>]*disabled>Revert {purge}</button>", preview)
    assert "Cannot be reverted" not in client.get(f"/studio/history/revert?run={other}").text


def day(offset: int) -> str:
    # Today when the test runs, not when it was collected: a run across midnight moved the day.
    return (dt.date.today() + dt.timedelta(days=offset)).isoformat()


def test_the_note_page_shows_expiry_and_supersession(api: Served) -> None:
    notes = {
        "digest/wiki/exp-past.md": note("Past", "Old.", expires=day(-3)),
        "digest/wiki/exp-future.md": note("Future", "Soon.", expires=day(5)),
        "digest/wiki/exp-duration.md": note("Duration", "Dur.", created=day(-10), expires="30d"),
        "digest/wiki/exp-bad.md": note("Bad", "Bad.", expires="someday"),
        "digest/wiki/newer.md": note("Newer", "The current plan."),
        "digest/wiki/older.md": note(
            "Older",
            "The old plan.",
            status="superseded",
            superseded_by='"[[digest/wiki/newer]]"',
            superseded_on="2026-11-01",
        ),
        "digest/wiki/orphan.md": note(
            "Orphan", "x", status="superseded", superseded_by='"[[gone-note]]"'
        ),
    }
    for path, text in notes.items():
        assert api.post("write", {"path": path, "content": text}).status_code == 200
    read = browser(api, "read")

    def shown(path: str) -> str:
        response = read.get(f"/studio/browse?path={path}")
        assert response.status_code == 200, response.text
        return response.text

    assert f"Expired on {day(-3)}</strong>" in shown("digest/wiki/exp-past.md")
    assert f"Expires on {day(5)}</strong> (in 5 days)" in shown("digest/wiki/exp-future.md")
    assert f"Expires on {day(20)}</strong> (in 20 days; expires: 30d)" in shown(
        "digest/wiki/exp-duration.md"
    )
    assert "expires: someday</strong> cannot be read" in shown("digest/wiki/exp-bad.md")
    older = shown("digest/wiki/older.md")
    assert "Superseded</strong> on 2026-11-01 by" in older
    assert 'href="/studio/browse?path=digest/wiki/newer.md"' in older
    assert "[[digest/wiki/newer]]</a>" in older
    orphan = shown("digest/wiki/orphan.md")
    assert 'class="wikilink dangling" title="no note [[gone-note]]"' in orphan
    for plain in ("digest/wiki/newer.md", FORGET_NOTE):
        assert 'class="lifecycle' not in shown(plain)


def test_the_status_page_lists_expired_and_expiring_notes_for_an_admin(api: Served) -> None:
    notes = {
        "digest/wiki/exp-past.md": note("Past", "Old.", expires=day(-3)),
        "digest/wiki/exp-soon.md": note("Soon", "Soon.", expires=day(4)),
        "digest/wiki/exp-later.md": note("Later", "Later.", expires=day(100)),
        "digest/wiki/exp-bad.md": note("Bad", "Bad.", expires="someday"),
    }
    for path, text in notes.items():
        assert api.post("write", {"path": path, "content": text}).status_code == 200
    admin = browser(api)
    assert 'hx-get="/studio/expiring"' in admin.get("/studio/status").text
    listed = admin.get("/studio/expiring", headers={"HX-Request": "true"})
    assert listed.status_code == 200, listed.text
    expired, rest = listed.text.split("Expiring soon", 1)
    soon, invalid = rest.split("Unreadable", 1)
    assert "digest/wiki/exp-past.md" in expired and f"expired on {day(-3)}" in expired
    assert "digest/wiki/exp-soon.md" in soon and "in 4 day(s)" in soon
    assert "exp-later" not in listed.text
    assert "digest/wiki/exp-bad.md" in invalid
    assert f"expires: {day(-3)}" in disk(api, "digest/wiki/exp-past.md")  # a dry run
    assert "status:" not in disk(api, "digest/wiki/exp-past.md")
    read = browser(api, "read")
    assert "/studio/expiring" not in read.get("/studio/status").text
    assert "needs a token that may call" in read.get("/studio/expiring").text
