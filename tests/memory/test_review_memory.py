"""memory summarize with `memory.review: queue`: MEMORY proposals instead of records."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV

from reme_core.cli import cli
from reme_core.cli.review_cmd import _table
from reme_core.memory import MemoryApi
from reme_core.workspace.layout import init_workspace
from tests.memory.support import files_under, open_workspace, scripted, ticking

QUEUE = "memory.review=queue"
CHAT = [{"role": "user", "content": "I'm Alice. Always 4 spaces, never tabs. I review at 9."}]


def memory(content: str, **more: object) -> dict[str, object]:
    return {"content": content, "when_to_use": "", "refines": None, **more}


def test_summarize_proposes_and_approval_writes_the_record(tmp_path: Path):
    answers = [
        {"memories": [memory("Uses 4 spaces, never tabs."), memory("Reviews PRs at 9.")]},
        {"memories": [memory("Reviews PRs at 9."), memory("uses 4 SPACES, never tabs.")]},
    ]
    root = tmp_path / "ws"
    with open_workspace(root, scripted(tmp_path, answers), QUEUE) as reme:
        api = MemoryApi(reme, clock=ticking())
        done = api.summarize(CHAT, user_name="alice", sources=["sessions/s1.jsonl"])
        assert done.added == [] and done.updated == [] and done.history is None
        assert len(done.proposals) == 2 and files_under(root) == []
        spaces, reviews = (reme.review.show(p) for p in done.proposals)
        assert (spaces.verb, spaces.pipeline, spaces.step) == ("MEMORY", "memory_summarize", None)
        assert spaces.target.startswith("digest/personal/alice/") and spaces.base_hash is None
        assert spaces.sources == ["sessions/s1.jsonl"]
        assert spaces.verdict == [
            "a valid memory record",
            f"of user_name=alice, id {spaces.payload['memory_id']}",
        ]

        approved = reme.review.approve([spaces.id])
        (outcome,) = approved.succeeded
        assert (root / spaces.target).read_text(encoding="utf-8") == spaces.content
        listed = api.list(user_name="alice")
        assert [r.content for r in listed.records] == ["Uses 4 spaces, never tabs."]
        entry = reme.history.entries(1)[0]
        assert entry.kind == "memory" and entry.run == outcome.history
        assert entry.message.startswith(
            f"reme memory review: approve {spaces.id} (user_name=alice)"
        )

        rejected = reme.review.reject([reviews.id], reason="not a lasting habit")
        assert rejected.succeeded[0].status == "rejected"
        # The same conversation again: the approved memory is a repeat, the rejected one is not
        # proposed again.
        again = api.summarize(CHAT, user_name="alice")
        assert again.proposals == []
        assert again.unchanged == [spaces.payload["memory_id"]]
        assert any("rejected in review" in w for w in again.warnings)


def test_a_refinement_is_proposed_against_the_record_and_refused_once_it_changed(tmp_path: Path):
    root = tmp_path / "ws"
    refine = {"memories": [memory("Uses 2 spaces in YAML, 4 in Python.", refines="@4 spaces")]}
    with open_workspace(root, scripted(tmp_path, [refine, refine], "reads_ids"), QUEUE) as reme:
        api = MemoryApi(reme, clock=ticking())
        record = api.add("Uses 4 spaces, never tabs.", user_name="alice").record
        done = api.summarize(CHAT, user_name="alice")
        (proposal,) = (reme.review.show(p) for p in done.proposals)
        assert proposal.target == record.path and proposal.base_hash == record.content_hash
        assert "-Uses 4 spaces, never tabs." in proposal.diff
        assert "+Uses 2 spaces in YAML, 4 in Python." in proposal.diff

        api.update(record.memory_id, user_name="alice", when_to_use="formatting code")
        (outcome,) = reme.review.approve([proposal.id]).refused
        assert outcome.status == "stale"
        assert api.get(record.memory_id, user_name="alice").content == "Uses 4 spaces, never tabs."

        fresh = api.summarize(CHAT, user_name="alice")
        (second,) = fresh.proposals
        assert reme.review.approve([second]).succeeded
        updated = api.get(record.memory_id, user_name="alice")
        assert updated.content == "Uses 2 spaces in YAML, 4 in Python."
        assert updated.when_to_use == "formatting code"


def test_the_cli_says_what_it_proposed(tmp_path: Path):
    root = tmp_path / "ws"
    init_workspace(root)
    messages = tmp_path / "chat.json"
    messages.write_text(json.dumps(CHAT), encoding="utf-8")
    model = scripted(tmp_path, [{"memories": [memory("Uses 4 spaces, never tabs.")]}])
    args = ["memory", "summarize", "--user", "alice", "--messages", str(messages)]
    sets = ["--set", model, "--set", QUEUE, "-w", str(root)]
    result = CliRunner().invoke(cli, [*args, *sets], env=KEYWORD_ONLY_ENV)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("0 added, 0 updated, 0 unchanged, 0 skipped")
    (proposal,) = re.findall(r"\? proposed ([0-9a-f]{12}): reme review show \1", result.stdout)
    assert files_under(root) == []
    listed = CliRunner().invoke(cli, ["review", "list", "--json", "-w", str(root)])
    assert [p["id"] for p in json.loads(listed.stdout)["proposals"]] == [proposal]


def test_a_proposal_whose_target_was_superseded_since_names_where_its_base_is_kept(
    tmp_path: Path,
):
    root = tmp_path / "ws"
    refine = {"memories": [memory("Uses 2 spaces in YAML, 4 in Python.", refines="@4 spaces")]}
    with open_workspace(root, scripted(tmp_path, [refine], "reads_ids"), QUEUE) as reme:
        api = MemoryApi(reme, clock=ticking())
        record = api.add("Uses 4 spaces, never tabs.", user_name="alice").record
        (proposal_id,) = api.summarize(CHAT, user_name="alice").proposals
        (listed,) = reme.review.list().proposals
        assert listed.target_changed is False and listed.base_kept_as is None

        kept = api.update(record.memory_id, user_name="alice", content="Uses tabs now.").superseded
        assert kept is not None
        (listed,) = reme.review.list().proposals
        assert listed.target_changed is True and listed.base_kept_as == kept.path
        assert listed.superseded_by is None  # the target is the current record
        assert reme.review.show(proposal_id).base_kept_as == kept.path
        table = _table(reme.review.list().model_dump(mode="json"))
        assert f"pending (superseded: base kept as {kept.path})" in table
        (outcome,) = reme.review.approve([proposal_id]).refused
        assert outcome.status == "stale"
        assert f"was superseded since (the version proposed against is kept as {kept.path})" in (
            reme.review.show(proposal_id).reason or ""
        )
        # Nothing was re-pointed: the newer statement stands, the copy is as it was kept.
        assert api.get(record.memory_id, user_name="alice").content == "Uses tabs now."

        # A proposal made against the superseded copy itself names the record that replaced it.
        text = (reme.root / kept.path).read_text(encoding="utf-8")
        reme.review.propose(
            pipeline="memory", step=None, run_id="r2", verb="MEMORY", target=kept.path,
            content=text + "\nmore\n", before=text, base_hash=reme.files.stat(kept.path).content_hash,
            sources=[],
        )  # fmt: skip
        (pending,) = reme.review.list().proposals
        assert pending.superseded_by == record.path and pending.base_kept_as is None
