"""Notes as HTML, search snippets and the folder tree, without a server."""

from __future__ import annotations

from reme_core.studio import tree
from reme_core.studio.render import highlight, render_note, sanitise


def href(path: str) -> str:
    return f"/studio/browse?path={path}"


RESOLVED = {"raw": "topic", "target": "digest/wiki/topic.md", "state": "resolved"}


def test_wikilinks_follow_the_index_and_dangling_ones_are_marked() -> None:
    links = [RESOLVED, {"raw": "two", "target": None, "state": "ambiguous"}]
    html = render_note(
        "See [[topic#Steps|the topic]], ![[topic]], [[two]], [[gone]] and `[[topic]]`.\n",
        "daily/2026-11-02/a.md",
        links,
        href,
    )
    assert html.count('href="/studio/browse?path=digest/wiki/topic.md"') == 2
    assert ">the topic</a>" in html
    assert 'class="wikilink dangling" title="ambiguous: several notes are named two"' in html
    assert 'title="dangling: no note gone"' in html
    assert "<code>[[topic]]</code>" in html  # code is not parsed for links, as in the index


def test_a_wikilink_in_a_table_keeps_its_escaped_pipe() -> None:
    html = render_note(
        "| a | b |\n|---|---|\n| [[topic\\|alias]] | 2 |\n", "x.md", [RESOLVED], href
    )
    assert '<td><a class="wikilink" href="/studio/browse?path=digest/wiki/topic.md"' in html
    assert ">alias</a></td>" in html


def test_relative_markdown_links_open_in_the_studio_and_others_stay() -> None:
    html = render_note(
        "[a](other.md) [b](../wiki/x.md) [c](https://example.com) [d](#top)\n",
        "digest/personal/n.md",
        [],
        href,
    )
    assert 'href="/studio/browse?path=digest/personal/other.md"' in html
    assert 'href="/studio/browse?path=digest/wiki/x.md"' in html
    assert 'href="https://example.com"' in html and 'href="#top"' in html


def test_the_sanitiser_drops_what_could_run() -> None:
    dirty = (
        '<p onclick="x()">a</p><script>x()</script><a href="javascript:x()">b</a>'
        '<img src="x" onerror="x()"><iframe src="https://e"></iframe><p style="color:red">c</p>'
        '<a href="data:text/html,x">d</a><svg onload="x()"></svg>'
    )
    clean = sanitise(dirty)
    for gone in (
        "onclick",
        "<script",
        "javascript:",
        "onerror",
        "<iframe",
        "style=",
        "data:",
        "<svg",
    ):
        assert gone not in clean, gone


def test_snippets_escape_the_text_and_mark_the_query_terms() -> None:
    text = "Before <b>the</b> deploy & after: the Deploy failed, deploying again."
    marked = str(highlight(text, "deploy"))
    assert "&lt;b&gt;" in marked and "&amp;" in marked
    assert marked.count("<mark>") == 3 and "<mark>Deploy</mark>" in marked
    long = "filler " * 200 + "the needle here"
    assert str(highlight(long, "needle")).startswith("\u2026")


def test_daily_is_grouped_by_month_then_date_newest_first() -> None:
    entries = [
        {"path": "daily/2026-10-30", "kind": "dir"},
        {"path": "daily/2026-11-02", "kind": "dir"},
        {"path": "daily/2026-11-02.md", "kind": "file"},
        {"path": "daily/2026-11-03.md", "kind": "file"},
        {"path": "daily/notes.md", "kind": "file"},
    ]
    nodes = tree.folder("daily", entries).nodes
    assert [n.label for n in nodes] == ["2026-11", "2026-10", "notes.md"]
    november = nodes[0].children
    assert [d.label for d in november] == ["2026-11-03", "2026-11-02"]
    assert november[1].page == "daily/2026-11-02.md" and november[1].folder == "daily/2026-11-02"
    assert november[0].folder is None


def test_a_huge_folder_shows_its_first_entries_and_counts_the_rest() -> None:
    entries = [{"path": f"digest/wiki/n{i:04}.md", "kind": "file"} for i in range(620)]
    found = tree.folder("digest/wiki", entries)
    assert len(found.nodes) == tree.SHOWN_PER_FOLDER and found.hidden == 120
    root = tree.folder("", [{"path": p, "kind": "dir"} for p in ("zeta", "sessions", "daily")])
    assert [n.label for n in root.nodes] == ["daily", "sessions", "zeta"]
    assert tree.ancestors("daily/2026-11-02/a.md") == ["", "daily", "daily/2026-11-02"]
