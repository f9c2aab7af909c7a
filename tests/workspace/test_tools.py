from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reme_core.errors import NotFoundError, PathOutsideWorkspaceError, UnsupportedFileError
from reme_core.workspace import FileTools, Journal, find_state_dir


def sha(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()


def test_write_read_round_trip(tools: FileTools, workspace: Path, changes: list) -> None:
    text = "---\nname: A\n---\nline one\nline two\n"
    result = tools.write("digest/wiki/new/a.md", text)
    assert result.created and result.content_hash == sha(text) and result.before_hash is None
    assert (workspace / "digest/wiki/new/a.md").read_text() == text
    assert changes == [(["digest/wiki/new/a.md"], [])]
    read = tools.read("digest/wiki/new/a.md")
    assert read.content == text and read.total_lines == 5 and not read.truncated
    assert read.content_hash == result.content_hash
    part = tools.read("digest/wiki/new/a.md", start_line=4, end_line=4)
    assert part.content == "line one\n" and part.end_line == 4
    entry = tools.journal.entries()[-1]
    assert (entry.op, entry.path, entry.before_hash, entry.after_hash) == (
        "write",
        "digest/wiki/new/a.md",
        None,
        result.content_hash,
    )
    assert not list((workspace / "digest/wiki/new").glob(".*.tmp"))


def test_overwrite_with_expected_hash(tools: FileTools) -> None:
    first = tools.write("a.md", "one\n")
    second = tools.write("a.md", "two\n", expected_hash=first.content_hash)
    assert not second.created and second.before_hash == first.content_hash
    same = tools.write("a.md", "two\n")
    assert not same.changed and len(tools.journal.entries()) == 2


def test_read_truncates_at_line_boundary(workspace: Path) -> None:
    tools = FileTools(workspace, journal=Journal(find_state_dir(workspace)), max_read_bytes=25)
    (workspace / "log.txt").write_text("".join(f"line {i:03d}\n" for i in range(1, 11)))
    first = tools.read("log.txt")
    assert first.content == "line 001\nline 002\n"
    assert first.truncated and first.next_start_line == 3
    assert first.hint == "... read the rest with start_line=3"
    rest = tools.read("log.txt", start_line=9)
    assert rest.content == "line 009\nline 010\n" and not rest.truncated
    (workspace / "long.txt").write_text("x" * 60 + "\nshort\n")
    cut = tools.read("long.txt")
    assert cut.content == "x" * 25 and cut.truncated and cut.next_start_line == 2


def test_read_rejects_bad_ranges_and_types(tools: FileTools, workspace: Path) -> None:
    (workspace / "a.md").write_text("one\n")
    (workspace / "data.csv").write_text("a,b\n")
    with pytest.raises(Exception, match="past the end"):
        tools.read("a.md", start_line=5)
    with pytest.raises(UnsupportedFileError, match=r"data\.csv"):
        tools.read("data.csv")
    with pytest.raises(NotFoundError):
        tools.read("missing.md")


def test_edit(tools: FileTools, workspace: Path, changes: list) -> None:
    tools.write("a.md", "---\nname: A\n---\nhello world\n")
    result = tools.edit("a.md", "hello", "goodbye")
    assert result.replacements == 1
    assert (workspace / "a.md").read_text() == "---\nname: A\n---\ngoodbye world\n"
    tools.edit("a.md", "o", "0", expected_count=3)
    assert (workspace / "a.md").read_text().endswith("g00dbye w0rld\n")
    assert tools.journal.entries()[-1].op == "edit" and changes[-1] == (["a.md"], [])


def test_update_frontmatter_tool(tools: FileTools, workspace: Path) -> None:
    tools.write("a.md", "---\n# keep\nname: A\nzip: 0123\n---\nbody\n")
    result = tools.update_frontmatter("a.md", {"status": "archived"}, remove=["name"])
    assert result.changed and result.frontmatter["status"] == "archived"
    assert (
        workspace / "a.md"
    ).read_text() == "---\n# keep\nzip: 0123\nstatus: archived\n---\nbody\n"
    again = tools.update_frontmatter("a.md", {"status": "archived"})
    assert not again.changed and tools.journal.entries()[-1].op == "frontmatter"


def test_move_rewrites_inbound_links(tools: FileTools, workspace: Path, changes: list) -> None:
    tools.write("digest/wiki/topic.md", "---\nname: T\n---\nself [[topic#top]]\n")
    tools.write("daily/2024-01-01/a.md", "see [[topic|the topic]] and ![[digest/wiki/topic]]\n")
    tools.write("daily/2024-01-01/b.md", "unrelated [[other]]\n")
    changes.clear()
    result = tools.move("digest/wiki/topic.md", "digest/procedure/renamed.md")
    assert result.rewritten == ["daily/2024-01-01/a.md"]
    assert not (workspace / "digest/wiki/topic.md").exists()
    assert (
        (workspace / "digest/procedure/renamed.md").read_text().endswith("self [[renamed#top]]\n")
    )
    assert (workspace / "daily/2024-01-01/a.md").read_text() == (
        "see [[renamed|the topic]] and ![[renamed]]\n"
    )
    assert (workspace / "daily/2024-01-01/b.md").read_text() == "unrelated [[other]]\n"
    assert changes == [
        (["digest/procedure/renamed.md", "daily/2024-01-01/a.md"], ["digest/wiki/topic.md"])
    ]
    ops = [(e.op, e.path, e.to) for e in tools.journal.entries()[-2:]]
    assert ops == [
        ("move", "digest/wiki/topic.md", "digest/procedure/renamed.md"),
        ("edit", "daily/2024-01-01/a.md", None),
    ]


def test_move_uses_inbound_lookup(workspace: Path) -> None:
    asked: list[str] = []

    def lookup(path: str) -> list[str]:
        asked.append(path)
        return ["b.md", "gone.md"]

    tools = FileTools(workspace, journal=Journal(find_state_dir(workspace)), inbound_lookup=lookup)
    tools.write("a.md", "A\n")
    tools.write("b.md", "[[a]]\n")
    tools.write("c.md", "[[a]]\n")  # not reported by the lookup, so left alone
    assert tools.move("a.md", "z.md").rewritten == ["b.md"]
    assert asked == ["a.md"]
    assert (workspace / "b.md").read_text() == "[[z]]\n"
    assert (workspace / "c.md").read_text() == "[[a]]\n"


def test_delete_reports_dangling_inbound(tools: FileTools, workspace: Path, changes: list) -> None:
    tools.write("a.md", "A\n")
    tools.write("b.md", "[[a]]\n")
    tools.write("c.md", "[[x]]\n")
    changes.clear()
    result = tools.delete("a.md")
    assert result.inbound == ["b.md"] and result.content_hash == sha("A\n")
    assert not (workspace / "a.md").exists()
    assert changes == [([], ["a.md"])]
    entry = tools.journal.entries()[-1]
    assert (entry.op, entry.before_hash) == ("delete", sha("A\n"))


def test_ls_and_stat(tools: FileTools, workspace: Path) -> None:
    tools.write("daily/2024-01-01/a.md", "---\nname: A\ntags: [x]\n---\nbody\n")
    (workspace / ".hidden").mkdir()
    root = tools.ls()
    names = [(e.path, e.kind) for e in root.entries]
    assert ("daily", "dir") in names and ("digest", "dir") in names
    assert not any(p.startswith(".") for p, _ in names)
    deep = tools.ls("daily", recursive=True)
    assert [(e.path, e.kind) for e in deep.entries] == [
        ("daily/2024-01-01", "dir"),
        ("daily/2024-01-01/a.md", "file"),
    ]
    assert deep.entries[1].size == len("---\nname: A\ntags: [x]\n---\nbody\n")
    stat = tools.stat("daily/2024-01-01/a.md")
    assert (
        stat.is_note and stat.line_count == 5 and stat.frontmatter == {"name": "A", "tags": ["x"]}
    )
    (workspace / "bad.md").write_text("---\nstatus: draft\n---\n")
    assert "draft" in (tools.stat("bad.md").frontmatter_error or "")


def test_internal_folders_hidden_from_tools(tools: FileTools, workspace: Path) -> None:
    (workspace / ".reme" / "token").write_text("secret")
    with pytest.raises(PathOutsideWorkspaceError):
        tools.read(".reme/token")
    with pytest.raises(PathOutsideWorkspaceError):
        tools.ls(".reme")


def test_confined_tools_only_narrow(tools: FileTools, workspace: Path) -> None:
    tools.write("daily/a.md", "A\n")
    tools.write("digest/wiki/b.md", "B\n")
    inner = tools.confined(["daily/**"])
    assert inner.read("daily/a.md").content == "A\n"
    assert [e.path for e in inner.ls(recursive=True).entries] == ["daily", "daily/a.md"]
    with pytest.raises(PathOutsideWorkspaceError):
        inner.read("digest/wiki/b.md")
    # A second confinement cannot widen the first.
    wider = inner.confined(["digest/**", "daily/**"])
    with pytest.raises(PathOutsideWorkspaceError):
        wider.read("digest/wiki/b.md")
    assert inner.confined(None).confinement == inner.confinement
    assert tools.confinement == ()
