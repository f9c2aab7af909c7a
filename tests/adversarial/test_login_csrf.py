"""Login CSRF and session swap through ``?token=`` (issue 20, defect 2).

A URL token logs in only from a top-level navigation that is not cross-site, never from an image
or a fetch, and never replaces a live session until its owner confirms with a POST carrying the
session's CSRF token. In-process with fetch-metadata headers as Chromium sends them, then once in
the real browser (skipped where Chromium is missing).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import copy_example
from fastapi.testclient import TestClient

from reme_core.runtime import STATE_DIR
from reme_core.server.auth import TOKEN_FILE, TokenStore
from tests.server.api_support import BASE_URL, Served, running_server, served
from tests.studio.support import browser_ready, csrf_of, launch

TYPED = {  # the user opened the URL: typed, pasted, a bookmark, a terminal's link
    "Sec-Fetch-Site": "none",
    "Sec-Fetch-Mode": "navigate",
    "Sec-Fetch-Dest": "document",
    "Sec-Fetch-User": "?1",
    "Accept": "text/html,application/xhtml+xml,*/*;q=0.8",
}
SAME_ORIGIN_IMAGE = {  # <img src="/?token=..."> in a note
    "Sec-Fetch-Site": "same-origin",
    "Sec-Fetch-Mode": "no-cors",
    "Sec-Fetch-Dest": "image",
    "Accept": "image/avif,image/webp,image/apng,image/*,*/*;q=0.8",
}
CROSS_SITE_LINK = {**TYPED, "Sec-Fetch-Site": "cross-site"}
OTHER_PORT_LINK = {**TYPED, "Sec-Fetch-Site": "same-site"}  # another server on 127.0.0.1
SAME_ORIGIN_FETCH = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}
FRAME = {**TYPED, "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Dest": "iframe"}
OLD_BROWSER_IMAGE = {"Accept": "image/webp,image/png,image/*;q=0.8,*/*;q=0.5"}
COOKIE = "reme_studio_80"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("login-csrf")) as found:
        yield found


def fresh(api: Served) -> TestClient:
    return TestClient(api.client.app, base_url=BASE_URL, raise_server_exceptions=False)


def signed_in(api: Served, who: str = "admin") -> TestClient:
    client = fresh(api)
    response = client.get(f"/?token={api.tokens[who]}", headers=TYPED, follow_redirects=False)
    assert response.status_code == 303 and COOKIE in response.headers["set-cookie"]
    return client


def profile(client: TestClient) -> str | None:
    """The profile the browser's session shows, or None when it has none."""
    page = client.get("/studio/browse")
    if page.status_code == 401:
        return None
    assert page.status_code == 200, page.text
    for name in ("admin", "write", "read"):
        if f'class="badge profile-{name}"' in page.text:
            return name
    raise AssertionError("no profile badge on the page")


