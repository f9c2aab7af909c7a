"""Issue 20, defect 12: a text resource shows the notes that link to it as backlinks (the
studio asked the link graph only for Markdown notes)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.api_support import Served, served
from tests.studio.test_routes import browser

TEXT = "resource/meeting-transcript.txt"
LINKER = "digest/wiki/links-a-transcript.md"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("backlinks")) as found:
        (found.project / TEXT).write_text("A plain text transcript.\n", encoding="utf-8")
        found.post("reindex", {})
        found.post(
            "write", {"path": LINKER, "content": "# Links\n\nSee [[meeting-transcript.txt]].\n"}
        )
        yield found


def test_a_text_resource_lists_its_backlinks(api: Served) -> None:
    html = browser(api).get(f"/studio/browse?path={TEXT}").text
    backlinks = html[html.index('id="backlinks"') :].split("</section>", 1)[0]
    assert LINKER in backlinks and "none" not in backlinks
    assert '<pre class="plain">A plain text transcript.' in html


def test_the_markdown_note_shows_the_link_resolved(api: Served) -> None:
    html = browser(api).get(f"/studio/browse?path={LINKER}").text
    outgoing = html[html.index('id="outgoing"') : html.index('id="backlinks"')]
    assert f'href="/studio/browse?path={TEXT}"' in outgoing
