"""The studio's Purge offers to keep a resource note's source file (``keep_sources``, as
``reme forget --purge --keep-source``) only when the dry run lists one (``purged_with``): the
note page's purge and the purge by query, each without and with the box ticked, and the report
says which files went with the note or stayed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.api_support import Served, served
from tests.studio.test_lifecycle_pages import PURGE_NOTE, SECRET, note, post
from tests.studio.test_routes import browser

IMAGE = "resource/inbox/lighthouse.png"
IMAGE_BYTES = b"\x89PNG\r\n\x1a\n not really an image, but a source file all the same"
RESOURCE_NOTE = "digest/resources/lighthouse.md"
WORD = "heronsgate-lantern-4419"
"""Only the resource note holds it: the purge by query finds that note alone."""
CHECKBOX = 'name="keep_sources"'
FORGOTTEN = ".reme/auto_resource/forgotten.json"


@pytest.fixture
def api(tmp_path) -> Iterator[Served]:  # type: ignore[no-untyped-def]
    with served(tmp_path) as found:
        (found.project / IMAGE).parent.mkdir(parents=True, exist_ok=True)
        (found.project / IMAGE).write_bytes(IMAGE_BYTES)
        body = f"The lighthouse photo: {WORD} painted on the lamp room door."
        text = note("Lighthouse", body, source_resource=f"'[[{IMAGE}]]'")
        for path, content in {RESOURCE_NOTE: text, PURGE_NOTE: note("Purge me", SECRET)}.items():
            assert found.post("write", {"path": path, "content": content}).status_code == 200
        yield found


def test_the_checkbox_is_offered_only_when_a_source_file_would_go(api: Served) -> None:
    client = browser(api)
    page = client.get(f"/studio/purge?path={RESOURCE_NOTE}")
    assert page.status_code == 200, page.text
    assert CHECKBOX in page.text and f"remove <code>{IMAGE}</code>" in page.text
    assert f"(the source of <code>{RESOURCE_NOTE}</code>)" in page.text
    plain = client.get(f"/studio/purge?path={PURGE_NOTE}")
    assert plain.status_code == 200 and CHECKBOX not in plain.text
    by_query = client.get("/studio/forget", params={"query": WORD, "mode": "purge"})
    assert CHECKBOX in by_query.text and f"remove <code>{IMAGE}</code>" in by_query.text
    archive = client.get("/studio/forget", params={"query": WORD, "mode": "archive"})
    assert CHECKBOX not in archive.text  # archiving keeps every file


def test_purge_without_the_box_takes_the_source_file_too(api: Served) -> None:
    done = post(browser(api), "/studio/purge", RESOURCE_NOTE, confirm_path=RESOURCE_NOTE)
    assert done.status_code == 200, done.text
    assert "Purged with it" in done.text and f"<code>{IMAGE}</code>" in done.text
    assert "listed as forgotten" not in done.text
    assert not (api.project / RESOURCE_NOTE).exists() and not (api.project / IMAGE).exists()


def test_a_refused_confirmation_keeps_the_box_ticked_and_changes_nothing(api: Served) -> None:
    refused = post(
        browser(api), "/studio/purge", RESOURCE_NOTE, confirm_path="nope", keep_sources="1"
    )
    assert refused.status_code == 409, refused.text
    assert "Not purged" in refused.text
    assert f'{CHECKBOX} value="1" checked' in refused.text
    assert (api.project / RESOURCE_NOTE).exists() and (api.project / IMAGE).exists()
    assert not (api.project / FORGOTTEN).exists()


def test_purge_with_the_box_keeps_the_source_file_and_says_so(api: Served) -> None:
    done = post(
        browser(api), "/studio/purge", RESOURCE_NOTE, confirm_path=RESOURCE_NOTE, keep_sources="1"
    )
    assert done.status_code == 200, done.text
    assert "listed as forgotten" in done.text and "kept-sources-list" in done.text
    assert f"<code>{IMAGE}</code>" in done.text and "Purged with it" not in done.text
    assert "No trace remains" in done.text
    assert not (api.project / RESOURCE_NOTE).exists()
    assert (api.project / IMAGE).read_bytes() == IMAGE_BYTES
    assert IMAGE in (api.project / FORGOTTEN).read_text(encoding="utf-8")  # path and hash


def test_purge_by_query_with_the_box_keeps_the_source_file(api: Served) -> None:
    client = browser(api)
    listed = client.get("/studio/forget", params={"query": WORD, "mode": "purge"})
    assert "remove <a href" in listed.text and RESOURCE_NOTE in listed.text
    done = post(
        client,
        "/studio/purge",
        RESOURCE_NOTE,
        query=WORD,
        limit="10",
        expect=RESOURCE_NOTE,
        confirm_query=WORD,
        keep_sources="1",
    )
    assert done.status_code == 200, done.text
    assert "kept-sources-list" in done.text and f"<code>{IMAGE}</code>" in done.text
    assert not (api.project / RESOURCE_NOTE).exists()
    assert (api.project / IMAGE).read_bytes() == IMAGE_BYTES
