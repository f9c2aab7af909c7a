"""The studio's routes without a browser: login and cookie flags, CSRF, profile enforcement,
security headers, sanitised notes, conflicts and reverts, all through the app in-process."""

from __future__ import annotations

import re
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example
from fastapi.testclient import TestClient

from reme_core.runtime import STATE_DIR
from reme_core.server.auth import TOKEN_FILE
from reme_core.server.serve import Server
from reme_core.server.workspaces import DEFAULT
from reme_core.settings import load_settings
from reme_core.studio import pages
from reme_core.studio.web import CSP
from tests.server.api_support import BASE_URL, Served, plugins, served
from tests.studio.support import XSS_NOTE, XSS_TEXT, csrf_of

ROOT = Path(__file__).resolve().parents[2]
NOTE = "digest/wiki/larkspur-architecture.md"
STUDIO = ROOT / "reme_core" / "studio"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("studio-routes")) as found:
        found.post("write", {"path": XSS_NOTE, "content": XSS_TEXT})
        yield found


def browser(api: Served, who: str | None = "admin") -> TestClient:
    """A fresh client (own cookie jar) on the same app, logged in as ``who``."""
    client = TestClient(api.client.app, base_url=BASE_URL, raise_server_exceptions=False)
    if who is not None:
        response = client.get(f"/?token={api.tokens[who]}", follow_redirects=False)
        assert response.status_code == 303, response.text
    return client


def page_csrf(client: TestClient, url: str = "/studio/browse") -> str:
    response = client.get(url)
    assert response.status_code == 200, response.text
    return csrf_of(response.text)


def disk(api: Served, path: str) -> str:
    return (api.project / path).read_text(encoding="utf-8")


def test_anonymous_visitor_gets_the_login_page(api: Served) -> None:
    client = browser(api, None)
    for url in ("/", "/studio/browse", "/studio/search?q=x", "/studio/history"):
        response = client.get(url)
        assert response.status_code == 401
        assert response.headers["content-type"].startswith("text/html")
        assert "Log in to reme studio" in response.text
        assert 'name="csrf-token"' not in response.text
    assert client.get("/studio/graph.json?path=" + NOTE).status_code == 401
    # The API keeps answering JSON 401s as before.
    assert client.post("/api/v1/status", json={}).status_code == 401


