from __future__ import annotations

import pytest

from reme_core.errors import FrontmatterError
from reme_core.workspace import dump_note, parse_note, update_frontmatter

NOTE = """---
# a comment the user wrote
name: "Quoted name"   # keep me
zip: 0123
answer: yes
tags:
  - alpha
  - beta

# about the status
status: active
custom_key: {nested: [1, 2]}
---
Body line with [[link]]
  indented   text, trailing spaces\x20\x20
"""
BODY = NOTE.split("---\n", 2)[2]


def _body(text: str) -> str:
    return text.split("\n---\n", 1)[1]


def test_set_existing_key_changes_only_that_line() -> None:
    out = update_frontmatter(NOTE, {"status": "archived"})
    assert out == NOTE.replace("status: active", "status: archived")


def test_untouched_values_keep_their_spelling() -> None:
    out = update_frontmatter(NOTE, {"description": "new"})
    for kept in ['name: "Quoted name"   # keep me', "zip: 0123", "answer: yes", "  - alpha"]:
        assert kept in out
    assert "# a comment the user wrote" in out
    assert "# about the status" in out
    assert "custom_key: {nested: [1, 2]}" in out
    assert _body(out) == BODY


def test_new_keys_append_in_order_and_body_is_byte_identical() -> None:
    out = update_frontmatter(NOTE, {"zeta": 1, "alpha": "yes"})
    keys = [line.split(":")[0] for line in out.split("---\n")[1].splitlines() if ":" in line]
    assert keys[-2:] == ["zeta", "alpha"]
    assert keys[:2] == ["name", "zip"]
    # "yes" written for a string must read back as a string, not a boolean.
    assert parse_note("n.md", out).frontmatter["alpha"] == "yes"
    assert _body(out) == BODY


def test_remove_key_and_its_multiline_value() -> None:
    out = update_frontmatter(NOTE, {}, remove=["tags", "missing"])
    assert "tags" not in out and "alpha" not in out
    assert "# about the status" in out
    assert parse_note("n.md", out).frontmatter["custom_key"] == {"nested": [1, 2]}
    assert _body(out) == BODY


def test_replace_multiline_value() -> None:
    out = update_frontmatter(NOTE, {"tags": ["gamma"]})
    assert parse_note("n.md", out).tags == ["gamma"]
    assert "alpha" not in out
    assert "# about the status\nstatus: active" in out


def test_creates_block_when_missing() -> None:
    text = "# Title\n\nno frontmatter here\n"
    out = update_frontmatter(text, {"name": "x", "tags": ["a"]})
    assert out.startswith("---\nname: x\n")
    assert out.endswith("---\n" + text)
    assert parse_note("n.md", out).name == "x"


def test_flow_style_block_falls_back_to_round_trip() -> None:
    out = update_frontmatter("---\n{a: 0123, b: 2}\n---\nbody", {"b": 3, "c": "yes"})
    assert out.startswith("---\n{a: 0123, b: 3, ")
    assert parse_note("n.md", out).frontmatter == {"a": 0o123, "b": 3, "c": "yes"}
    assert out.endswith("---\nbody")


def test_crlf_note_keeps_its_line_endings() -> None:
    out = update_frontmatter("---\r\na: 1\r\nb: 2\r\n---\r\nbody\r\n", {"a": 5, "c": "x"})
    assert out == "---\r\na: 5\r\nb: 2\r\nc: x\r\n---\r\nbody\r\n"


def test_unwritable_value_is_a_frontmatter_error() -> None:
    with pytest.raises(FrontmatterError, match="values must be"):
        update_frontmatter("---\na: 1\n---\n", {"b": object()})


def test_malformed_yaml_is_refused_with_line() -> None:
    with pytest.raises(FrontmatterError, match=r"n\.md.*line \d"):
        update_frontmatter("---\na: [1\n---\nbody\n", {"x": 1}, path="n.md")


def test_unclosed_block_is_refused() -> None:
    with pytest.raises(FrontmatterError, match="never closed"):
        update_frontmatter("---\na: 1\nbody\n", {"x": 1})


def test_dump_note_keeps_key_order_and_body() -> None:
    text = dump_note({"zeta": 1, "alpha": 2}, "\nbody\n")
    assert text == "---\nzeta: 1\nalpha: 2\n---\n\nbody\n"
    assert dump_note({}, "plain") == "plain"
