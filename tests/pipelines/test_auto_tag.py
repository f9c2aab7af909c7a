"""auto_tag: tags for changed notes, merged with what is there, never over a concurrent edit."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.components import Step
from reme_core.errors import ConfigError, NotFoundError, PathOutsideWorkspaceError, RemeError
from reme_core.pipelines.engine import PipelineError
from reme_core.runtime import Reme
from reme_core.workspace import init_workspace
from reme_core.workspace.notes import parse_note
from reme_plugins.auto_tag import CHECKPOINT_FILE, clean_tag, merge_tags
from tests.fake_llm import TEXT, RecordingLlm, plugins_with, prompt_tokens

SESSION = "daily/2026-11-02/session-deploy.md"
POSTGRES = "digest/wiki/postgres.md"
ARCHIVED = "digest/wiki/heroku.md"
RESOURCE = "resource/runbook.md"

NOTES = {
    SESSION: "---\nname: Deploy failure\n# kept comment\ntags: [Project, deploy]\nowner: mira\n---\n"
    "# Deploy failure\n\nThe blue-green deploy stalled on the health check.\n",
    POSTGRES: "---\nname: Postgres tuning\ndescription: Pool and memory settings.\n---\n"
    "# Postgres tuning\n\nshared_buffers is 8GB; the pool holds 40 connections.\n",
    ARCHIVED: "---\nname: Heroku\nstatus: archived\n---\n# Heroku\n\nWe left Heroku in 2025.\n",
    RESOURCE: "# Runbook\n\nRestart the queue worker.\n",
    "notes.txt": "plain text, not a note\n",
}


SHOWN = re.compile(r"^### (\S+)$", re.MULTILINE)
"""A note's heading in the tagging prompt."""


class FakeTagLlm(RecordingLlm):
    """Tags every note it is shown (``### path`` lines) from ``proposals``, ``auto`` for the rest:
    the answer depends on which notes a batch holds, so it is worked out, not replayed."""

    name = "fake_tag_llm"

    def __init__(self, settings: Any = None, context: Any = None):
        super().__init__(settings, context)
        self.proposals: dict[str, list[str]] = {}
        self.extra: list[dict[str, Any]] = []

    def respond(self, kind: str, messages: list[dict[str, str]]) -> Any:
        assert kind != TEXT, "auto_tag uses structured output only"
        shown = SHOWN.findall(messages[-1]["content"])
        notes = [{"path": p, "tags": self.proposals.get(p, ["auto"])} for p in shown]
        return {"notes": notes + self.extra}

    def asked(self) -> list[str]:
        return [path for prompt in self.prompts() for path in SHOWN.findall(prompt)]


class MarkChanged(Step):
    """Stands in for an earlier step (auto_resource, dream's finish) that lists notes it wrote."""

    name = "mark_changed"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        return {"changed": state["mark"]}


def open_workspace(root: Path, *overrides: str, llm: str | None = "fake_tag_llm") -> Reme:
    plugins = plugins_with(FakeTagLlm, MarkChanged)
    settings = [
        "timezone=UTC",
        "pipelines.auto_tag.steps=[{name: auto_tag}]",
        "pipelines.marked.steps=[{name: mark_changed}, {name: auto_tag}]",
        *([f"components.llm={{name: {llm}}}"] if llm else []),
        *overrides,
    ]
    reme = Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=settings)
    reme.index()
    return reme


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    init_workspace(folder)
    for path, text in NOTES.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def reme(root: Path) -> Iterator[Reme]:
    with open_workspace(root) as opened:
        yield opened


def fake(reme: Reme) -> FakeTagLlm:
    assert isinstance(reme.llm, FakeTagLlm)
    return reme.llm


def front(root: Path, path: str) -> dict[str, Any]:
    return parse_note(path, (root / path).read_text(encoding="utf-8")).frontmatter


def test_tags_merge_with_the_existing_ones_normalised_and_capped(reme: Reme, root: Path):
    llm = fake(reme)
    llm.proposals = {
        SESSION: ["deploy", "New Tag", "#Ops", "DEPLOY", "project", "!!!"],
        POSTGRES: ["Postgres", "Tuning_Guide", "deploy", "a", "b", "c", "d", "e"],
    }
    result = reme.run("auto_tag", {"paths": [SESSION, POSTGRES]})
    assert result.outputs["tagged"] == {
        SESSION: ["Project", "deploy", "new-tag", "ops"],  # the user's spelling kept, first
        POSTGRES: ["postgres", "tuning-guide", "deploy", "a", "b", "c"],  # capped at max_tags 6
    }
    assert sorted(result.verbs) == sorted([f"TAG {SESSION}", f"TAG {POSTGRES}"])
    text = (root / SESSION).read_text(encoding="utf-8")
    assert "# kept comment\n" in text and "owner: mira" in text
    assert text.endswith(NOTES[SESSION].split("---\n", 2)[2])  # body byte-identical
    assert front(root, SESSION)["tags"] == ["Project", "deploy", "new-tag", "ops"]
    # The model is offered the workspace's tags to reuse.
    assert "Tags already in use, most used first: deploy, project" in llm.prompts()[0]
    assert set(llm.asked()) == {SESSION, POSTGRES}


