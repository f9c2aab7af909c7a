"""dream, end to end with a recording model: each verb applied when it honours its contract, and
rejected with nothing changed on disk when it does not."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.test_dream_support import (
    DEPLOY,
    DEPLOY_NODE,
    POSTGRES,
    POSTGRES_NODE,
    PREFS,
    Workspace,
    decision,
    edit,
    extraction,
)
from reme_core.components import estimate_tokens


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path)
    yield workspace
    workspace.close()


def only(result: Any) -> dict[str, Any]:
    (outcome,) = result.outputs["decisions"]
    return outcome


# -- each verb, applied -------------------------------------------------------------------------


def test_create_writes_a_new_node_with_sources(ws: Workspace):
    before = ws.tree()
    result = ws.run(
        [
            extraction(PREFS),
            decision(
                "CREATE",
                "digest/personal/mira-preferences.md",
                content="# Mira's preferences\n\n- Short answers, the command first.\n",
            ),
        ]
    )
    outcome = only(result)
    assert outcome["result"] == "applied" and outcome["verb"] == "CREATE"
    text = ws.read("digest/personal/mira-preferences.md")
    # The core fills the frontmatter the model left out and links the unit's source.
    assert text.startswith("---\nname: Mira prefers short answers\ndescription: Mira prefers")
    assert text.endswith("## Sources\n\n- [[daily/2026-11-03/prefs]]\n")
    after = ws.tree()
    assert set(after) - set(before) == {"digest/personal/mira-preferences.md"}
    assert all(after[p] == before[p] for p in before)  # only the target changed
    assert result.verbs == ["CREATE digest/personal/mira-preferences.md"]
    assert result.outputs["changed"] == ["digest/personal/mira-preferences.md"]
    assert "CREATE digest/personal/mira-preferences.md" in ws.reme.history.entries(1)[0].verbs
    # Read-your-writes: the node is searchable as soon as the run returns.
    hits = ws.reme.search("short answers command", filters=None).hits
    assert any(h.path == "digest/personal/mira-preferences.md" for h in hits)


def test_corroborate_adds_only_the_source_link(ws: Workspace):
    result = ws.run([extraction(DEPLOY), decision("CORROBORATE", "digest/procedure/deploy.md")])
    assert only(result)["result"] == "applied"
    expected = DEPLOY_NODE.replace(
        "- [[daily/2026-10-01/first-deploy]]\n",
        "- [[daily/2026-10-01/first-deploy]]\n- [[daily/2026-11-02/deploy]]\n",
    )
    assert ws.read("digest/procedure/deploy.md") == expected
    assert result.verbs == ["CORROBORATE digest/procedure/deploy.md"]


def test_corroborate_of_a_node_already_citing_the_note_changes_nothing(ws: Workspace):
    ws.write("digest/procedure/deploy.md", DEPLOY_NODE + "- [[daily/2026-11-02/deploy]]\n")
    before = ws.tree()
    result = ws.run([extraction(DEPLOY), decision("CORROBORATE", "digest/procedure/deploy.md")])
    assert only(result)["result"] == "unchanged"
    assert ws.tree() == before and result.verbs == [] and result.outputs["changed"] == []


def test_refine_by_edit_keeps_everything_and_adds(ws: Workspace):
    step = "3. Restart the service and watch the journal."
    new = "3. Regenerate requirements.lock with pip-compile.\n4. Restart the service and watch the journal."
    result = ws.run(
        [extraction(DEPLOY), decision("REFINE", "digest/procedure/deploy.md", edit=edit(step, new))]
    )
    assert only(result)["result"] == "applied"
    text = ws.read("digest/procedure/deploy.md")
    assert new in text and "[[digest/wiki/architecture]]" in text
    assert text.endswith("- [[daily/2026-10-01/first-deploy]]\n- [[daily/2026-11-02/deploy]]\n")


def test_a_huge_candidate_is_cut_in_the_prompt_and_edited_in_full(ws: Workspace):
    history = "".join(f"- Deploy {i:03d} went out without trouble.\n" for i in range(600))
    node = DEPLOY_NODE.replace("## Sources\n", f"## History\n\n{history}\n## Sources\n")
    ws.write("digest/procedure/deploy.md", node)
    step = "3. Restart the service and watch the journal."
    new = "3. Regenerate requirements.lock.\n4. Restart the service and watch the journal."
    result = ws.run(
        [extraction(DEPLOY), decision("REFINE", "digest/procedure/deploy.md", edit=edit(step, new))]
    )
    (prompt,) = ws.llm.prompts("Decision")
    shown = prompt.split('<candidate path="digest/procedure/deploy.md">\n', 1)[1]
    shown = shown.split("\n</candidate>", 1)[0]
    # Shown up to candidate_tokens (1500 by default), the cut marked; the tail is not sent.
    found = re.search(r"\n\[\.\.\. (\d+) more lines not shown\]$", shown)
    assert found is not None and node.startswith(shown[: found.start()])
    assert int(found.group(1)) == node.count("\n") - shown[: found.start()].count("\n") - 1
    assert estimate_tokens(shown[: found.start()]) <= 1500
    assert step in shown and "Deploy 599" not in prompt and "## Sources" not in shown
    # The edit is applied to, and verified against, the whole file: nothing hidden is lost.
    assert only(result)["result"] == "applied"
    text = ws.read("digest/procedure/deploy.md")
    assert text == node.replace(step, new).replace(
        "- [[daily/2026-10-01/first-deploy]]\n",
        "- [[daily/2026-10-01/first-deploy]]\n- [[daily/2026-11-02/deploy]]\n",
    )


def test_refine_by_full_content(ws: Workspace):
    content = DEPLOY_NODE.replace(
        "## Steps\n", "## Steps\n\nRegenerate requirements.lock before step 1.\n"
    )
    result = ws.run(
        [extraction(DEPLOY), decision("REFINE", "digest/procedure/deploy.md", content=content)]
    )
    assert only(result)["result"] == "applied"
    assert "Regenerate requirements.lock before step 1." in ws.read("digest/procedure/deploy.md")


def test_correct_annotates_beside_the_corrected_statement(ws: Workspace):
    new = (
        "- work_mem is 16MB for every connection.\n"
        "  > note: contradicted by [[daily/2026-11-04/postgres]] - raised from 4MB, sorts spilled"
    )
    result = ws.run(
        [
            extraction(POSTGRES),
            decision(
                "CORRECT",
                "digest/wiki/postgres.md",
                edit=edit("- work_mem is 4MB for every connection.", new),
                evidence="daily/2026-11-04/postgres.md",
            ),
        ]
    )
    assert only(result)["result"] == "applied", only(result)["reason"]
    text = ws.read("digest/wiki/postgres.md")
    assert new in text and "[[architecture]]" in text
    assert text.endswith("## Sources\n\n- [[daily/2026-11-04/postgres]]\n")
    assert result.verbs == ["CORRECT digest/wiki/postgres.md"]


# -- each verb, rejected ------------------------------------------------------------------------

_DROPPED_LINK = DEPLOY_NODE.replace("; the layout is in [[digest/wiki/architecture]]", "")
_TWO_PASSAGES = DEPLOY_NODE.replace("Merge to main once CI is green", "Merge to main").replace(
    "Restart the service and watch", "Restart it and watch"
)
_FAR_NOTE = POSTGRES_NODE.replace("4MB", "16MB") + (
    "\nMore text.\n\n> note: contradicted by [[daily/2026-11-04/postgres]] - now 16MB\n"
)
_DEPLOY_NOTE = "daily/2026-11-02/deploy.md"
_PG_NOTE = "daily/2026-11-04/postgres.md"

VIOLATIONS = {
    "create over an existing file": (
        DEPLOY,
        decision("CREATE", "digest/procedure/deploy.md", content="# Deploy\n\nnew\n"),
        "CREATE over an existing file",
    ),
    "create outside the unit's bucket": (
        PREFS,
        decision("CREATE", "digest/wiki/mira.md", content="# Mira\n\nshort answers\n"),
        "under digest/personal/",
    ),
    "create escaping the workspace": (
        PREFS,
        decision("CREATE", "digest/personal/../../mira.md", content="# Mira\n"),
        "under digest/personal/",
    ),
    "create with an edit for another file": (
        PREFS,
        decision(
            "CREATE",
            "digest/personal/mira.md",
            edit=edit("work_mem", "x", path="digest/wiki/postgres.md"),
        ),
        "only the target digest/personal/mira.md may change",
    ),
    "corroborate that rewrites text": (
        DEPLOY,
        decision(
            "CORROBORATE",
            "digest/procedure/deploy.md",
            content=DEPLOY_NODE.replace("Merge to main", "Merge to trunk"),
        ),
        "CORROBORATE may only add source links",
    ),
    "corroborate adding a link that is not a source": (
        DEPLOY,
        decision(
            "CORROBORATE",
            "digest/procedure/deploy.md",
            content=DEPLOY_NODE + "- [[digest/wiki/postgres]]\n",
        ),
        "may only add links to the unit's source notes",
    ),
    "refine that drops a link": (
        DEPLOY,
        decision("REFINE", "digest/procedure/deploy.md", content=_DROPPED_LINK),
        "drops links [[digest/wiki/architecture]]",
    ),
    "refine that drops a source link": (
        DEPLOY,
        decision(
            "REFINE",
            "digest/procedure/deploy.md",
            edit=edit("- [[daily/2026-10-01/first-deploy]]\n", "- first deploy\n"),
        ),
        "[[daily/2026-10-01/first-deploy]]",
    ),
    "refine that edits a second file": (
        DEPLOY,
        decision(
            "REFINE",
            "digest/procedure/deploy.md",
            edit=edit("work_mem is 4MB", "work_mem is 8MB", path="digest/wiki/postgres.md"),
        ),
        "only the target digest/procedure/deploy.md may change",
    ),
    "refine of a node it was not shown": (
        DEPLOY,
        decision("REFINE", "digest/personal/nobody.md", content="# Nobody\n"),
        "is not one of the candidate nodes",
    ),
    "refine rewriting two passages": (
        DEPLOY,
        decision("REFINE", "digest/procedure/deploy.md", content=_TWO_PASSAGES),
        "may rewrite one passage",
    ),
    "refine removing a frontmatter key": (
        DEPLOY,
        decision(
            "REFINE",
            "digest/procedure/deploy.md",
            content=DEPLOY_NODE.replace("tags: [deploy]\n", "") + "\nMore.\n",
        ),
        "removed frontmatter keys tags",
    ),
    "refine that changes nothing": (
        DEPLOY,
        decision("REFINE", "digest/procedure/deploy.md", content=DEPLOY_NODE),
        "REFINE made no change",
    ),
    "refine with an edit that does not match": (
        DEPLOY,
        decision("REFINE", "digest/procedure/deploy.md", edit=edit("no such text", "x")),
        "occurs 0 times",
    ),
    "refine with broken frontmatter": (
        DEPLOY,
        decision(
            "REFINE",
            "digest/procedure/deploy.md",
            content=DEPLOY_NODE.replace("tags: [deploy]", "tags: [deploy"),
        ),
        "frontmatter",
    ),
    "correct without the annotation": (
        POSTGRES,
        decision(
            "CORRECT",
            "digest/wiki/postgres.md",
            edit=edit("work_mem is 4MB", "work_mem is 16MB"),
            evidence=_PG_NOTE,
        ),
        "CORRECT must add a line `> note: contradicted by [[daily/2026-11-04/postgres]]",
    ),
    "correct without evidence": (
        POSTGRES,
        decision(
            "CORRECT",
            "digest/wiki/postgres.md",
            edit=edit("work_mem is 4MB", "work_mem is 16MB"),
        ),
        "CORRECT needs `evidence`",
    ),
    "correct citing evidence outside the unit": (
        POSTGRES,
        decision(
            "CORRECT",
            "digest/wiki/postgres.md",
            edit=edit(
                "- work_mem is 4MB for every connection.",
                "- work_mem is 16MB.\n> note: contradicted by [[daily/2026-11-02/deploy]] - x",
            ),
            evidence=_DEPLOY_NOTE,
        ),
        "is not one of the unit's sources",
    ),
    "correct annotating far from the correction": (
        POSTGRES,
        decision("CORRECT", "digest/wiki/postgres.md", content=_FAR_NOTE, evidence=_PG_NOTE),
        "must sit beside what it corrects",
    ),
}


@pytest.mark.parametrize("case", list(VIOLATIONS))
def test_a_decision_breaking_its_contract_is_rejected_and_nothing_changes(ws: Workspace, case: str):
    the_unit, bad, reason = VIOLATIONS[case]
    before = ws.tree()
    result = ws.run([extraction(the_unit), bad])
    outcome = only(result)
    assert outcome["result"] == "failed"
    assert reason in outcome["reason"]
    assert outcome["rejections"] == [outcome["reason"]]
    assert ws.tree() == before  # byte for byte: no file written, created or touched
    assert result.verbs == [] and result.outputs["changed"] == []
    assert result.history is None  # nothing to record
    # The unit stays retryable, with its paths.
    (queued,) = ws.checkpoint()["queue"]
    assert queued["status"] == "failed" and queued["unit"]["sources"] == the_unit["sources"]
    assert result.outputs["failed"] == [
        {"unit": the_unit["name"], "sources": the_unit["sources"], "reason": outcome["reason"]}
    ]
