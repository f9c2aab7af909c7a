from __future__ import annotations

from reme_core.workspace import LinkResolver, parse_links, rewrite_links

TEXT = """# Title
See [[target]] and [[other#Section|shown]].
![[image.png]] and [[a/b#anchor]] and [[c|alias]]
`[[inline code]]` but [[after code]]
```python
[[fenced]]
```
~~~~
[[tilde fenced]]
```
still fenced
~~~~
| [[table\\|cell]] |
"""


def test_parse_links_forms_and_lines() -> None:
    links = parse_links(TEXT)
    got = [(lk.raw, lk.anchor, lk.alias, lk.embed, lk.line) for lk in links]
    assert got == [
        ("target", None, None, False, 2),
        ("other", "Section", "shown", False, 2),
        ("image.png", None, None, True, 3),
        ("a/b", "anchor", None, False, 3),
        ("c", None, "alias", False, 3),
        ("after code", None, None, False, 4),
        ("table", None, "cell", False, 13),
    ]
    first = links[0]
    assert TEXT[first.start : first.end] == "[[target]]"
    assert TEXT[first.raw_start : first.raw_end] == "target"


def test_line_numbers_count_only_newlines() -> None:
    assert [lk.line for lk in parse_links("a\x0cb\r\n[[x]]\u2028[[y]]")] == [2, 2]


def test_self_anchor_links_are_skipped() -> None:
    assert parse_links("[[#heading]] [[]]") == []


PATHS = [
    "daily/2024-01-01/talk.md",
    "digest/wiki/topic.md",
    "digest/wiki/Shared.md",
    "digest/personal/shared.md",
    "digest/wiki/sub/deep.md",
    "resource/image.png",
    "notes",
]


def test_resolution_order() -> None:
    r = LinkResolver(PATHS)
    assert r.resolve("digest/wiki/topic.md") == ("resolved", "digest/wiki/topic.md")
    assert r.resolve("digest/wiki/topic") == ("resolved", "digest/wiki/topic.md")
    assert r.resolve("sub/deep", "digest/wiki/topic.md") == ("resolved", "digest/wiki/sub/deep.md")
    assert r.resolve("TOPIC") == ("resolved", "digest/wiki/topic.md")
    assert r.resolve("topic.md") == ("resolved", "digest/wiki/topic.md")
    assert r.resolve("wiki/topic") == ("resolved", "digest/wiki/topic.md")
    assert r.resolve("image.png") == ("resolved", "resource/image.png")
    assert r.resolve("image") == ("missing", None)
    assert r.resolve("shared") == ("ambiguous", None)
    # Relative to the source folder wins over the ambiguous basename.
    assert r.resolve("shared", "digest/personal/x.md") == ("resolved", "digest/personal/shared.md")
    assert r.resolve("nowhere") == ("missing", None)
    assert r.resolve("../escape", "a.md") == ("missing", None)


def test_add_and_remove_update_resolution() -> None:
    r = LinkResolver(PATHS)
    r.remove("digest/personal/shared.md")
    assert r.resolve("shared") == ("resolved", "digest/wiki/Shared.md")
    r.add("x/topic.md")
    assert r.resolve("topic")[0] == "ambiguous"
    r.remove("x/topic.md")
    r.remove("x/topic.md")  # removing twice is harmless
    assert r.resolve("topic") == ("resolved", "digest/wiki/topic.md")
    assert "x/topic.md" not in r and len(r) == len(PATHS) - 1


def test_links_for_fills_link_models() -> None:
    r = LinkResolver(PATHS)
    links = r.links_for("daily/2024-01-01/talk.md", "[[topic#A|B]]\n![[shared]]\n[[gone]]")
    assert [(lk.target, lk.state, lk.line) for lk in links] == [
        ("digest/wiki/topic.md", "resolved", 1),
        (None, "ambiguous", 2),
        (None, "missing", 3),
    ]
    assert links[0].anchor == "A" and links[0].alias == "B" and links[1].embed
    assert all(lk.source == "daily/2024-01-01/talk.md" for lk in links)


def test_rewrite_links_keeps_anchor_alias_embed_and_code() -> None:
    r = LinkResolver(PATHS)
    text = (
        "[[topic]] [[topic#H|alias]] ![[digest/wiki/topic]] [[topic.md]] [[other]]\n"
        "`[[topic]]`\n```\n[[topic]]\n```\n"
    )
    out, count = rewrite_links(text, "digest/wiki/topic.md", "digest/wiki/renamed.md", r, "a.md")
    assert count == 4
    assert out == (
        "[[renamed]] [[renamed#H|alias]] ![[renamed]] [[renamed.md]] [[other]]\n"
        "`[[topic]]`\n```\n[[topic]]\n```\n"
    )


def test_rewrite_uses_full_path_when_basename_is_taken() -> None:
    r = LinkResolver(PATHS)
    out, count = rewrite_links("[[topic|t]]", "digest/wiki/topic.md", "x/talk.md", r, "a.md")
    assert (out, count) == ("[[x/talk|t]]", 1)
    r.add("x/talk.md")
    r.remove("digest/wiki/topic.md")
    assert r.resolve("x/talk") == ("resolved", "x/talk.md")


def test_rewrite_leaves_text_alone_without_matches() -> None:
    r = LinkResolver(PATHS)
    text = "[[shared]] [[nowhere]]"
    assert rewrite_links(text, "digest/wiki/Shared.md", "y.md", r, "a.md") == (text, 0)
