from __future__ import annotations

import datetime as dt

import pytest

from reme_core.errors import FrontmatterError
from reme_core.workspace import parse_note


def test_fields_and_body_start_line() -> None:
    text = "---\nname: N\ndescription: D\nstatus: archived\nunknown: 1\n---\nbody\n"
    note = parse_note("digest/wiki/n.md", text)
    assert (note.name, note.description, note.status) == ("N", "D", "archived")
    assert note.body == "body\n"
    assert note.body_start_line == 7
    assert note.frontmatter["unknown"] == 1
    summary = note.summary("h", 10)
    assert summary.status == "archived" and summary.frontmatter["unknown"] == 1


def test_defaults_without_frontmatter() -> None:
    note = parse_note("resource/Thing.md", "just text\n")
    assert note.name == "Thing"
    assert note.status == "active"
    assert note.tags == [] and note.date is None
    assert note.body_start_line == 1 and note.body == "just text\n"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("[Alpha, '#beta', alpha]", ["alpha", "beta"]),
        ('"#One, two  three,two"', ["one", "two", "three"]),
        ("[2024, null]", ["2024"]),
    ],
)
def test_tags(raw: str, expected: list[str]) -> None:
    assert parse_note("n.md", f"---\ntags: {raw}\n---\n").tags == expected


def test_bad_status_names_the_value() -> None:
    with pytest.raises(FrontmatterError, match="'draft'"):
        parse_note("n.md", "---\nstatus: draft\n---\n")


@pytest.mark.parametrize(
    ("path", "front", "expected"),
    [
        ("x.md", "date: 2024-02-03\n", dt.date(2024, 2, 3)),
        ("x.md", "date: '2024-02-03T10:00'\n", dt.date(2024, 2, 3)),
        ("daily/2024-01-05/x.md", "", dt.date(2024, 1, 5)),
        ("daily/2024-01-05.md", "", dt.date(2024, 1, 5)),
        ("daily/2024-01-05/2024-01-06-talk.md", "", dt.date(2024, 1, 6)),
        ("daily/2024-01-05/x.md", "date: 2023-12-31\n", dt.date(2023, 12, 31)),
        ("daily/2024-13-45/x.md", "", None),
        ("x.md", "date: soon\n", None),
    ],
)
def test_date(path: str, front: str, expected: dt.date | None) -> None:
    text = f"---\n{front}---\n" if front else "body"
    assert parse_note(path, text).date == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("---\nname: [unclosed\n---\n", r"n\.md: invalid YAML frontmatter at line \d"),
        ("---\nname: a\n  bad: indent\n---\n", r"line 3"),
        ("---\n- a\n- b\n---\n", "mapping"),
        ("---\njust a string\n---\n", "mapping"),
        ("---\nname: a\n", "never closed"),
        ("---\ntags: {a: 1}\n---\n", "tags"),
    ],
)
def test_malformed_frontmatter(text: str, match: str) -> None:
    with pytest.raises(FrontmatterError, match=match):
        parse_note("n.md", text)


def test_empty_block_and_crlf() -> None:
    assert parse_note("n.md", "---\n---\nbody").frontmatter == {}
    note = parse_note("n.md", "---\r\nname: x\r\n---\r\nbody\r\n")
    assert note.name == "x" and note.body == "body\r\n" and note.body_start_line == 4