def test_a_note_at_the_cap_keeps_every_tag_and_is_not_written(root: Path):
    with open_workspace(
        root, "pipelines.auto_tag.steps=[{name: auto_tag, settings: {max_tags: 2}}]"
    ) as reme:
        before = (root / SESSION).read_bytes()
        fake(reme).proposals = {SESSION: ["brand-new"]}
        result = reme.run("auto_tag", {"paths": SESSION})
    assert result.outputs["tagged"] == {}
    assert (root / SESSION).read_bytes() == before


def test_paths_the_model_was_not_asked_about_are_ignored(reme: Reme, root: Path):
    llm = fake(reme)
    llm.extra = [
        {"path": ARCHIVED, "tags": ["sneaky"]},
        {"path": "../outside.md", "tags": ["x"]},
        {"path": "digest/wiki/new.md", "tags": ["x"]},
    ]
    before = (root / ARCHIVED).read_bytes()
    result = reme.run("auto_tag", {"paths": [POSTGRES]})
    assert list(result.outputs["tagged"]) == [POSTGRES]
    assert result.outputs["tag_ignored"] == [ARCHIVED, "../outside.md", "digest/wiki/new.md"]
    assert (root / ARCHIVED).read_bytes() == before
    assert not (root / "digest/wiki/new.md").exists()


def test_a_hand_edit_while_the_model_answers_is_a_conflict(reme: Reme, root: Path):
    llm = fake(reme)
    edited = NOTES[POSTGRES].replace("40 connections", "60 connections")
    llm.on_call = lambda _kind: (root / POSTGRES).write_text(edited, encoding="utf-8")
    result = reme.run("auto_tag", {"paths": [SESSION, POSTGRES]})
    [conflict] = result.outputs["tag_conflicts"]
    assert conflict["path"] == POSTGRES and "changed since it was read" in conflict["reason"]
    assert (root / POSTGRES).read_text(encoding="utf-8") == edited  # the hand edit wins
    assert list(result.outputs["tagged"]) == [SESSION]


def test_changed_from_an_earlier_step_decides_which_notes(reme: Reme):
    mark = [POSTGRES, ARCHIVED, "notes.txt", RESOURCE, "daily/gone.md", POSTGRES]
    result = reme.run("marked", {"mark": mark})
    assert fake(reme).asked() == [POSTGRES]  # not SESSION, though it was never tagged
    assert list(result.outputs["tagged"]) == [POSTGRES]
    reasons = {s["path"]: s["reason"] for s in result.outputs["tag_skipped"]}
    assert "status archived" in reasons[ARCHIVED]
    assert "not a Markdown note" in reasons["notes.txt"]
    assert "a resource file" in reasons[RESOURCE]
    assert "does not exist" in reasons["daily/gone.md"]


def test_standalone_runs_tag_only_notes_changed_since_last_time(reme: Reme, root: Path):
    llm = fake(reme)
    first = reme.run("auto_tag")
    assert sorted(llm.asked()) == [SESSION, POSTGRES]  # active notes only, no resource file
    assert set(first.outputs["tagged"]) == {SESSION, POSTGRES}
    assert (reme.state_dir / CHECKPOINT_FILE).is_file()

    llm.calls.clear()
    second = reme.run("auto_tag")
    assert llm.usage.calls == 1 and second.outputs["tagged"] == {}  # nothing changed: no call

    text = (root / POSTGRES).read_text(encoding="utf-8")
    (root / POSTGRES).write_text(text + "\nThe pool moved to pgbouncer.\n", encoding="utf-8")
    reme.index()
    llm.proposals = {POSTGRES: ["pgbouncer"]}
    third = reme.run("auto_tag")
    assert llm.asked() == [POSTGRES]
    assert third.outputs["tagged"] == {POSTGRES: ["auto", "pgbouncer"]}


def test_standalone_runs_leave_the_rest_for_later_past_max_notes(root: Path):
    overrides = "pipelines.auto_tag.steps=[{name: auto_tag, settings: {max_notes: 1}}]"
    with open_workspace(root, overrides) as reme:
        first = reme.run("auto_tag")
        second = reme.run("auto_tag")
        assert len(fake(reme).asked()) == 2
    assert first.outputs["tag_remaining"] == 1 and second.outputs["tag_remaining"] == 0
    assert set(first.outputs["tagged"]) | set(second.outputs["tagged"]) == {SESSION, POSTGRES}


