"""``/docs`` works offline (issue 20, defect 8): a server-rendered page of the OpenAPI operations,
nothing loaded from another host, under the studio's CSP."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import copy_example
from markupsafe import escape

from reme_core.server.api_docs import type_parts
from reme_core.studio.web import CSP
from tests.server.api_support import Served, running_server, served
from tests.studio.support import browser_ready, launch

LINKS = re.compile(r"""\b(?:src|href|action)\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("docs-page")) as found:
        yield found


def test_docs_is_a_page_of_every_operation_without_external_urls(api: Served) -> None:
    response = api.client.get("/docs")  # no token: the API's description is public
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["content-security-policy"] == CSP
    assert response.headers["x-content-type-options"] == "nosniff"
    html = response.text
    links = LINKS.findall(html)
    assert links, "the page links nothing: the pattern is wrong"
    for link in links:
        parts = urlsplit(link)
        assert not parts.netloc and parts.scheme in ("", "http", "https"), link
    assert '<a href="/openapi.json">' in html
    schema = api.client.get("/openapi.json").json()
    assert len(schema["paths"]) > 10
    for path, item in schema["paths"].items():
        for method, op in item.items():
            assert f"<code>{method.upper()} {path}</code>" in html, path
            assert str(escape(op.get("summary", ""))) in html, path
    # Request fields and their types, with links to nested schemas.
    assert "<code>query</code>" in html and 'id="schema-SearchRequest"' in html
    assert "<td><code>x-reme-workspace</code></td><td>header</td>" in html


def test_the_cdn_pages_are_gone(api: Served) -> None:
    for path in ("/redoc", "/docs/oauth2-redirect"):
        response = api.client.get(path)
        assert response.status_code in (401, 404)
        assert "cdn.jsdelivr" not in response.text and "swagger" not in response.text.lower()


@pytest.mark.parametrize(
    ("schema", "shown"),
    [
        ({"type": "string"}, "string"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "integer | null"),
        ({"type": "array", "items": {"$ref": "#/components/schemas/MemoryMessage"}}, None),
        ({"enum": ["a", "b"]}, '"a" | "b"'),
        ({"type": "object", "additionalProperties": {"type": "string"}}, "dict[string, string]"),
        ({}, "any"),
    ],
)
def test_types_are_shown_briefly(schema: dict, shown: str | None) -> None:
    parts = type_parts(schema)
    if shown is None:
        assert parts == [("list[", None), ("MemoryMessage", "MemoryMessage"), ("]", None)]
    else:
        assert "".join(text for text, _ in parts) == shown


@pytest.mark.skipif(browser_ready() is not None, reason=str(browser_ready()))
def test_in_chromium_docs_renders_with_no_other_host_and_no_csp_error(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with running_server(copy_example(tmp_path / "ws")) as server:
        assert server.url is not None
        host = urlsplit(server.url).netloc
        with sync_playwright() as playwright:
            browser = launch(playwright)
            try:
                page = browser.new_page()
                requested: list[str] = []
                problems: list[str] = []
                page.on("request", lambda r: requested.append(r.url))
                page.on("console", lambda m: m.type == "error" and problems.append(m.text))
                page.goto(f"{server.url}/docs")
                page.wait_for_selector("h1")
                assert "HTTP API" in page.inner_text("h1")
                assert page.locator("section.card").count() > 10
                assert problems == []
                assert requested and all(urlsplit(u).netloc == host for u in requested)
            finally:
                browser.close()
