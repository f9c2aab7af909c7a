"""Issue 20, defect 11: a read token is refused the pages that only change notes (edit, new,
move, delete, revert) with a 403 page, and none of its pages links to them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reme_core.server.workspaces import DEFAULT
from tests.server.api_support import Served, served
from tests.studio.test_routes import NOTE, browser

FORM_PAGES = [
    f"/studio/edit?path={NOTE}",
    "/studio/new?folder=digest/wiki",
    f"/studio/move?path={NOTE}",
    f"/studio/delete?path={NOTE}",
    "/studio/history/revert?run=abcdef1",
]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("read-token-pages")) as found:
        yield found


@pytest.mark.parametrize("url", FORM_PAGES)
def test_a_read_token_gets_a_friendly_403_for_pages_that_change_notes(
    api: Served, url: str
) -> None:
    response = browser(api, "read").get(url)
    assert response.status_code == 403, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert "yours is &#39;read&#39;" in response.text
    assert 'action="/studio/' not in response.text.split("<main", 1)[1].replace(
        'action="/studio/logout"', ""
    )  # no form to submit


def test_a_write_token_may_open_edit_and_new_but_not_move_or_delete(api: Served) -> None:
    client = browser(api, "write")
    assert client.get(FORM_PAGES[0]).status_code == 200
    assert client.get(FORM_PAGES[1]).status_code == 200
    assert client.get(FORM_PAGES[2]).status_code == 403
    assert client.get(FORM_PAGES[3]).status_code == 403


def test_an_admin_opens_every_form_page(api: Served) -> None:
    client = browser(api)
    for url in FORM_PAGES[:4]:
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize(
    "url",
    ["/", "/studio/browse?path=digest/wiki", f"/studio/browse?path={NOTE}", "/studio/history"],
)
def test_no_page_links_a_read_token_to_them(api: Served, url: str) -> None:
    html = browser(api, "read").get(url).text
    for target in ("/studio/edit", "/studio/new", "/studio/move", "/studio/delete"):
        assert target not in html, (url, target)
    assert "/studio/history/revert" not in html


def test_the_status_page_shows_a_read_token_no_server_paths(api: Served) -> None:
    # Issue 20, defect 12: a failed write's message names the file by its absolute path.
    root = str(api.registry.get(DEFAULT).root)
    failed = f"[Errno 13] Permission denied: '{root}/digest/wiki/locked.md'"
    api.registry.record_error(DEFAULT, "write", PermissionError(failed))
    api.registry.record_error(DEFAULT, "vectors", "cannot open /var/lib/reme-cache/model.bin")
    for url in ("/studio/status", "/studio/status/live"):
        shown = browser(api, "read").get(url).text
        assert root not in shown and "/var/lib" not in shown
        assert "Permission denied: &#39;digest/wiki/locked.md&#39;" in shown
        assert "cannot open &lt;server path&gt;" in shown
    admin = browser(api).get("/studio/status").text
    assert f"{root}/digest/wiki/locked.md" in admin  # the owner sees where it is