def test_notes_are_batched_under_the_prompt_budget(root: Path):
    for i in range(12):
        (root / f"digest/wiki/topic-{i}.md").write_text(
            f"# Topic {i}\n\n" + "detail " * 300, encoding="utf-8"
        )
    settings = "{max_prompt_tokens: 900, note_tokens: 200, batch_size: 5}"
    with open_workspace(
        root, f"pipelines.auto_tag.steps=[{{name: auto_tag, settings: {settings}}}]"
    ) as reme:
        result = reme.run("auto_tag")
        llm = fake(reme)
    assert len(llm.asked()) == 14 and len(result.outputs["tagged"]) == 14
    assert len(llm.calls) >= 4  # at most five notes of 200 tokens fit each prompt
    assert all(len(re.findall(r"^### ", p, re.M)) <= 5 for p in llm.prompts())
    assert max(prompt_tokens(messages) for messages in llm.messages) <= 900


def test_garbage_from_the_model_fails_cleanly_with_nothing_written(root: Path):
    (root / "script.json").write_text(
        json.dumps(["not json at all", {"notes": "nope"}, {"tags": ["x"]}]), encoding="utf-8"
    )
    before = {p: (root / p).read_bytes() for p in NOTES}
    llm = "components.llm={name: scripted, settings: {path: script.json}}"
    with open_workspace(root, llm, llm=None) as reme, pytest.raises(PipelineError) as caught:
        reme.run("auto_tag", {"paths": [SESSION, POSTGRES]})
    assert "no tags were written" in str(caught.value)
    assert {p: (root / p).read_bytes() for p in NOTES} == before
    assert not (root / ".reme" / CHECKPOINT_FILE).exists()


def test_without_a_model_the_step_says_so(root: Path):
    with open_workspace(root, llm=None) as reme, pytest.raises(RemeError) as caught:
        reme.run("auto_tag")
    error = caught.value
    assert isinstance(error if isinstance(error, ConfigError) else error.__cause__, ConfigError)
    assert "auto_tag needs a model" in str(error)


def test_after_a_step_that_needs_no_model_it_waits_for_one_instead_of_failing(root: Path):
    before = {p: (root / p).read_bytes() for p in NOTES}
    with open_workspace(root, llm=None) as reme:
        result = reme.run("marked", {"mark": [SESSION]})
    assert result.outputs["tagged"] == {}
    assert "no model" in result.outputs["tag_skipped_reason"]
    assert {p: (root / p).read_bytes() for p in NOTES} == before


def test_bad_paths_are_refused_before_the_model_is_asked(reme: Reme):
    for bad, error in [("../x.md", PathOutsideWorkspaceError), ("digest/none.md", NotFoundError)]:
        with pytest.raises(PipelineError) as caught:
            reme.run("auto_tag", {"paths": [POSTGRES, bad]})
        assert isinstance(caught.value.__cause__, error), bad
    with pytest.raises(PipelineError, match="must be a note path or a list"):
        reme.run("auto_tag", {"paths": {"a": 1}})
    assert fake(reme).usage.calls == 0


def test_auto_resource_then_auto_tag_tags_the_new_resource_note(root: Path):
    note = f"daily/{dt.datetime.now(dt.UTC).date().isoformat()}/resource-oncall.md"
    script = [
        {"name": "On-call rota", "description": "Who is on call.", "summary": "Two people."},
        {"notes": [{"path": note, "tags": ["On Call", "rota"]}]},
    ]
    (root / "script.json").write_text(json.dumps(script), encoding="utf-8")
    (root / "resource/oncall.csv").write_text("name,week\nMira,48\n", encoding="utf-8")
    overrides = [
        "components.llm={name: scripted, settings: {path: script.json}}",
        "pipelines.ingest.steps=[{name: auto_resource}, {name: auto_tag}]",
    ]
    with open_workspace(root, *overrides, llm=None) as reme:
        result = reme.run("ingest", {"path": "resource/oncall.csv"})
    assert result.outputs["changed"] == [note]
    assert result.outputs["tagged"] == {note: ["on-call", "rota"]}
    assert front(root, note)["tags"] == ["on-call", "rota"]
    assert result.verbs == [f"CREATE {note}", f"TAG {note}"]


def test_clean_tag_and_merge_tags():
    assert clean_tag("  #Release Process ") == "release-process"
    assert clean_tag("Project//ReMe/") == "project/reme"
    assert clean_tag("数据库 调优") == "数据库-调优"
    assert clean_tag("--!!--") == ""
    assert merge_tags(["A", "b"], ["a", "B", "c", "d"], 3) == ["A", "b", "c"]
    assert merge_tags(["a", "b", "c", "d"], ["e"], 2) == ["a", "b", "c", "d"]
