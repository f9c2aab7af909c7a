"""``FileTools.append_lines``: JSON Lines appended atomically, journalled, reported, confined."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from reme_core.errors import (
    ConflictError,
    PathOutsideWorkspaceError,
    UnsupportedFileError,
    WorkspaceError,
)
from reme_core.workspace import FileTools, Journal, find_state_dir

from .conftest import Refusal

LOG = "sessions/s1.jsonl"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def line(n: int) -> str:
    return json.dumps({"id": f"m{n}", "text": f"turn {n}"})


def test_creates_then_appends_keeping_the_bytes_before(
    tools: FileTools, workspace: Path, changes: list
) -> None:
    first = tools.append_lines(LOG, [line(1), line(2)])
    data = (workspace / LOG).read_bytes()
    assert data == f"{line(1)}\n{line(2)}\n".encode()
    assert first.created and first.changed and first.before_hash is None
    assert first.content_hash == sha(data) and first.size == len(data)

    second = tools.append_lines(LOG, [line(3)], expected_hash=first.content_hash)
    after = (workspace / LOG).read_bytes()
    assert after == data + f"{line(3)}\n".encode()
    assert not second.created and second.before_hash == first.content_hash
    assert second.content_hash == sha(after)

    # Journalled as writes and reported to the indexer, like every other write.
    ops = [(e.op, e.path, e.before_hash, e.after_hash) for e in tools.journal.entries()]
    assert ops == [
        ("write", LOG, None, first.content_hash),
        ("write", LOG, first.content_hash, second.content_hash),
    ]
    assert changes == [([LOG], []), ([LOG], [])]
    assert not list((workspace / "sessions").glob(".*.tmp"))  # atomic: no temp file left


def test_a_torn_last_line_is_ended_and_other_bytes_are_kept(
    tools: FileTools, workspace: Path
) -> None:
    (workspace / LOG).write_bytes(b'{"a": 1}\r\n{"torn": tr')
    tools.append_lines(LOG, [line(1)])
    assert (workspace / LOG).read_bytes() == f'{{"a": 1}}\r\n{{"torn": tr\n{line(1)}\n'.encode()


def test_no_lines_changes_nothing(tools: FileTools, workspace: Path, changes: list) -> None:
    created = tools.append_lines(LOG, [line(1)])
    same = tools.append_lines(LOG, [])
    assert not same.changed and same.content_hash == created.content_hash
    assert len(tools.journal.entries()) == 1 and len(changes) == 1
    absent = tools.append_lines("sessions/none.jsonl", [])
    assert not absent.changed and not (workspace / "sessions/none.jsonl").exists()


def test_expected_hash_guards_against_a_change_since_reading(
    tools: FileTools, workspace: Path, assert_refused: Refusal
) -> None:
    first = tools.append_lines(LOG, [line(1)])
    with (workspace / LOG).open("a", encoding="utf-8") as fh:
        fh.write(line(9) + "\n")  # a hand edit after the caller read the file
    assert_refused(
        workspace,
        lambda: tools.append_lines(LOG, [line(2)], expected_hash=first.content_hash),
        ConflictError,
        "changed since it was read",
    )
    assert_refused(
        workspace,
        lambda: tools.append_lines("sessions/new.jsonl", [line(1)], expected_hash="0" * 64),
        ConflictError,
        "does not exist",
    )


@pytest.mark.parametrize(
    ("path", "lines", "error", "match"),
    [
        ("notes/a.md", ['{"a": 1}'], UnsupportedFileError, r"only appends to JSON Lines.*\.jsonl"),
        ("notes/a.txt", ['{"a": 1}'], UnsupportedFileError, r"notes/a\.txt is not one"),
        (LOG, ['{"a": 1}\n{"b": 2}'], UnsupportedFileError, "line 1 .* contains a line break"),
        (LOG, ['{"a": 1}', "not json"], UnsupportedFileError, "line 2 .* not one JSON value"),
        ("../outside.jsonl", ['{"a": 1}'], PathOutsideWorkspaceError, None),
        (".reme/state.jsonl", ['{"a": 1}'], PathOutsideWorkspaceError, "inside .reme/"),
    ],
)
def test_refusals_touch_nothing(
    tools: FileTools,
    workspace: Path,
    assert_refused: Refusal,
    path: str,
    lines: list[str],
    error: type[Exception],
    match: str | None,
) -> None:
    assert_refused(workspace, lambda: tools.append_lines(path, lines), error, match)
    assert tools.journal.entries() == []


def test_confinement_is_honoured(tools: FileTools, workspace: Path, assert_refused: Refusal):
    inner = tools.confined(["daily/**"])
    assert_refused(workspace, lambda: inner.append_lines(LOG, [line(1)]), PathOutsideWorkspaceError)
    assert tools.confined(["sessions/**"]).append_lines(LOG, [line(1)]).created


def test_size_limit_and_folders_are_refused(workspace: Path, assert_refused: Refusal) -> None:
    small = FileTools(workspace, journal=Journal(find_state_dir(workspace)), max_file_bytes=40)
    small.append_lines(LOG, [line(1)])
    assert_refused(
        workspace,
        lambda: small.append_lines(LOG, [line(2), line(3)]),
        UnsupportedFileError,
        "over the 40-byte limit",
    )
    os.makedirs(workspace / "sessions/dir.jsonl")
    assert_refused(
        workspace, lambda: small.append_lines("sessions/dir.jsonl", [line(1)]), WorkspaceError
    )
