"""The studio's forget and purge by query, in-process: a dry-run list of the notes holding the
query's words, then the forget (archived, one history entry) or the purge (only with the query
typed), for an admin token only; a list that changed since it was shown is refused with nothing
changed."""

from __future__ import annotations

import html
import re

import pytest

from tests.server.api_support import Served
from tests.studio.support import csrf_of
from tests.studio.test_lifecycle_pages import FORGET_NOTE, PURGE_NOTE, SECRET, api, note
from tests.studio.test_routes import browser, disk

__all__ = ["api"]  # the fixture, shared

OTHER_OFFSITE = "digest/wiki/offsite-budget.md"


def listed(text: str) -> list[str]:
    """The notes a dry-run page lists (the confirm form's ``expect``)."""
    found = re.search(r'name="expect" value="([^"]*)"', text)
    return html.unescape(found.group(1)).splitlines() if found else []


def confirm(client, query: str, mode: str, **fields: str):  # type: ignore[no-untyped-def]
    """The dry-run page for ``query``, then its confirm form posted (``fields`` override)."""
    page = client.get("/studio/forget", params={"query": query, "mode": mode})
    assert page.status_code == 200, page.text
    data = {"csrf": csrf_of(page.text), "query": query, "limit": "10"}
    data["expect"] = "\n".join(listed(page.text))
    url = "/studio/purge" if mode == "purge" else "/studio/forget"
    return client.post(url, data={**data, **fields})


def test_the_dry_run_lists_the_matching_notes_and_changes_nothing(api: Served) -> None:
    api.post("write", {"path": OTHER_OFFSITE, "content": note("Budget", "The offsite budget.")})
    before = {p: disk(api, p) for p in (FORGET_NOTE, OTHER_OFFSITE, PURGE_NOTE)}
    client = browser(api)
    page = client.get("/studio/forget", params={"query": "offsite"})
    assert page.status_code == 200, page.text
    assert sorted(listed(page.text)) == sorted([FORGET_NOTE, OTHER_OFFSITE])
    assert "Would forget 2 note(s)" in page.text and 'action="/studio/forget"' in page.text
    purge = client.get("/studio/forget", params={"query": "zebra-quokka-7731", "mode": "purge"})
    assert listed(purge.text) == [PURGE_NOTE]
    assert 'name="confirm_query"' in purge.text
    assert "digest/wiki/links-to-purge.md" in purge.text  # its link will dangle
    assert {p: disk(api, p) for p in before} == before
    search = client.get("/studio/search", params={"q": "offsite"}).text
    assert 'href="/studio/forget?query=offsite"' in search


def test_forget_by_query_archives_them_in_one_revertible_entry(api: Served) -> None:
    api.post("write", {"path": OTHER_OFFSITE, "content": note("Budget", "The offsite budget.")})
    done = confirm(browser(api), "offsite", "archive")
    assert done.status_code == 200, done.text
    assert "Forgot" in done.text
    for path in (FORGET_NOTE, OTHER_OFFSITE):
        assert "status: archived" in disk(api, path), path
    assert "status:" not in disk(api, PURGE_NOTE)
    run = re.findall(r'href="/studio/history/revert\?run=([0-9a-f]+)"', done.text)
    assert len(set(run)) == 1, done.text


def test_a_list_that_changed_since_it_was_shown_changes_nothing(api: Served) -> None:
    client = browser(api)
    page = client.get("/studio/forget", params={"query": "offsite"})
    assert listed(page.text) == [FORGET_NOTE]
    api.post("write", {"path": OTHER_OFFSITE, "content": note("Budget", "The offsite budget.")})
    stale = client.post(
        "/studio/forget",
        data={"csrf": csrf_of(page.text), "query": "offsite", "expect": FORGET_NOTE},
    )
    assert stale.status_code == 409, stale.text
    assert "Nothing was changed" in stale.text
    assert sorted(listed(stale.text)) == sorted([FORGET_NOTE, OTHER_OFFSITE])
    assert "status:" not in disk(api, FORGET_NOTE)
    assert "status:" not in disk(api, OTHER_OFFSITE)


@pytest.mark.parametrize("typed", ["", "zebra-quokka", "offsite"])
def test_a_purge_by_query_without_the_typed_query_changes_nothing(api: Served, typed: str) -> None:
    refused = confirm(browser(api), "zebra-quokka-7731", "purge", confirm_query=typed)
    assert refused.status_code == 409, refused.text
    assert "Not purged" in refused.text and 'name="confirm_query"' in refused.text
    assert SECRET in disk(api, PURGE_NOTE)


def test_a_confirmed_purge_by_query_leaves_no_trace(api: Served) -> None:
    query = "zebra-quokka-7731"
    done = confirm(browser(api), query, "purge", confirm_query=query)
    assert done.status_code == 200, done.text
    assert "No trace remains" in done.text and f"<code>{PURGE_NOTE}</code>" in done.text
    assert not (api.project / PURGE_NOTE).exists()
    assert (api.project / FORGET_NOTE).exists()
    found = api.post("search", {"query": query}).json()
    assert PURGE_NOTE not in [hit["path"] for hit in found["hits"]]
    held = [
        p
        for p in (api.project / ".reme").rglob("*")
        if p.is_file() and b"zebra-quokka" in p.read_bytes()
    ]
    assert held == []


def test_no_match_says_so(api: Served) -> None:
    page = browser(api).get("/studio/forget", params={"query": "xylophone-nowhere"})
    assert page.status_code == 404
    assert "no note holds the words" in page.text and 'name="expect"' not in page.text


@pytest.mark.parametrize("who", ["read", "write"])
def test_other_tokens_get_a_403_and_a_forged_post_changes_nothing(api: Served, who: str) -> None:
    client = browser(api, who)
    page = client.get("/studio/forget", params={"query": "offsite"})
    assert page.status_code == 403 and "needs a token that may call" in page.text
    assert 'name="expect"' not in page.text
    search = client.get("/studio/search", params={"q": "offsite"}).text
    assert "/studio/forget" not in search
    token = csrf_of(client.get(f"/studio/browse?path={FORGET_NOTE}").text)
    before = {p: disk(api, p) for p in (FORGET_NOTE, PURGE_NOTE)}
    fields = {"csrf": token, "query": "zebra-quokka-7731", "expect": PURGE_NOTE}
    forget = client.post("/studio/forget", data=fields)
    purge = client.post("/studio/purge", data={**fields, "confirm_query": "zebra-quokka-7731"})
    assert (forget.status_code, purge.status_code) == (403, 403), (forget.text, purge.text)
    assert {p: disk(api, p) for p in before} == before
