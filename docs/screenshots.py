"""Screenshots of every reme studio page, at 1280 and 390 pixels wide, into docs/images/.

Runs a real ``reme serve`` over the demo workspace the studio tests use (the example workspace
plus a run in the history, a hostile note and a review proposal) and drives Debian's Chromium
with Playwright, launched exactly as the browser tests launch it (tests/studio/support.py):

    .venv/bin/python docs/screenshots.py [--out docs/images] [--only browse search]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from tests.studio.support import (  # noqa: E402  (needs the paths above)
    CONFLICT_NOTE,
    browser_ready,
    launch,
    studio_server,
)

WIDTHS = {1280: 860, 390: 844}
"""Viewport width -> height."""
NOTE = "daily/2026-11-02/session-deploy-failure.md"


def _browse(page: Any, url: str) -> None:
    page.goto(f"{url}/studio/browse?path={NOTE}")
    page.wait_for_selector(".history-list, .panel .empty")


def _edit(page: Any, url: str) -> None:
    page.goto(f"{url}/studio/edit?path=digest/wiki/larkspur-architecture.md")
    page.wait_for_selector(".CodeMirror")


def _conflict(root: Path) -> Callable[[Any, str], None]:
    def shoot(page: Any, url: str) -> None:
        page.goto(f"{url}/studio/edit?path={CONFLICT_NOTE}")
        page.wait_for_selector(".CodeMirror")
        page.evaluate(
            "document.querySelector('.CodeMirror').CodeMirror.replaceRange("
            "'\\nAlso: write the migration guide first.\\n', {line: 7, ch: 0})"
        )
        # Someone else changes the note meanwhile (an editor, another agent).
        target = root / CONFLICT_NOTE
        text = target.read_text("utf-8")
        old, new = "after the audit", "after the security audit"
        target.write_text(
            text.replace(old, new) if old in text else text.replace(new, old), "utf-8"
        )
        page.click("#save")
        page.wait_for_selector(".conflict")

    return shoot


def _search(page: Any, url: str) -> None:
    page.goto(f"{url}/studio/search?q=deploy+failed+migration&status=active&status=archived")
    page.wait_for_selector(".hit")


def _graph(page: Any, url: str) -> None:
    page.goto(f"{url}/studio/graph?path=digest/wiki/larkspur-architecture.md&depth=2")
    page.wait_for_selector("#graph.ready")
    page.wait_for_timeout(300)


def _history(run: str) -> Callable[[Any, str], None]:
    def shoot(page: Any, url: str) -> None:
        page.goto(f"{url}/studio/history?run={run}")
        page.wait_for_selector(".entry-body pre.diff")

    return shoot


def _revert(run: str) -> Callable[[Any, str], None]:
    def shoot(page: Any, url: str) -> None:
        page.goto(f"{url}/studio/history/revert?run={run}")
        page.wait_for_selector(".plan-list")

    return shoot


def _status(page: Any, url: str) -> None:
    page.goto(f"{url}/studio/status")
    page.wait_for_selector("#live")


def _review(page: Any, url: str) -> None:
    page.goto(f"{url}/studio/review")
    summary = page.query_selector(".proposal summary")
    if summary is not None:
        summary.click()
        page.wait_for_selector(".proposal .entry-body pre.diff")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--only", nargs="*", help="page names to shoot (default: all)")
    args = parser.parse_args()
    why = browser_ready()
    if why is not None:
        print(f"cannot take screenshots: {why}", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, studio_server(Path(tmp), scheduler=True) as studio:
        shots: dict[str, Callable[[Any, str], None]] = {
            "browse": _browse,
            "edit": _edit,
            "conflict": _conflict(studio.root),
            "search": _search,
            "graph": _graph,
            "history": _history(studio.made["run"]),
            "revert": _revert(studio.made["run"]),
            "status": _status,
            "review": _review,
        }
        with sync_playwright() as playwright:
            browser = launch(playwright)
            try:
                for width, height in WIDTHS.items():
                    context = browser.new_context(viewport={"width": width, "height": height})
                    page = context.new_page()
                    page.goto(f"{studio.url}/studio/login")
                    page.screenshot(path=args.out / f"login-{width}.png")
                    page.goto(studio.login_url("admin"))
                    for name, shoot in shots.items():
                        if args.only and name not in args.only:
                            continue
                        shoot(page, studio.url)
                        path = args.out / f"{name}-{width}.png"
                        page.screenshot(path=path)
                        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
                    context.close()
            finally:
                browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
