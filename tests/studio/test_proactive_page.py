"""The studio's Follow-ups page: the topics to raise first, then the snoozed and resolved ones,
each linking the notes it came from; in-process for a read token, and in a real headless
Chromium (screenshot kept under the test's tmp folder, or $STUDIO_SCREENSHOTS when set)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reme_core.api import ProactiveTopic, ProactiveTopics
from tests.server.api_support import served
from tests.studio.support import browser_ready, launch, studio_server

OPEN = "Check whether the v0.9.4 deploy fixed the 502s on /healthz"
DONE = "Ask Mira for the <b>rollback</b> plan"


def topics() -> str:
    return ProactiveTopics(
        updated="2026-11-12T18:00:00+01:00",
        topics=[
            ProactiveTopic(
                id="t1a2b3c4d",
                text=OPEN,
                kind="task",
                notes=[
                    "[[daily/2026-11-02/session-deploy-failure]]",
                    "[[daily/2026-11-10/session-perf-tuning]]",
                ],
                first_seen="2026-11-02",
                last_seen="2026-11-10",
            ),
            ProactiveTopic(
                id="t5e6f7a8b",
                text=DONE,
                state="resolved",
                notes=["[[daily/2026-11-03/session-db-migration]]"],
                first_seen="2026-11-03",
                last_seen="2026-11-03",
                resolved_by="[[daily/2026-11-03/session-db-migration]]",
                resolution="the plan is in the runbook",
            ),
        ],
    ).dump()


def test_a_read_token_sees_what_to_raise_then_the_rest(tmp_path: Path):
    with served(tmp_path) as api:
        (api.project / "daily" / "_proactive.yaml").write_text(topics(), encoding="utf-8")
        client = api.client
        assert (
            client.get(f"/?token={api.tokens['read']}", follow_redirects=False).status_code == 303
        )
        page = client.get("/studio/proactive")
        assert page.status_code == 200, page.text
        html = page.text
        assert 'aria-current="page">Follow-ups</a>' in html
        raise_part, rest = html.split("Snoozed and resolved (1)")
        assert OPEN in raise_part and "To raise (1)" in raise_part
        assert "/studio/browse?path=daily/2026-11-10/session-perf-tuning.md" in raise_part
        assert "Ask Mira for the &lt;b&gt;rollback&lt;/b&gt; plan" in rest  # escaped
        assert "Resolved by" in rest and "the plan is in the runbook" in rest


WHY_NOT = browser_ready()


@pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")
def test_the_page_in_a_browser(tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    shots = Path(os.environ.get("STUDIO_SCREENSHOTS") or tmp_path)
    with studio_server(tmp_path / "srv", vectors=False) as studio:
        (studio.root / "daily" / "_proactive.yaml").write_text(topics(), encoding="utf-8")
        with sync_playwright() as playwright:
            chromium = launch(playwright)
            try:
                page = chromium.new_page(viewport={"width": 1280, "height": 800})
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                page.goto(studio.login_url("read", "/studio/proactive"))
                expect(page.get_by_role("heading", name="Follow-ups", exact=True)).to_be_visible()
                expect(page.get_by_text(OPEN)).to_be_visible()
                expect(page.get_by_role("link", name="Follow-ups")).to_have_attribute(
                    "aria-current", "page"
                )
                page.get_by_text(DONE).click()  # opens the resolved topic's details
                expect(page.get_by_text("the plan is in the runbook")).to_be_visible()
                shot = shots / "studio-proactive.png"
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 10_000 and errors == []
            finally:
                chromium.close()
