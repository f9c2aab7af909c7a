"""The studio in a real headless browser (Debian's Chromium driven by Playwright) against a real
``reme serve``: one server and one browser for the whole module, a fresh browser context (own
cookies) per test. Each test changes only notes of its own, so the order does not matter.

Skipped where Chromium or playwright is missing, except under ``REME_REQUIRE_BROWSER=1`` (CI),
where that is a failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from reme_core.service.operations import OPERATIONS
from reme_core.studio import pages
from tests.studio.support import (
    PROPOSALS,
    RUN_NOTE,
    XSS_NOTE,
    Studio,
    browser_ready,
    launch,
    require_browser,
    studio_server,
)

NOTE = "digest/wiki/larkspur-architecture.md"
WHY_NOT = browser_ready()
if WHY_NOT is not None:
    if require_browser():
        raise RuntimeError(f"REME_REQUIRE_BROWSER=1 but {WHY_NOT}")
    pytest.skip(WHY_NOT, allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    with studio_server(tmp_path_factory.mktemp("studio-browser")) as found:
        yield found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as playwright:
        chromium = launch(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


def open_page(browser: Any, studio: Studio, who: str | None = "admin", width: int = 1280) -> Page:
    context = browser.new_context(base_url=studio.url, viewport={"width": width, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda error: page.errors.append(str(error)))  # type: ignore[attr-defined]
    page.on(
        "console",
        lambda message: (
            message.type == "error"
            and "Content Security Policy" in message.text
            and page.errors.append(message.text)
        ),  # type: ignore[attr-defined]
    )
    if who is not None:
        page.goto(studio.login_url(who))
    return page


@pytest.fixture
def admin(browser: Any, studio: Studio) -> Iterator[Page]:
    page = open_page(browser, studio)
    yield page
    assert page.errors == [], page.errors  # type: ignore[attr-defined]
    page.context.close()


def api(studio: Studio, operation: str, body: dict[str, Any]) -> Any:
    response = httpx.post(
        f"{studio.url}/api/v1/{operation}",
        json=body,
        headers={"Authorization": f"Bearer {studio.tokens['admin']}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return response.json()


def set_editor(page: Page, text: str) -> None:
    page.wait_for_selector(".CodeMirror")
    page.evaluate("text => document.querySelector('.CodeMirror').CodeMirror.setValue(text)", text)


def test_the_login_url_sets_an_httponly_cookie_and_leaves_the_url(
    browser: Any, studio: Studio
) -> None:
    assert any(line == f"studio: {studio.login_url()}" for line in studio.messages)
    page = open_page(browser, studio, None)
    page.goto(studio.login_url("admin", "/studio/search"))
    assert page.url == f"{studio.url}/studio/search"
    assert studio.tokens["admin"] not in page.content()
    cookies = page.context.cookies()
    assert len(cookies) == 1
    assert cookies[0]["httpOnly"] and cookies[0]["sameSite"] == "Strict"
    assert studio.tokens["admin"] not in cookies[0]["value"]
    assert page.evaluate("document.cookie") == ""  # HttpOnly: scripts cannot read it
    expect(page.locator(".badge.profile-admin")).to_have_text("admin")
    page.context.close()


def test_browse_a_note_from_the_lazy_tree(admin: Page) -> None:
    admin.goto("/")
    tree = admin.locator(".sidebar")
    expect(tree.get_by_text("session-deploy-failure.md")).to_have_count(0)  # not loaded yet
    tree.locator("summary", has_text="digest/").click()
    tree.locator("summary", has_text="wiki/").click()
    tree.get_by_role("link", name="larkspur-architecture.md").click()
    admin.wait_for_url(re.compile(r"path=digest/wiki/larkspur-architecture\.md"))
    expect(admin.locator("h1#title")).to_have_text("Larkspur architecture")
    expect(admin.locator("table.frontmatter")).to_contain_text("architecture")
    expect(admin.locator(".markdown table")).to_contain_text("pgbouncer")  # a Markdown table
    link = admin.locator(".markdown a.wikilink", has_text="old-hosting-heroku")
    expect(link).to_have_attribute("href", "/studio/browse?path=digest/wiki/old-hosting-heroku.md")
    backlinks = admin.locator("section[aria-labelledby=backlinks]")
    expect(backlinks).to_contain_text("digest/procedure/deploy-process.md")
    expect(admin.locator(".history-list")).to_contain_text("snapshot")  # loaded by htmx
    link.click()
    expect(admin.locator("h1#title")).to_contain_text("Heroku")


def test_daily_notes_are_grouped_by_month_and_date(admin: Page) -> None:
    admin.goto("/")
    tree = admin.locator(".sidebar")
    tree.locator("summary", has_text="daily/").click()
    tree.locator("summary", has_text="2026-11").first.click()
    tree.locator("summary", has_text="2026-11-02").click()
    tree.get_by_role("link", name="session-deploy-failure.md").click()
    expect(admin.locator("h1#title")).to_contain_text("Deploy failure")


def test_edit_saves_and_a_concurrent_change_is_shown_not_overwritten(
    admin: Page, studio: Studio
) -> None:
    path = "digest/wiki/browser-edit.md"
    api(studio, "write", {"path": path, "content": "# Plan\n\nShip on Friday.\n"})
    admin.goto(f"/studio/browse?path={path}")
    admin.get_by_role("link", name="Edit", exact=True).click()
    set_editor(admin, "# Plan\n\nShip on Friday, after the audit.\n")
    admin.get_by_role("button", name="Save", exact=True).click()
    expect(admin.locator("[role=status]")).to_have_text("Saved.")
    expect(admin.locator(".markdown")).to_contain_text("after the audit")
    assert (studio.root / path).read_text() == "# Plan\n\nShip on Friday, after the audit.\n"

    admin.get_by_role("link", name="Edit", exact=True).click()
    admin.wait_for_selector(".CodeMirror")
    # Someone edits the note in another editor while it is open here.
    (studio.root / path).write_text("# Plan\n\nShip on Thursday.\n", encoding="utf-8")
    set_editor(admin, "# Plan\n\nShip on Friday, after the audit and the docs.\n")
    admin.locator("#save").click()
    conflict = admin.locator(".conflict")
    expect(conflict).to_contain_text("Not saved")
    expect(conflict.locator("pre.diff .del")).to_contain_text(["-Ship on Thursday."])
    expect(conflict.locator("pre.diff .add")).to_contain_text(
        ["+Ship on Friday, after the audit and the docs."]
    )
    assert (studio.root / path).read_text() == "# Plan\n\nShip on Thursday.\n"
    mine = admin.evaluate("document.querySelector('.CodeMirror').CodeMirror.getValue()")
    assert "after the audit and the docs" in mine  # the visitor's text is kept


def test_create_move_and_delete_show_the_links_they_touch(admin: Page, studio: Studio) -> None:
    api(studio, "write", {"path": "digest/wiki/cites-draft.md", "content": "See [[draft-x]].\n"})
    admin.goto("/studio/new?folder=digest/wiki")
    admin.get_by_label("Path").fill("digest/wiki/draft-x.md")
    set_editor(admin, "# Draft X\n")
    admin.get_by_role("button", name="Create", exact=True).click()
    expect(admin.locator("h1#title")).to_have_text("draft-x.md")
    admin.get_by_role("link", name="Move", exact=True).click()
    expect(admin.locator("main")).to_contain_text("digest/wiki/cites-draft.md")
    admin.get_by_label("New path").fill("digest/wiki/final-x.md")
    admin.get_by_role("button", name="Move", exact=True).click()
    expect(admin.locator(".rewritten")).to_contain_text("digest/wiki/cites-draft.md")
    assert (studio.root / "digest/wiki/cites-draft.md").read_text() == "See [[final-x]].\n"
    admin.get_by_role("link", name="digest/wiki/final-x.md").click()
    admin.get_by_role("link", name="Delete", exact=True).click()
    expect(admin.locator(".dangling-list")).to_contain_text("digest/wiki/cites-draft.md")
    # The confirmation box is not ticked: the browser does not send the form.
    admin.get_by_role("button", name="Delete", exact=True).click()
    assert (studio.root / "digest/wiki/final-x.md").exists()
    admin.get_by_label(re.compile("Yes, delete")).check()
    admin.get_by_role("button", name="Delete", exact=True).click()
    expect(admin.locator("h1")).to_contain_text("Deleted")
    assert not (studio.root / "digest/wiki/final-x.md").exists()


def test_search_with_a_filter_shows_ranks_snippets_and_arms(admin: Page) -> None:
    admin.goto("/studio/search")
    admin.get_by_label("Query").fill("deploy")
    admin.get_by_label("Paths (prefix or glob)").fill("digest/**")
    admin.get_by_label("Query").press("Enter")
    hits = admin.locator(".hit")
    expect(hits.first).to_be_visible()
    admin.wait_for_url(re.compile(r"q=deploy"))  # the URL follows the search (htmx push)
    paths = admin.locator(".hit-path code").all_inner_texts()
    assert paths and all(p.startswith("digest/") for p in paths), paths
    expect(hits.first.locator("mark").first).to_have_text(re.compile("deploy", re.I))
    expect(admin.locator(".search-meta")).to_contain_text("vector")
    expect(hits.first.locator(".badge.arm").first).to_have_text(re.compile(r"#\d+"))
    expect(hits.first.locator(".score")).to_have_text(re.compile(r"score [01]\.\d{3}"))


def test_search_says_when_nothing_relevant_was_found(admin: Page) -> None:
    admin.goto("/studio/search?q=zzzxqv")
    expect(admin.locator(".hit").first).to_be_visible()  # nearest notes are still listed ...
    expect(admin.locator(".notice.no-match")).to_have_text(re.compile("Nothing relevant found"))
    admin.goto("/studio/search?q=deploy")
    expect(admin.locator(".hit").first).to_be_visible()
    expect(admin.locator(".notice.no-match")).to_have_count(0)


def test_the_graph_draws_nodes_and_a_click_opens_one(admin: Page) -> None:
    admin.goto(f"/studio/graph?path={NOTE}&depth=2")
    box = admin.locator("#graph.ready")
    expect(box).to_be_visible()
    assert int(box.get_attribute("data-nodes") or 0) > 5
    assert admin.locator("#graph canvas").count() >= 1
    target = admin.evaluate(
        """() => {
            const node = window.remeGraph.nodes('[depth = 1]')[0];
            const at = node.renderedPosition();
            const box = document.getElementById('graph').getBoundingClientRect();
            return {id: node.id(), x: box.left + at.x, y: box.top + at.y};
        }"""
    )
    admin.mouse.click(target["x"], target["y"])
    admin.wait_for_url(re.compile(re.escape(f"path={quote(target['id'], safe='/')}")))


def test_revert_lists_the_files_it_deletes_and_asks_first(admin: Page, studio: Studio) -> None:
    run = studio.made["run"]
    admin.goto("/studio/history")
    entry = admin.locator(".entry", has_text=run)
    entry.locator("summary").click()
    expect(entry.locator("pre.diff")).to_contain_text("+Made by a run.")
    entry.get_by_role("link", name="Revert…").click()
    expect(admin.locator(".plan-list")).to_contain_text(f"delete {RUN_NOTE}")
    admin.get_by_role("button", name=f"Revert {run}").click()  # not confirmed: not sent
    expect(admin.locator(".plan-list")).to_be_visible()
    assert (studio.root / RUN_NOTE).exists()
    admin.get_by_label(re.compile("Yes, delete the 1 file")).check()
    admin.get_by_role("button", name=f"Revert {run}").click()
    expect(admin.locator("h1")).to_contain_text(f"Reverted {run}")
    assert not (studio.root / RUN_NOTE).exists()
    admin.goto("/studio/history")
    expect(admin.locator(".entry").first).to_contain_text("revert")


def test_a_read_token_gets_no_write_controls_and_a_forged_post_is_refused(
    browser: Any, studio: Studio
) -> None:
    page = open_page(browser, studio, "read")
    page.goto(f"/studio/browse?path={NOTE}")
    expect(page.locator(".badge.profile-read")).to_have_text("read")
    for control in ("Edit", "Move", "Delete"):
        expect(page.get_by_role("link", name=control, exact=True)).to_have_count(0)
    page.goto("/studio/history")
    page.locator(".entry summary").first.click()
    expect(page.get_by_role("link", name="Revert…")).to_have_count(0)
    before = (studio.root / NOTE).read_text()
    forged = page.evaluate(
        """async (path) => {
            const csrf = document.querySelector('meta[name="csrf-token"]').content;
            const post = async (url, fields) => {
                const body = new URLSearchParams(fields);
                const response = await fetch(url, {method: 'POST', body});
                return response.status;
            };
            return {
                save: await post('/studio/save', {csrf, path, content: '# pwned'}),
                delete: await post('/studio/delete', {csrf, path, confirm: 'yes'}),
                nocsrf: await post('/studio/save', {path, content: '# pwned'}),
            };
        }""",
        NOTE,
    )
    assert forged == {"save": 403, "delete": 403, "nocsrf": 403}
    assert (studio.root / NOTE).read_text() == before
    page.context.close()


def test_a_hostile_note_renders_inert(admin: Page) -> None:
    admin.goto(f"/studio/browse?path={XSS_NOTE}")
    expect(admin.locator("h1#title")).to_have_text("Hostile note")
    markdown = admin.locator(".markdown")
    expect(markdown).to_contain_text("<script>")  # shown as text
    admin.wait_for_timeout(300)
    assert admin.evaluate("window.__xss") is None
    dangerous = admin.evaluate(
        """() => document.querySelectorAll(
            '.markdown script, .markdown img, .markdown [onerror], .markdown [style],'
            + ' .markdown a[href^="javascript"], .markdown iframe').length"""
    )
    assert dangerous == 0
    expect(markdown.locator("a.wikilink")).to_have_text("larkspur-architecture")
    expect(markdown.locator(".wikilink.dangling")).to_contain_text("nowhere-at-all")


@pytest.mark.skipif("review_approve" not in OPERATIONS, reason="no review queue operations")
def test_review_approve_reject_and_approve_by_verb(admin: Page, studio: Studio) -> None:
    made = studio.made
    admin.goto("/studio/review")
    approve = admin.locator(".proposal", has_text=made["proposal_approve"])
    approve.locator("summary").click()
    expect(approve.locator("pre.diff")).to_contain_text("+Restart pgbouncer first.")
    expect(
        approve.get_by_role("link", name="daily/2026-11-02/session-deploy-failure.md")
    ).to_be_visible()
    approve.get_by_role("button", name="Approve", exact=True).click()
    expect(admin.locator("[role=status]")).to_have_text("approved 1")
    assert (studio.root / PROPOSALS["approve"][1]).exists()

    reject = admin.locator(".proposal", has_text=made["proposal_reject"])
    reject.locator("summary").click()
    reject.get_by_label("Reason to reject").fill("rumours are not memory")
    reject.get_by_role("button", name="Reject", exact=True).click()
    expect(admin.locator("[role=status]")).to_have_text("rejected 1")
    assert not (studio.root / PROPOSALS["reject"][1]).exists()

    admin.get_by_label("Verb").select_option("TAG")
    admin.get_by_role("button", name="Filter", exact=True).click()
    admin.get_by_role("button", name=re.compile("Approve every pending TAG")).click()
    expect(admin.locator("[role=status]")).to_have_text("approved 2")
    for name in ("bulk_1", "bulk_2"):
        assert "Tags reviewed: ops." in (studio.root / PROPOSALS[name][1]).read_text()


def test_keyboard_only_navigation_and_labels(admin: Page) -> None:
    admin.goto("/studio/browse")
    admin.keyboard.press("Tab")
    expect(admin.locator(":focus")).to_have_text("Skip to content")
    admin.keyboard.press("Enter")
    assert admin.evaluate("document.activeElement.id") == "main"
    # Open a folder of the tree from the keyboard: focus its summary, press Enter.
    admin.locator(".sidebar summary", has_text="digest/").focus()
    admin.keyboard.press("Enter")
    expect(admin.locator(".sidebar summary", has_text="wiki/")).to_be_visible()
    for url in ("/studio/search", f"/studio/edit?path={NOTE}", "/studio/graph", "/studio/review"):
        admin.goto(url)
        unlabelled = admin.evaluate(
            """() => [...document.querySelectorAll('input, select, textarea')]
                .filter(e => e.type !== 'hidden' && !e.closest('.CodeMirror'))
                .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
                .map(e => e.name || e.id)"""
        )
        assert unlabelled == [], (url, unlabelled)


@pytest.mark.parametrize("width", [1280, 390])
def test_pages_fit_the_width(browser: Any, studio: Studio, width: int) -> None:
    page = open_page(browser, studio, "admin", width=width)
    for url in (
        f"/studio/browse?path={NOTE}",
        "/studio/search?q=deploy",
        "/studio/history",
        "/studio/status",
        f"/studio/graph?path={NOTE}",
        f"/studio/purge?path={NOTE}",  # a dry run: the confirm step changes nothing
    ):
        page.goto(url)
        overflow = page.evaluate("document.documentElement.scrollWidth")
        assert overflow <= width, (url, overflow)
    assert page.errors == []  # type: ignore[attr-defined]
    page.context.close()


def test_status_refreshes_itself(
    admin: Page, studio: Studio, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "STATUS_POLL_SECONDS", (1, 1))  # the server runs in this process
    admin.goto("/studio/status")
    files = admin.locator("#stat-files")
    before = int(files.inner_text())
    api(studio, "write", {"path": "digest/wiki/status-poll.md", "content": "# Poll\n"})
    expect(files).to_have_text(str(before + 1), timeout=10_000)  # no reload: htmx polling
    problem = admin.locator(".problems a", has_text="resource/scanned-receipt.md")
    expect(problem).to_have_attribute("href", re.compile("path=resource/scanned-receipt.md"))


def test_the_vendored_scripts_load_under_the_csp(admin: Page) -> None:
    admin.goto(f"/studio/edit?path={NOTE}")
    assert admin.evaluate("typeof window.htmx") == "object"
    assert admin.evaluate("typeof window.CodeMirror") == "function"
    admin.goto(f"/studio/graph?path={NOTE}")
    expect(admin.locator("#graph.ready")).to_be_visible()
    assert admin.evaluate("typeof window.cytoscape") == "function"
    headers = httpx.get(f"{admin.url}", cookies={}, timeout=10).headers
    assert "script-src 'self'" in headers["content-security-policy"]


def shots_dir(tmp_path: Any) -> Any:
    """Where the lifecycle screenshots go: $STUDIO_SCREENSHOTS when set, else the test's tmp."""
    import os
    from pathlib import Path

    found = Path(os.environ.get("STUDIO_SCREENSHOTS") or tmp_path)
    found.mkdir(parents=True, exist_ok=True)
    return found


