"""dream CORRECT keeps the statement it corrects: a superseded copy beside the node, left out of
search unless asked for, which then names the newer note; a run's revert takes the copy too, and
an approved CORRECT from the review queue keeps one the same way (issue 24)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.test_dream_support import (
    POSTGRES,
    POSTGRES_NODE,
    Workspace,
    decision,
    edit,
    extraction,
)
from reme_core.schema import SearchFilters
from reme_core.workspace.notes import parse_note

NODE = "digest/wiki/postgres.md"
COPY = "digest/wiki/postgres-v1.md"
NEW = (
    "- work_mem is 16MB for every connection.\n"
    "  > note: contradicted by [[daily/2026-11-04/postgres]] - raised from 4MB, sorts spilled"
)


def correct() -> list:
    return [
        extraction(POSTGRES),
        decision(
            "CORRECT",
            NODE,
            edit=edit("- work_mem is 4MB for every connection.", NEW),
            evidence="daily/2026-11-04/postgres.md",
        ),
    ]


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path)
    yield workspace
    workspace.close()


def test_correct_keeps_the_old_statement_as_a_superseded_copy(ws: Workspace):
    result = ws.run(correct())
    (outcome,) = result.outputs["decisions"]
    assert outcome["result"] == "applied", outcome["reason"]
    assert outcome["superseded"] == COPY
    # The node is corrected in place, with the inline annotation ...
    assert NEW in ws.read(NODE)
    # ... and the statement as it was is kept, byte for byte but for the status keys.
    copy = ws.read(COPY)
    note = parse_note(COPY, copy)
    assert note.status == "superseded"
    assert note.frontmatter["superseded_by"] == "[[digest/wiki/postgres]]"
    assert note.frontmatter["contradicted_by"] == "[[daily/2026-11-04/postgres]]"
    assert note.body == parse_note(NODE, POSTGRES_NODE).body
    assert "- work_mem is 4MB for every connection." in copy

    reme = ws.reme
    # Search leaves the superseded copy out by default ...
    default = reme.search("work_mem 4MB connection", limit=10)
    assert COPY not in {h.path for h in default.hits}
    assert NODE in {h.path for h in default.hits}
    assert all(h.superseded_by is None for h in default.hits)
    # ... and, asked for superseded notes, says which note replaces it.
    asked = reme.search(
        "work_mem 4MB connection",
        limit=10,
        filters=SearchFilters(statuses=["active", "superseded"]),
    )
    by_path = {h.path: h for h in asked.hits}
    assert by_path[COPY].superseded_by == "[[digest/wiki/postgres]]"
    assert by_path[NODE].superseded_by is None

    # The copy is part of the run's history entry: reverting the run removes it too.
    assert COPY in reme.history.entries(1)[0].files
    reme.revert(result.history, confirm=True)
    assert not (ws.root / COPY).exists()
    assert ws.read(NODE) == POSTGRES_NODE


def test_a_second_correct_keeps_a_second_version(ws: Workspace):
    ws.run(correct())
    again = [
        extraction(POSTGRES),
        decision(
            "CORRECT",
            NODE,
            edit=edit(
                "- max_connections stays at 100 behind pgbouncer.",
                "- max_connections is 200.\n"
                "  > note: contradicted by [[daily/2026-11-04/postgres]] - raised for the workers",
            ),
            evidence="daily/2026-11-04/postgres.md",
        ),
    ]
    reme = ws.open(again)
    # The unit was integrated already: run it again as a fresh unit by forgetting the checkpoint.
    (ws.root / ".reme/dream/checkpoint.json").unlink()
    (outcome,) = reme.run("dream", {}).outputs["decisions"]
    assert outcome["result"] == "applied", outcome["reason"]
    assert outcome["superseded"] == "digest/wiki/postgres-v2.md"
    second = ws.read("digest/wiki/postgres-v2.md")
    assert "work_mem is 16MB" in second and "max_connections stays at 100" in second
    assert ws.read(COPY) != second  # the first version is left as it was


def test_a_rejected_correct_writes_no_copy(ws: Workspace):
    before = ws.tree()
    bad = [
        extraction(POSTGRES),
        decision(
            "CORRECT",
            NODE,
            edit=edit("- work_mem is 4MB for every connection.", "- work_mem is 16MB."),
            evidence="daily/2026-11-04/postgres.md",
        ),
    ]
    (outcome,) = ws.run(bad).outputs["decisions"]
    assert outcome["result"] == "failed" and outcome["superseded"] is None
    assert ws.tree() == before and not (ws.root / COPY).exists()


def test_an_approved_correct_keeps_the_copy_too(ws: Workspace):
    result = ws.open(correct(), extra=["pipelines.dream.review=queue"]).run("dream", {})
    (proposal,) = result.outputs["proposals"]
    assert not (ws.root / COPY).exists()  # nothing written while it waits
    done = ws.reme.review.approve([proposal], by="mira")
    assert done.succeeded and done.succeeded[0].reason is None
    assert NEW in ws.read(NODE)
    assert parse_note(COPY, ws.read(COPY)).status == "superseded"
    assert COPY in ws.reme.history.entries(1)[0].files  # in the approval's own entry