def test_a_fresh_browser_logs_in_from_a_top_level_navigation(api: Served) -> None:
    client = fresh(api)
    response = client.get(
        f"/studio/search?q=x&token={api.tokens['read']}", headers=TYPED, follow_redirects=False
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/studio/search?q=x"
    assert profile(client) == "read"


@pytest.mark.parametrize(
    "headers",
    [CROSS_SITE_LINK, OTHER_PORT_LINK, SAME_ORIGIN_IMAGE, SAME_ORIGIN_FETCH, FRAME],
    ids=["cross-site link", "same-site link", "image", "fetch", "frame"],
)
def test_no_login_from_another_site_or_a_subresource(api: Served, headers: dict) -> None:
    client = fresh(api)
    response = client.get(f"/?token={api.tokens['admin']}", headers=headers, follow_redirects=False)
    assert response.status_code == 403
    assert "set-cookie" not in response.headers
    assert api.tokens["admin"] not in response.text
    assert "paste the token" in response.text
    assert profile(client) is None


@pytest.mark.parametrize(
    "headers", [SAME_ORIGIN_IMAGE, OLD_BROWSER_IMAGE, CROSS_SITE_LINK, SAME_ORIGIN_FETCH]
)
def test_an_image_or_link_never_swaps_a_live_session(api: Served, headers: dict) -> None:
    client = signed_in(api, "admin")
    before = client.cookies.get(COOKIE)
    response = client.get(f"/?token={api.tokens['read']}", headers=headers, follow_redirects=False)
    assert response.status_code in (200, 403)
    assert "set-cookie" not in response.headers
    assert client.cookies.get(COOKIE) == before
    assert profile(client) == "admin"


def test_a_live_session_is_asked_and_switches_only_on_the_confirmed_post(api: Served) -> None:
    client = signed_in(api, "admin")
    old = client.cookies.get(COOKIE)
    csrf = csrf_of(client.get("/studio/browse").text)
    # A same-origin link in a note, clicked: a top-level navigation, so it is asked, not done.
    asked = client.get(
        f"/studio/browse?path=digest&token={api.tokens['read']}",
        headers={**TYPED, "Sec-Fetch-Site": "same-origin"},
        follow_redirects=False,
    )
    assert asked.status_code == 200 and "set-cookie" not in asked.headers
    assert "Switch to another token?" in asked.text
    assert "<strong>admin</strong>" in asked.text and "<strong>read</strong>" in asked.text
    assert api.tokens["read"] not in asked.text  # the token stays on the server
    assert asked.headers["content-security-policy"].startswith("default-src 'none'")
    switch = _field(asked.text, "switch")
    assert _field(asked.text, "csrf") == csrf
    assert profile(client) == "admin"

    # Without the session's CSRF token, or from another browser, nothing changes.
    forged = client.post("/studio/login", data={"switch": switch}, follow_redirects=False)
    assert forged.status_code == 403 and "set-cookie" not in forged.headers
    other = signed_in(api, "write")
    other_csrf = csrf_of(other.get("/studio/browse").text)
    stolen = other.post(
        "/studio/login", data={"switch": switch, "csrf": other_csrf}, follow_redirects=False
    )
    assert stolen.status_code == 400 and profile(other) == "write"
    assert profile(client) == "admin"

    done = client.post(
        "/studio/login", data={"switch": switch, "csrf": csrf}, follow_redirects=False
    )
    assert done.status_code == 303 and done.headers["location"] == "/studio/browse?path=digest"
    assert profile(client) == "read"
    # The old session is gone, and the question cannot be answered twice.
    stale = fresh(api)
    stale.cookies.set(COOKIE, old)
    assert profile(stale) is None
    again = client.post(
        "/studio/login",
        data={"switch": switch, "csrf": csrf_of(client.get("/studio/browse").text)},
        follow_redirects=False,
    )
    assert again.status_code == 400 and profile(client) == "read"


def test_the_session_own_token_in_a_link_just_drops_it_from_the_url(api: Served) -> None:
    client = signed_in(api, "admin")
    before = client.cookies.get(COOKIE)
    response = client.get(
        f"/studio/status?token={api.tokens['admin']}", headers=TYPED, follow_redirects=False
    )
    assert response.status_code == 303 and response.headers["location"] == "/studio/status"
    assert "set-cookie" not in response.headers and client.cookies.get(COOKIE) == before


def test_a_pasted_token_while_signed_in_is_asked_too(api: Served) -> None:
    client = signed_in(api, "admin")
    asked = client.post("/studio/login", data={"token": api.tokens["read"]})
    assert asked.status_code == 200 and "Switch to another token?" in asked.text
    assert "set-cookie" not in asked.headers and profile(client) == "admin"


def test_a_bad_token_in_a_link_leaves_the_session_alone(api: Served) -> None:
    client = signed_in(api, "admin")
    response = client.get("/?token=reme_no-such-token-0000", headers=TYPED)
    assert response.status_code == 401 and "no-such-token" not in response.text
    assert "set-cookie" not in response.headers and profile(client) == "admin"


def _field(html: str, name: str) -> str:
    marker = f'name="{name}" value="'
    start = html.index(marker) + len(marker)
    return html[start : html.index('"', start)]


# -- the real browser ----------------------------------------------------------------------------

IMAGE_NOTE = "digest/wiki/login-image.md"


@pytest.mark.skipif(browser_ready() is not None, reason=str(browser_ready()))
def test_in_chromium_a_note_image_and_a_cross_site_link_log_nobody_in(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from playwright.sync_api import sync_playwright

    workspace = copy_example(tmp_path_factory.mktemp("login-browser") / "ws")
    read = TokenStore(workspace / STATE_DIR).create("read", ["default"], "login test")[1]
    with running_server(workspace) as server:
        assert server.url is not None
        url = server.url
        admin = (workspace / STATE_DIR / TOKEN_FILE).read_text(encoding="utf-8").strip()
        text = f"# Login image\n\n![pixel](/?token={read})\n\n[switch](/?token={read})\n"
        _api(url, admin, "write", {"path": IMAGE_NOTE, "content": text})
        with sync_playwright() as playwright:
            browser = launch(playwright)
            try:
                context = browser.new_context(base_url=url)
                context.set_default_timeout(15_000)
                page = context.new_page()
                page.goto(f"{url}/?token={admin}")
                cookie = _cookie(context)
                with page.expect_response(lambda r: "token=" in r.url) as image:
                    page.goto(f"/studio/browse?path={IMAGE_NOTE}")
                assert image.value.status == 403
                page.reload()
                assert page.locator(".badge.profile-admin").count() == 1
                assert _cookie(context) == cookie
                # Clicking the link in the note asks first.
                page.click("text=switch")
                page.wait_for_selector("text=Switch to another token?")
                assert _cookie(context) == cookie
                page.click("button:has-text('Switch token')")
                page.wait_for_selector(".badge.profile-read")
                assert _cookie(context) != cookie

                # Another site's link, in a browser without a session: no login.
                other = browser.new_context()
                link = f"{url}/?token={admin}"
                lured = other.new_page()
                lured.set_content(f'<a id="go" href="{link}">prize</a>')
                lured.click("#go")
                lured.wait_for_selector("text=paste the token")
                assert _cookie(other) is None
            finally:
                browser.close()


def _api(url: str, token: str, operation: str, body: dict[str, Any]) -> None:
    response = httpx.post(
        f"{url}/api/v1/{operation}",
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text


def _cookie(context: Any) -> str | None:
    values = [c["value"] for c in context.cookies() if c["name"].startswith("reme_studio_")]
    return values[0] if values else None