def test_forget_reverts_and_purge_asks_for_the_typed_path(
    admin: Page, studio: Studio, tmp_path: Any
) -> None:
    shots = shots_dir(tmp_path)
    forget, purge = "digest/wiki/browser-forget.md", "digest/wiki/browser-purge.md"
    api(studio, "write", {"path": forget, "content": "# Offsite\n\nThe spring offsite plan.\n"})
    secret = "walrus-harbour-5521 opens the archive room"
    api(studio, "write", {"path": purge, "content": f"# Door codes\n\n{secret}\n"})
    before = (studio.root / forget).read_text()

    admin.goto(f"/studio/browse?path={forget}")
    expect(admin.get_by_role("button", name="Forget", exact=True)).to_be_visible()
    expect(admin.get_by_role("link", name="Purge…")).to_be_visible()
    admin.screenshot(path=str(shots / "studio-note-forget-purge.png"), full_page=True)
    admin.get_by_role("button", name="Forget", exact=True).click()
    expect(admin.locator("h1")).to_contain_text(f"Forgot {forget}")
    assert "status: archived" in (studio.root / forget).read_text()
    admin.screenshot(path=str(shots / "studio-forgotten.png"), full_page=True)
    revert = admin.get_by_role("link", name="Revert…").get_attribute("href")
    admin.get_by_role("link", name=forget).click()
    expect(admin.locator(".lifecycle.archived")).to_contain_text("Archived")
    expect(admin.get_by_role("button", name="Forget", exact=True)).to_have_count(0)
    admin.goto(str(revert))  # a POST's answer is not cached: back cannot return to it
    expect(admin.locator(".plan-list")).to_contain_text(f"modify {forget}")
    admin.get_by_role("button", name=re.compile("^Revert ")).click()
    expect(admin.locator("h1")).to_contain_text("Reverted")
    assert (studio.root / forget).read_text() == before

    admin.goto(f"/studio/browse?path={purge}")
    admin.get_by_role("link", name="Purge…").click()
    confirm = admin.get_by_label(re.compile("Type the note's path"))
    expect(confirm).to_be_visible()
    confirm.fill("digest/wiki/browser-purge")  # not the path: refused, nothing changed
    admin.screenshot(path=str(shots / "studio-purge-confirm.png"), full_page=True)
    admin.get_by_role("button", name="Purge permanently").click()
    expect(admin.locator(".error")).to_contain_text("Not purged")
    assert secret in (studio.root / purge).read_text()
    admin.get_by_label(re.compile("Type the note's path")).fill(purge)
    admin.get_by_role("button", name="Purge permanently").click()
    expect(admin.locator(".purge-report h1")).to_contain_text(f"Purged {purge}")
    expect(admin.locator(".proof")).to_contain_text("No trace remains")
    admin.screenshot(path=str(shots / "studio-purge-report.png"), full_page=True)
    assert not (studio.root / purge).exists()
    found = api(studio, "search", {"query": "walrus-harbour-5521"})
    assert purge not in [hit["path"] for hit in found["hits"]]


