"""Issue 20, defect 12: a JSON body sent without ``Content-Type: application/json`` is refused
with a message that names the missing header."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.api_support import Served, served

NOTE = "digest/wiki/larkspur-architecture.md"
BODY = b'{"path": "digest/wiki/larkspur-architecture.md"}'


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("content-type")) as found:
        yield found


def _post(api: Served, op: str, body: bytes, content_type: str | None):
    headers = {"Authorization": f"Bearer {api.tokens['admin']}"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    return api.client.post(f"/api/v1/{op}", content=body, headers=headers)


@pytest.mark.parametrize(
    ("content_type", "named"),
    [
        (None, "no Content-Type header"),
        ("application/x-www-form-urlencoded", "Content-Type: application/x-www-form-urlencoded"),
        ("text/plain; charset=utf-8", "Content-Type: text/plain"),
    ],
)
def test_a_json_body_without_the_header_is_told_which_header(
    api: Served, content_type: str | None, named: str
) -> None:
    for op in ("read", "status"):  # a required body, and one that is optional
        response = _post(api, op, BODY if op == "read" else b"{}", content_type)
        assert response.status_code == 415, response.text
        error = response.json()["error"]
        assert error["type"] == "UnsupportedMediaType"
        assert "Content-Type: application/json" in error["message"]
        assert named in error["message"]


def test_json_bodies_and_empty_bodies_still_work(api: Served) -> None:
    assert _post(api, "read", BODY, "application/json").status_code == 200
    assert _post(api, "read", BODY, "application/json; charset=utf-8").status_code == 200
    assert _post(api, "status", b"", None).status_code == 200


def test_a_read_token_is_still_told_about_its_profile_first(api: Served) -> None:
    headers = {"Authorization": f"Bearer {api.tokens['read']}", "Content-Type": "text/plain"}
    response = api.client.post("/api/v1/delete", content=b"{}", headers=headers)
    assert response.status_code == 403
