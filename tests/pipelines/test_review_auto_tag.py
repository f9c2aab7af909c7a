"""auto_tag with `review: queue`: TAG proposals instead of writes, its checkpoint kept consistent
with review (approved: the tagged hash; rejected: not asked again; stale: asked again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.test_auto_tag import NOTES, POSTGRES, SESSION, fake, front, open_workspace
from reme_core.workspace import init_workspace
from reme_plugins.auto_tag import CHECKPOINT_FILE

QUEUE = "pipelines.auto_tag.review=queue"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    init_workspace(folder)
    for path, text in NOTES.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    return folder


def notes(root: Path) -> dict[str, bytes]:
    return {p: (root / p).read_bytes() for p in NOTES}


def test_queue_proposes_tags_and_writes_nothing(root: Path):
    before = notes(root)
    with open_workspace(root, QUEUE) as reme:
        fake(reme).proposals = {SESSION: ["ops", "deploy"], POSTGRES: ["postgres"]}
        result = reme.run("auto_tag", {})
        assert notes(root) == before and result.verbs == [] and result.history is None
        assert result.outputs["tagged"] == {}
        proposals = result.outputs["tag_proposals"]
        assert set(proposals) == {SESSION, POSTGRES}
        shown = reme.review.show(proposals[SESSION])
        assert (shown.verb, shown.target, shown.pipeline, shown.step) == (
            "TAG",
            SESSION,
            "auto_tag",
            "auto_tag",
        )
        assert shown.note == "add tags: ops"
        assert "-tags: [Project, deploy]\n+tags:\n+- Project\n+- deploy\n+- ops\n" in shown.diff
        assert shown.verdict == ["only the tags key changes", "every tag already there is kept"]

        # Unchanged notes are not asked about again while their proposals wait.
        asked = len(fake(reme).asked())
        again = reme.run("auto_tag", {})
        assert again.outputs["tag_proposals"] == {} and len(fake(reme).asked()) == asked

        done = reme.review.approve([proposals[SESSION]])
        assert [o.id for o in done.succeeded] == [proposals[SESSION]]
        assert (root / SESSION).read_text(encoding="utf-8") == shown.content
        assert front(root, SESSION)["tags"] == ["Project", "deploy", "ops"]
        entry = reme.history.entries(1)[0]
        assert entry.message.startswith(f"reme run auto_tag (review: approve {proposals[SESSION]})")
        # The checkpoint holds the tagged note's hash: the next run does not ask about it.
        checkpoint = json.loads((root / ".reme" / CHECKPOINT_FILE).read_text(encoding="utf-8"))
        assert checkpoint["notes"][SESSION] == done.succeeded[0].content_hash

        rejected = reme.review.reject([proposals[POSTGRES]], reason="not about postgres")
        assert rejected.succeeded[0].status == "rejected"
        asked = len(fake(reme).asked())
        third = reme.run("auto_tag", {})
        assert third.outputs["tag_proposals"] == {} and len(fake(reme).asked()) == asked
        # Asked about explicitly, the model gives the same tags: the rejected change is not
        # proposed again.
        fake(reme).proposals = {POSTGRES: ["postgres"]}
        forced = reme.run("auto_tag", {"paths": [POSTGRES]})
        assert forced.outputs["tag_proposals"] == {}
        assert [p.id for p in reme.review.list("rejected").proposals] == [proposals[POSTGRES]]


def test_a_note_edited_since_is_stale_and_proposed_again(root: Path):
    with open_workspace(root, QUEUE) as reme:
        fake(reme).proposals = {POSTGRES: ["postgres"]}
        first = reme.run("auto_tag", {"paths": [POSTGRES]}).outputs["tag_proposals"][POSTGRES]
        reme.files.edit(POSTGRES, "40 connections", "60 connections")
        (outcome,) = reme.review.approve([first]).refused
        assert outcome.status == "stale"
        assert "tags" not in front(root, POSTGRES)
        # The note changed, so a standalone run asks about it again.
        second = reme.run("auto_tag", {}).outputs["tag_proposals"]
        assert POSTGRES in second and second[POSTGRES] != first
        assert reme.review.approve([second[POSTGRES]]).succeeded
        text = (root / POSTGRES).read_text(encoding="utf-8")
        assert "60 connections" in text and front(root, POSTGRES)["tags"] == ["postgres"]