def test_purge_of_a_resource_note_can_keep_its_source_file(
    admin: Page, studio: Studio, tmp_path: Any
) -> None:
    shots = shots_dir(tmp_path)
    image, note = "resource/inbox/browser-buoy.png", "digest/resources/browser-buoy.md"
    data = b"\x89PNG\r\n\x1a\n the buoy photo's bytes"
    (studio.root / image).parent.mkdir(parents=True, exist_ok=True)
    (studio.root / image).write_bytes(data)
    text = f"---\nname: Buoy\nsource_resource: '[[{image}]]'\n---\n# Buoy\n\nA red buoy.\n"
    api(studio, "write", {"path": note, "content": text})

    admin.goto(f"/studio/purge?path={quote(note)}")
    expect(admin.locator(".purged-with-list")).to_contain_text(f"remove {image}")
    keep = admin.get_by_label(re.compile("Keep the source file"))
    expect(keep).not_to_be_checked()
    keep.check()
    admin.get_by_label(re.compile("Type the note's path")).fill(note)
    admin.screenshot(path=str(shots / "studio-purge-keep-source.png"), full_page=True)
    admin.get_by_role("button", name="Purge permanently").click()
    expect(admin.locator(".purge-report h1")).to_contain_text(f"Purged {note}")
    expect(admin.locator(".kept-sources-list")).to_contain_text(image)
    admin.screenshot(path=str(shots / "studio-purge-kept-source.png"), full_page=True)
    assert not (studio.root / note).exists()
    assert (studio.root / image).read_bytes() == data


