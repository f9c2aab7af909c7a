"""Issue 20, defect 11: a refused New-note path shows the form again with what was typed and
the reason; a rejection without a reason says so in words."""

from __future__ import annotations

import html
from collections.abc import Iterator

import pytest

from tests.server.api_support import Served, served
from tests.studio.test_routes import browser, page_csrf

BODY = "# Typed by hand\n\nA paragraph that must not be lost.\n"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("forms-keep-input")) as found:
        yield found


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("digest/../outside.md", "inside the workspace"),
        ("digest/wiki/program.exe", "Markdown"),
        ("digest/wiki/bad\tname.md", "control"),
    ],
)
def test_a_refused_new_note_keeps_the_typed_path_and_text(api: Served, path: str, why: str) -> None:
    client = browser(api)
    response = client.post(
        "/studio/create", data={"path": path, "content": BODY, "csrf": page_csrf(client)}
    )
    assert response.status_code in (403, 422), response.text
    page = html.unescape(response.text)
    assert 'action="/studio/create"' in response.text  # the form, not an error page
    assert f'value="{path}"' in page
    assert BODY in page.split("<textarea", 1)[1]
    assert why in page.split('class="error"', 1)[1].split("</div>", 1)[0]
    assert not (api.project / "outside.md").exists()


def test_a_read_token_posting_the_form_still_gets_the_refusal_page(api: Served) -> None:
    client = browser(api, "read")
    response = client.post(
        "/studio/create",
        data={"path": "digest/wiki/x.md", "content": BODY, "csrf": page_csrf(client)},
    )
    assert response.status_code == 403 and 'action="/studio/create"' not in response.text


def test_rejecting_without_a_reason_is_a_sentence_not_a_schema_error(api: Served) -> None:
    client = browser(api)
    response = client.post(
        "/studio/review/decide",
        data={"action": "reject", "id": "0123abcd", "reason": "  ", "csrf": page_csrf(client)},
    )
    assert response.status_code == 422
    assert "rejecting needs a reason" in response.text
    assert "String should have" not in response.text and "ValidationError" not in response.text