def test_login_url_sets_a_strict_httponly_cookie_and_drops_the_token(api: Served) -> None:
    client = browser(api, None)
    token = api.tokens["admin"]
    response = client.get(f"/studio/browse?path=digest&token={token}", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/studio/browse?path=digest"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("reme_studio_80=")
    flags = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= flags
    assert token not in cookie
    assert response.headers["referrer-policy"] == "same-origin"
    assert response.headers["cache-control"] == "no-store"
    page = client.get("/studio/browse?path=digest")
    assert page.status_code == 200
    assert token not in page.text


def test_a_bad_token_is_refused_and_not_echoed(api: Served) -> None:
    client = browser(api, None)
    response = client.get("/?token=reme_not-a-real-token-123", follow_redirects=False)
    assert response.status_code == 401
    assert "set-cookie" not in response.headers
    assert "not-a-real-token" not in response.text
    assert "not valid" in response.text
    pasted = client.post("/studio/login", data={"token": "reme_pasted-guess"})
    assert pasted.status_code == 401 and "pasted-guess" not in pasted.text


def test_a_pasted_token_logs_in(api: Served) -> None:
    client = browser(api, None)
    response = client.post(
        "/studio/login", data={"token": api.tokens["read"]}, follow_redirects=False
    )
    assert response.status_code == 303 and "httponly" in response.headers["set-cookie"].lower()
    assert client.get("/").status_code == 200


@pytest.mark.parametrize(
    "url",
    [
        "/",
        f"/studio/browse?path={NOTE}",
        f"/studio/edit?path={NOTE}",
        "/studio/search?q=deploy",
        f"/studio/graph?path={NOTE}",
        "/studio/history",
        "/studio/status",
        "/studio/review",
    ],
)
def test_pages_have_the_csp_no_inline_script_and_no_token(api: Served, url: str) -> None:
    client = browser(api)
    response = client.get(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-security-policy"] == CSP
    assert "'unsafe-inline'" not in CSP and "'unsafe-eval'" not in CSP
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert not re.search(r"<script(?![^>]*\bsrc=)", response.text), "inline script"
    assert not re.search(r"\sstyle=", response.text), "inline style"
    assert not re.search(r"\son[a-z]+=", response.text), "inline event handler"
    for secret in api.tokens.values():
        assert secret not in response.text


def test_a_cookie_change_needs_the_csrf_token(api: Served) -> None:
    client = browser(api)
    path = "digest/wiki/csrf-target.md"
    api.post("write", {"path": path, "content": "# CSRF target\n"})
    form = {"path": path, "content": "# Changed\n"}
    missing = client.post("/studio/save", data=form)
    assert missing.status_code == 403 and "CSRF" in missing.text
    wrong = client.post("/studio/save", data={**form, "csrf": "forged"})
    assert wrong.status_code == 403
    header = client.post("/studio/save", data=form, headers={"X-CSRF-Token": "forged"})
    assert header.status_code == 403
    assert disk(api, path) == "# CSRF target\n"
    token = page_csrf(client)
    saved = client.post("/studio/save", data={**form, "csrf": token}, follow_redirects=False)
    assert saved.status_code == 303
    assert saved.headers["location"] == f"/studio/browse?path={path}&saved=1"
    assert disk(api, path) == "# Changed\n"
    # A CSRF token is the session's: another session's token does not do.
    other = page_csrf(browser(api))
    assert client.post("/studio/save", data={**form, "csrf": other}).status_code == 403


def test_a_cross_origin_post_is_refused_before_anything_runs(api: Served) -> None:
    client = browser(api)
    token = page_csrf(client)
    response = client.post(
        "/studio/delete",
        data={"path": NOTE, "confirm": "yes", "csrf": token},
        headers={"Origin": "http://evil.example"},
    )
    assert response.status_code == 403
    assert (api.project / NOTE).is_file()


def test_a_bearer_token_needs_no_csrf(api: Served) -> None:
    client = browser(api, None)
    path = "digest/wiki/bearer-target.md"
    response = client.post(
        "/studio/create",
        data={"path": path, "content": "# Made with a bearer\n"},
        headers={"Authorization": f"Bearer {api.tokens['write']}"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert disk(api, path) == "# Made with a bearer\n"


def test_a_read_token_sees_no_write_controls_and_its_forged_posts_are_refused(
    api: Served,
) -> None:
    client = browser(api, "read")
    note = client.get(f"/studio/browse?path={NOTE}").text
    assert ">read</span>" in note
    for control in ("/studio/edit?", "/studio/move?", "/studio/delete?", "/studio/new?"):
        assert control not in note
    history = client.get("/studio/history").text
    assert "/studio/history/revert" not in history
    before = disk(api, NOTE)
    token = page_csrf(client)
    forged = [
        ("/studio/save", {"path": NOTE, "content": "# pwned\n"}),
        ("/studio/create", {"path": "digest/wiki/pwned.md", "content": "# pwned\n"}),
        ("/studio/move", {"path": NOTE, "dst": "digest/wiki/moved.md"}),
        ("/studio/delete", {"path": NOTE, "confirm": "yes"}),
        ("/studio/revert", {"run": "abcdef1", "confirm": "yes", "force": "yes"}),
    ]
    for url, form in forged:
        response = client.post(url, data={**form, "csrf": token})
        assert response.status_code == 403, (url, response.text)
        assert "profile is &#39;read&#39;" in response.text
    assert disk(api, NOTE) == before
    assert not (api.project / "digest/wiki/pwned.md").exists()
    assert client.get(f"/studio/edit?path={NOTE}").status_code == 403  # issue 20, defect 11
    assert client.get("/studio/history/revert?run=abcdef1").status_code == 403


def test_a_write_token_may_edit_but_not_move_or_delete(api: Served) -> None:
    client = browser(api, "write")
    note = client.get(f"/studio/browse?path={NOTE}").text
    assert "/studio/edit?" in note
    assert "/studio/delete?" not in note and "/studio/move?" not in note
    token = page_csrf(client)
    refused = client.post("/studio/delete", data={"path": NOTE, "confirm": "yes", "csrf": token})
    assert refused.status_code == 403
    assert (api.project / NOTE).is_file()


def test_a_token_bound_to_another_workspace_cannot_read_this_one(api: Served) -> None:
    client = browser(api, "global_read")
    home = client.get("/")
    assert home.status_code == 200  # it lands on the workspace it may use
    assert '<h1 id="title">global</h1>' in home.text
    assert client.get(f"/studio/browse?path={NOTE}&ws={DEFAULT}").status_code == 403
    assert (
        client.get("/studio/browse?path=digest/wiki/deploy-checklist.md&ws=global").status_code
        == 200
    )


def test_a_hostile_note_renders_inert(api: Served) -> None:
    client = browser(api)
    html = client.get(f"/studio/browse?path={XSS_NOTE}").text
    body = html[html.index('<div class="markdown">') :]
    body = body[: body.index("</div>")]
    assert "<script" not in body and "<img" not in body
    tags = re.findall(r"<[a-z][^>]*>", body)  # the elements, not the text shown
    assert not [t for t in tags if re.search(r"\son[a-z]+=|javascript:|\ssrc=", t)], tags
    assert "&lt;script&gt;" in body  # shown as text
    assert (
        'class="wikilink" href="/studio/browse?path=digest/wiki/larkspur-architecture.md"' in body
    )
    assert 'class="wikilink dangling"' in body and "nowhere-at-all" in body


def test_frontmatter_links_and_backlinks_are_shown(api: Served) -> None:
    client = browser(api)
    html = client.get(f"/studio/browse?path={NOTE}").text
    assert '<table class="frontmatter">' in html and "Larkspur architecture" in html
    backlinks = html[html.index('id="backlinks"') :]
    assert "digest/procedure/deploy-process.md" in backlinks
    outgoing = html[html.index('id="outgoing"') : html.index('id="backlinks"')]
    assert "digest/wiki/old-hosting-heroku.md" in outgoing


def test_the_tree_lists_one_folder_at_a_time_daily_by_date(api: Served) -> None:
    client = browser(api)
    root = client.get("/studio/tree?path=").text
    names = re.findall(r"<summary>([^<]+)</summary>", root)
    assert names[:4] == ["daily/", "digest/", "resource/", "sessions/"]
    assert "session-deploy-failure" not in root  # not loaded until opened
    daily = client.get("/studio/tree?path=daily").text
    assert re.findall(r"<summary>([^<]+)</summary>", daily)[:3] == [
        "2026-11", "2026-11-12", "2026-11-10"
    ]  # fmt: skip
    opened = client.get("/studio/browse?path=daily/2026-11-02/session-deploy-failure.md").text
    assert 'aria-current="page">session-deploy-failure.md</a>' in opened


def test_a_concurrent_change_is_shown_as_a_diff_and_never_overwritten(api: Served) -> None:
    client = browser(api)
    path = "digest/wiki/conflict-target.md"
    api.post("write", {"path": path, "content": "# Plan\nShip on Friday.\n"})
    editor = client.get(f"/studio/edit?path={path}").text
    loaded_hash = re.search(r'name="expected_hash" value="([0-9a-f]+)"', editor).group(1)
    api.post("write", {"path": path, "content": "# Plan\nShip on Thursday.\n"})  # someone else
    response = client.post(
        "/studio/save",
        data={
            "path": path,
            "content": "# Plan\nShip on Friday, after the audit.\n",
            "expected_hash": loaded_hash,
            "csrf": csrf_of(editor),
        },
    )
    assert response.status_code == 409
    assert "Not saved" in response.text
    assert '<span class="del">-Ship on Thursday.' in response.text
    assert '<span class="add">+Ship on Friday, after the audit.' in response.text
    assert "Ship on Friday, after the audit." in response.text.split("<textarea", 1)[1]
    assert disk(api, path) == "# Plan\nShip on Thursday.\n"


def test_create_never_replaces_an_existing_note(api: Served) -> None:
    client = browser(api)
    token = page_csrf(client)
    before = disk(api, NOTE)
    response = client.post("/studio/create", data={"path": NOTE, "content": "# x\n", "csrf": token})
    assert response.status_code == 409 and "already exists" in response.text
    assert disk(api, NOTE) == before


def test_move_lists_and_rewrites_links_and_delete_lists_dangling_ones(api: Served) -> None:
    client = browser(api)
    src, dst = "digest/wiki/move-me.md", "digest/wiki/moved-here.md"
    api.post("write", {"path": src, "content": "# Move me\n"})
    api.post("write", {"path": "digest/wiki/points-at-it.md", "content": "See [[move-me]].\n"})
    form = client.get(f"/studio/move?path={src}").text
    assert "digest/wiki/points-at-it.md" in form
    moved = client.post("/studio/move", data={"path": src, "dst": dst, "csrf": csrf_of(form)})
    assert moved.status_code == 200 and "digest/wiki/points-at-it.md" in moved.text
    assert disk(api, "digest/wiki/points-at-it.md") == "See [[moved-here]].\n"
    confirm = client.get(f"/studio/delete?path={dst}").text
    assert "their links will dangle" in confirm and "digest/wiki/points-at-it.md" in confirm
    assert "reverting it brings the note back" in confirm  # and history_writes tests it does
    token = csrf_of(confirm)
    unconfirmed = client.post("/studio/delete", data={"path": dst, "csrf": token})
    assert unconfirmed.status_code == 400 and (api.project / dst).exists()
    deleted = client.post("/studio/delete", data={"path": dst, "confirm": "yes", "csrf": token})
    assert deleted.status_code == 200 and not (api.project / dst).exists()
    assert "digest/wiki/points-at-it.md" in deleted.text


def test_revert_shows_the_files_first_and_needs_confirmation(api: Served) -> None:
    reme = api.registry.get(DEFAULT)
    reme.history.snapshot()
    api.post("write", {"path": "digest/wiki/from-a-run.md", "content": "# From a run\n"})
    run = reme.history.entries(1)[0].run  # each write through reme is its own entry
    client = browser(api)
    listed = client.get("/studio/history").text
    assert run in listed and "/studio/history/revert?run=" + run in listed
    shown = client.get(f"/studio/history/show?run={run}").text
    assert "+# From a run" in shown and "delete" in shown
    preview = client.get(f"/studio/history/revert?run={run}").text
    assert "delete <code>digest/wiki/from-a-run.md</code>" in preview
    token = csrf_of(preview)
    refused = client.post("/studio/revert", data={"run": run, "csrf": token})
    assert refused.status_code == 409 and "from-a-run.md" in refused.text
    assert (api.project / "digest/wiki/from-a-run.md").exists()
    done = client.post("/studio/revert", data={"run": run, "confirm": "yes", "csrf": token})
    assert done.status_code == 200 and "Reverted" in done.text
    assert not (api.project / "digest/wiki/from-a-run.md").exists()


def test_search_shows_hits_filters_and_arm_ranks(api: Served) -> None:
    client = browser(api)
    html = client.get("/studio/search?q=deploy&path=digest/**&status=active").text
    hits = re.findall(r"<code>([^<]+)</code> lines", html)
    assert hits and all(path.startswith("digest/") for path in hits)
    assert "<mark>" in html and "keyword #1" in html
    partial = client.get("/studio/search?q=deploy", headers={"HX-Request": "true"}).text
    assert "<html" not in partial and 'class="hit"' in partial
    restore = {"HX-Request": "true", "HX-History-Restore-Request": "true"}  # the Back button
    assert "<html" in client.get("/studio/search?q=deploy", headers=restore).text
    bad = client.get("/studio/search?q=deploy&since=not-a-date")
    assert bad.status_code == 422 and "since" in bad.text


def test_graph_json_is_the_traverse_neighbourhood(api: Served) -> None:
    client = browser(api)
    data = client.get(f"/studio/graph.json?path={NOTE}&depth=2").json()
    ids = {e["data"]["id"] for e in data["elements"] if "source" not in e["data"]}
    assert NOTE in ids and "digest/procedure/deploy-process.md" in ids
    assert data["start"] == NOTE
    assert client.get(f"/studio/graph.json?path={NOTE}&depth=9").status_code == 200  # clamped


def test_status_page_polls_and_links_problems(api: Served) -> None:
    client = browser(api)
    html = client.get("/studio/status").text
    # Keyword only: nothing is being embedded, so it refreshes slowly (a status call checks
    # the index for drift); while vectors are embedded, every 3 seconds.
    assert 'hx-trigger="every 15s"' in html and 'id="stat-files"' in html
    assert pages._poll({"vectors": {"state": "building"}}) == 3
    assert pages._poll({"vectors": {"state": "ready"}}) == 15
    live = client.get("/studio/status/live").text
    assert live.startswith('<div id="live"')


def test_revoking_the_token_ends_the_session(api: Served) -> None:
    secret = api.store.create("read", ["default"], "to revoke")
    token_id = secret[0]
    client = browser(api, None)
    assert client.get(f"/?token={secret[1]}", follow_redirects=False).status_code == 303
    assert client.get("/").status_code == 200
    api.store.revoke(token_id)
    assert client.get("/").status_code == 401


def test_logout_ends_the_session(api: Served) -> None:
    client = browser(api)
    token = page_csrf(client)
    response = client.post("/studio/logout", data={"csrf": token})
    assert response.status_code == 200 and "Logged out" in response.text
    assert client.get("/").status_code == 401


def test_without_auth_the_studio_opens_for_the_local_owner(tmp_path: Path) -> None:
    with served(tmp_path, auth=False) as open_api:
        client = open_api.client
        page = client.get("/studio/browse")
        assert page.status_code == 200 and ">admin</span>" in page.text
        token = csrf_of(page.text)
        assert client.post("/studio/save", data={"path": "x.md", "content": "x"}).status_code == 403
        ok = client.post(
            "/studio/create",
            data={"path": "digest/wiki/open.md", "content": "# open\n", "csrf": token},
            follow_redirects=False,
        )
        assert ok.status_code == 303


def test_static_files_are_served_with_nosniff(api: Served) -> None:
    client = browser(api, None)
    for path in ("studio.css", "studio.js", "vendor/htmx/htmx.min.js"):
        response = client.get(f"/studio/static/{path}")
        assert response.status_code == 200
        assert response.headers["x-content-type-options"] == "nosniff"


def test_vendored_libraries_ship_with_their_licences_in_the_wheel() -> None:
    vendor = STUDIO / "static" / "vendor"
    for library, files in {
        "htmx": ["htmx.min.js"],
        "cytoscape": ["cytoscape.min.js"],
        "codemirror": ["codemirror.js", "codemirror.css", "markdown.js"],
    }.items():
        assert (vendor / library / "LICENSE").is_file(), library
        for name in files:
            assert (vendor / library / name).stat().st_size > 1000, name
    assert "Pinned versions" in (vendor / "README.md").read_text(encoding="utf-8")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = config["tool"]["setuptools"]["package-data"]["reme_core.studio"]
    assert {"templates/*.html", "static/*.*", "static/vendor/*/*"} <= set(shipped)


def test_the_token_file_is_never_served(api: Served) -> None:
    client = browser(api)
    token_file = api.project / STATE_DIR / "tokens.json"
    assert token_file.exists()
    for url in (
        "/studio/browse?path=.reme/tokens.json",
        "/studio/static/../../../server/auth.py",
        "/studio/edit?path=.reme/token",
    ):
        response = client.get(url)
        assert response.status_code in (401, 403, 404), url
        assert "sha256" not in response.text


@contextmanager
def _started(settings: Any) -> Iterator[tuple[Server, list[str]]]:
    """A keyword-only server on a free port in a thread, with the lines its start printed."""
    messages: list[str] = []
    server = Server(
        settings,
        plugins=plugins(),
        echo=messages.append,
        log_level="warning",
        with_mcp=False,
        with_scheduler=False,
    )
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        assert server.ready.wait(30), messages
        yield server, messages
    finally:
        server.stop()
        thread.join(30)


def test_serve_prints_a_login_url_that_works(tmp_path: Path) -> None:
    workspace = copy_example(tmp_path / "ws")
    settings = load_settings(
        overrides=[f"workspace={workspace}", "server.port=0"], env=KEYWORD_ONLY_ENV
    )
    with _started(settings) as (server, messages):
        secret = (workspace / STATE_DIR / TOKEN_FILE).read_text(encoding="utf-8").strip()
        assert f"studio: {server.url}/?token={secret}" in messages
        with httpx.Client(base_url=str(server.url), timeout=30) as http:
            login = http.get(f"/?token={secret}", follow_redirects=False)
            assert login.status_code == 303 and login.headers["location"] == "/"
            assert http.get("/").status_code == 200  # the cookie alone


def test_a_later_start_does_not_print_the_admin_token(tmp_path: Path) -> None:
    # Issue 20, defect 7: the banner shows the token only on the start that created it.
    workspace = copy_example(tmp_path / "ws")
    settings = load_settings(
        overrides=[f"workspace={workspace}", "server.port=0"], env=KEYWORD_ONLY_ENV
    )
    for start in ("first", "second"):
        with _started(settings) as (_, messages):
            pass
        secret = (workspace / STATE_DIR / TOKEN_FILE).read_text(encoding="utf-8").strip()
        banner = "\n".join(messages)
        assert "--workspace-name NAME" in banner or start == "second"
        if start == "second":
            assert secret not in banner
            assert str(workspace / STATE_DIR / TOKEN_FILE) in banner