def test_expiry_and_supersession_banners_and_the_expiring_list(
    admin: Page, studio: Studio, tmp_path: Any
) -> None:
    import datetime as dt

    shots = shots_dir(tmp_path)
    today = dt.date.today()
    past, soon = (today - dt.timedelta(days=2)).isoformat(), (today + dt.timedelta(3)).isoformat()
    notes = {
        "digest/wiki/browser-expired.md": f"---\nname: Q3 on-call rota\nexpires: {past}\n---\n"
        "# Q3 on-call rota\n\nMira covers nights.\n",
        "digest/wiki/browser-soon.md": f"---\nname: Trial licence\nexpires: {soon}\n---\n# Trial\n",
        "digest/wiki/browser-newer.md": "---\nname: Deploy plan v2\n---\n# Deploy plan v2\n",
        "digest/wiki/browser-older.md": "---\nname: Deploy plan v1\nstatus: superseded\n"
        'superseded_by: "[[digest/wiki/browser-newer]]"\nsuperseded_on: 2026-11-20\n---\n'
        "# Deploy plan v1\n\nDeploy from the laptop.\n",
    }
    for path, text in notes.items():
        api(studio, "write", {"path": path, "content": text})
    admin.goto("/studio/browse?path=digest/wiki/browser-expired.md")
    expect(admin.locator(".lifecycle.expired")).to_contain_text(f"Expired on {past}")
    admin.screenshot(path=str(shots / "studio-expired-banner.png"), full_page=True)
    admin.goto("/studio/browse?path=digest/wiki/browser-older.md")
    banner = admin.locator(".lifecycle.superseded")
    expect(banner).to_contain_text("Superseded on 2026-11-20 by [[digest/wiki/browser-newer]]")
    admin.screenshot(path=str(shots / "studio-superseded-banner.png"), full_page=True)
    banner.get_by_role("link").click()
    expect(admin.locator("h1#title")).to_have_text("Deploy plan v2")
    admin.goto("/studio/status")
    listed = admin.locator("#expiring")
    expect(listed.locator(".expired-list")).to_contain_text("digest/wiki/browser-expired.md")
    expect(listed.locator(".soon-list")).to_contain_text("digest/wiki/browser-soon.md")
    listed.scroll_into_view_if_needed()
    listed.screenshot(path=str(shots / "studio-expiring-list.png"))
    assert "status:" not in (studio.root / "digest/wiki/browser-expired.md").read_text()


def test_a_read_token_sees_no_forget_or_purge_and_the_server_refuses_them(
    browser: Any, studio: Studio
) -> None:
    page = open_page(browser, studio, "read")
    page.goto(f"/studio/browse?path={NOTE}")
    expect(page.locator(".badge.profile-read")).to_have_text("read")
    expect(page.get_by_role("button", name="Forget", exact=True)).to_have_count(0)
    expect(page.get_by_role("link", name="Purge…")).to_have_count(0)
    before = (studio.root / NOTE).read_text()
    forged = page.evaluate(
        """async (path) => {
            const csrf = document.querySelector('meta[name="csrf-token"]').content;
            const post = async (url, fields) => {
                const response = await fetch(url, {method: 'POST', body: new URLSearchParams(fields)});
                return response.status;
            };
            return {
                forget: await post('/studio/forget', {csrf, path}),
                purge: await post('/studio/purge', {csrf, path, confirm_path: path}),
                page: (await fetch('/studio/purge?path=' + path)).status,
            };
        }""",
        NOTE,
    )
    assert forged == {"forget": 403, "purge": 403, "page": 403}
    assert (studio.root / NOTE).read_text() == before
    page.context.close()


def test_forget_and_purge_by_query_list_first_and_purge_asks_for_the_typed_query(
    admin: Page, studio: Studio, tmp_path: Any
) -> None:
    shots = shots_dir(tmp_path)
    archive = ["digest/wiki/browser-heron-a.md", "digest/wiki/browser-heron-b.md"]
    for n, path in enumerate(archive):
        api(studio, "write", {"path": path, "content": f"# Heron {n}\n\nThe heron-pond survey.\n"})
    secret = "osprey-lantern-8812 is the old alarm code"
    purge = "digest/wiki/browser-osprey.md"
    api(studio, "write", {"path": purge, "content": f"# Alarm\n\n{secret}\n"})

    admin.goto("/studio/search?q=heron-pond")
    admin.get_by_role("link", name=re.compile("Forget or purge the notes")).click()
    expect(admin.locator(".match-list li")).to_have_count(2)
    expect(admin.locator(".match-list")).to_contain_text(archive[0])
    admin.screenshot(path=str(shots / "studio-forget-query-dry-run.png"), full_page=True)
    admin.get_by_role("button", name="Forget 2 note(s)").click()
    expect(admin.locator("h1")).to_contain_text("Forgot")
    for path in archive:
        assert "status: archived" in (studio.root / path).read_text()

    admin.goto("/studio/forget")
    admin.get_by_label(re.compile("^Query")).fill("osprey-lantern-8812")
    admin.get_by_role("radio", name=re.compile("^purge")).check()
    admin.get_by_role("button", name="List the notes (dry run)").click()
    expect(admin.locator(".match-list")).to_contain_text(f"remove {purge}")
    confirm = admin.get_by_label(re.compile("Type the query"))
    confirm.fill("osprey")  # not the query: refused, nothing changed
    admin.get_by_role("button", name="Purge 1 note(s) permanently").click()
    expect(admin.locator(".error")).to_contain_text("Not purged")
    assert secret in (studio.root / purge).read_text()
    admin.get_by_label(re.compile("Type the query")).fill("osprey-lantern-8812")
    admin.screenshot(path=str(shots / "studio-purge-query-confirm.png"), full_page=True)
    admin.get_by_role("button", name="Purge 1 note(s) permanently").click()
    expect(admin.locator(".purge-report h1")).to_contain_text(f"Purged {purge}")
    expect(admin.locator(".proof")).to_contain_text("No trace remains")
    admin.screenshot(path=str(shots / "studio-purge-query-report.png"), full_page=True)
    assert not (studio.root / purge).exists()
    found = api(studio, "search", {"query": "osprey-lantern-8812"})
    assert purge not in [hit["path"] for hit in found["hits"]]
