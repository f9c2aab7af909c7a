"""The dream contract checks on their own: apply a decision in memory, verify it, no workspace."""

from __future__ import annotations

import datetime as dt

import pytest

from pipelines.test_dream_support import DEPLOY_NODE, POSTGRES_NODE
from reme_core.pipelines.prompts import LANGUAGES, load_prompts, placeholders
from reme_core.workspace.wikilinks import LinkResolver
from reme_plugins.dream.apply import apply_decision
from reme_plugins.dream.sources import LinkKeys, add_sources, find_sources
from reme_plugins.dream.units import Decision, DecisionRejected, DreamError, DreamParams, DreamUnit
from reme_plugins.dream.verify import check_target, verify

SOURCE = "daily/2026-11-04/postgres.md"
PATHS = [
    "digest/procedure/deploy.md",
    "digest/wiki/postgres.md",
    "digest/wiki/architecture.md",
    "daily/2026-10-01/first-deploy.md",
    SOURCE,
]
UNIT = DreamUnit(
    id="u1", name="work_mem", bucket="wiki", summary="work_mem is 16MB", sources=[SOURCE]
)


def keys(target: str) -> LinkKeys:
    return LinkKeys(LinkResolver([*PATHS, target]), target)


def outcome(verb: str, target: str, before: str | None, **fields) -> str:  # type: ignore[no-untyped-def]
    """The text that would be written; DecisionRejected when the decision is refused."""
    made = Decision(verb=verb, target=target, **fields)
    exists = before is not None
    path = check_target(made, UNIT, [target] if exists else [], lambda p: exists and p == target)
    applied = apply_decision(made, path, before, UNIT, keys(path))
    verify(made, path, before, applied, UNIT, keys(path))
    return applied.after


def rejected(verb: str, target: str, before: str | None, **fields) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(DecisionRejected) as caught:
        outcome(verb, target, before, **fields)
    return str(caught.value)


def test_sources_section_is_created_extended_or_left_alone():
    k = keys("digest/wiki/x.md")
    assert add_sources("# X\n\ntext", [SOURCE], k) == (
        "# X\n\ntext\n\n## Sources\n\n- [[daily/2026-11-04/postgres]]\n"
    )
    with_section = "# X\n\n## Sources\n\n- [[first-deploy]]\n\n## Later\n\nmore\n"
    assert add_sources(with_section, [SOURCE], k) == (
        "# X\n\n## Sources\n\n- [[first-deploy]]\n- [[daily/2026-11-04/postgres]]\n\n"
        "## Later\n\nmore\n"
    )
    empty = "# X\n\n## Sources\n"
    assert (
        add_sources(empty, [SOURCE], k) == "# X\n\n## Sources\n\n- [[daily/2026-11-04/postgres]]\n"
    )
    # Already linked under another spelling (basename, .md): nothing added.
    cited = "# X\n\n## Sources\n\n- [[postgres.md]] hmm\n".replace(
        "[[postgres.md]]", "[[daily/2026-11-04/postgres.md]]"
    )
    assert add_sources(cited, [SOURCE], k) == cited
    fenced = "```\n## Sources\n```\n"
    assert find_sources(fenced) is None


def test_a_link_rewritten_to_the_same_target_still_counts_as_kept():
    before = POSTGRES_NODE
    after = before.replace("[[architecture]]", "[[digest/wiki/architecture|the host]]").replace(
        "- max_connections", "- 16MB work_mem was measured on 2026-11-04.\n- max_connections"
    )
    assert "[[digest/wiki/architecture|the host]]" in outcome(
        "REFINE", "digest/wiki/postgres.md", before, content=after
    )


def test_create_rules():
    text = outcome("CREATE", "digest/wiki/work-mem", None, content="# Work mem\n\n16MB.\n")
    assert text.startswith("---\nname: work_mem\ndescription: work_mem is 16MB\n---\n\n# Work mem")
    keep = "---\nname: Mine\ndescription: Given.\nextra: 1\n---\n# Work mem\n\n16MB.\n"
    assert outcome("CREATE", "digest/wiki/w.md", None, content=keep).startswith(keep)
    assert "is empty" in rejected("CREATE", "digest/wiki/w.md", None, content="# Title only\n")
    assert "needs `content`" in rejected("CREATE", "digest/wiki/w.md", None)
    assert "under digest/wiki/" in rejected("CREATE", "daily/w.md", None, content="x")
    assert "under digest/wiki/" in rejected("CREATE", "digest/wiki/.hidden.md", None, content="x")
    assert "under digest/wiki/" in rejected("CREATE", "digest/wiki/w.txt", None, content="x")
    assert "already exists" in rejected(
        "CREATE", "digest/wiki/postgres.md", POSTGRES_NODE, content="# P\n\nx\n"
    )
    assert "either `content`" in rejected(
        "CREATE", "digest/wiki/w.md", None, content="x", edit={"old_text": "a", "new_text": "b"}
    )
    assert "frontmatter is invalid" in rejected(
        "CREATE", "digest/wiki/w.md", None, content="---\nname: [oops\n---\n# W\n\nx\n"
    )


def test_corroborate_rules():
    target = "digest/wiki/postgres.md"
    after = outcome("CORROBORATE", target, POSTGRES_NODE)
    assert after == POSTGRES_NODE + "\n## Sources\n\n- [[daily/2026-11-04/postgres]]\n"
    # The model may write the link itself, as a list item under the heading.
    by_hand = POSTGRES_NODE + "\n## Sources\n\n- [[daily/2026-11-04/postgres.md]] (2026-11-04)\n"
    assert outcome("CORROBORATE", target, POSTGRES_NODE, content=by_hand) == by_hand
    inline = POSTGRES_NODE.replace("pgbouncer.", "pgbouncer ([[daily/2026-11-04/postgres]]).")
    assert "changes line" in rejected("CORROBORATE", target, POSTGRES_NODE, content=inline)
    prose = POSTGRES_NODE + "\nAlso work_mem matters.\n"
    assert "adds 'Also work_mem matters.'" in rejected(
        "CORROBORATE", target, POSTGRES_NODE, content=prose
    )
    front = POSTGRES_NODE.replace("tags: [postgres]", "tags: [postgres, db]")
    assert "changes line" in rejected("CORROBORATE", target, POSTGRES_NODE, content=front)


def test_refine_rules():
    target = "digest/procedure/deploy.md"
    grown = DEPLOY_NODE.replace("3. Restart", "3. Smoke-import the app.\n4. Restart")
    assert "Smoke-import" in outcome("REFINE", target, DEPLOY_NODE, content=grown)
    # Additions anywhere are fine, and so are one rewritten passage and a new description.
    spread = (
        DEPLOY_NODE.replace("How Larkspur is deployed", "How and when Larkspur is deployed")
        .replace("# Deploying Larkspur\n", "# Deploying Larkspur\n\nIntro line.\n")
        .replace("2. Tag the release and push the tags.", "2. Tag the release (vX.Y.Z), push tags.")
        + "\nA closing remark.\n"
    )
    assert "A closing remark." in outcome("REFINE", target, DEPLOY_NODE, content=spread)
    gutted = DEPLOY_NODE.replace(
        "1. Merge to main once CI is green.\n2. Tag the release and push the tags.\n"
        "3. Restart the service and watch the journal.\n",
        "1. Ship it.\n",
    )
    assert "shrinks from" in rejected("REFINE", target, DEPLOY_NODE, content=gutted)
    unique = rejected(
        "REFINE", target, DEPLOY_NODE, edit={"old_text": "Larkspur", "new_text": "Lark"}
    )
    assert "occurs 4 times" in unique and "must occur exactly once" in unique
    assert "is not one of the candidate nodes" in rejected(
        "REFINE", "digest/wiki/missing.md", None, content="# M\n\nx\n"
    )
    assert "existing digest node" in rejected("REFINE", "daily/2026-11-04/postgres.md", None)


NOTE = "> note: contradicted by [[daily/2026-11-04/postgres]] - 16MB since 2026-11-04"
OLD_CLAIM = "- work_mem is 4MB for every connection.\n"
NEW_CLAIM = "- work_mem is 16MB for every connection.\n"


def test_correct_rules():
    target = "digest/wiki/postgres.md"

    def correct(content: str, before: str = POSTGRES_NODE, evidence: str = SOURCE) -> str:
        return outcome("CORRECT", target, before, content=content, evidence=evidence)

    def refused(content: str, before: str = POSTGRES_NODE, evidence: str = SOURCE) -> str:
        return rejected("CORRECT", target, before, content=content, evidence=evidence)

    # The old claim kept and annotated right below it.
    kept = POSTGRES_NODE.replace(OLD_CLAIM, f"{OLD_CLAIM}{NOTE}\n")
    assert NOTE in correct(kept)
    # The claim rewritten, the note after a blank line: still beside it.
    assert correct(POSTGRES_NODE.replace(OLD_CLAIM, f"{NEW_CLAIM}\n{NOTE}\n\n"))
    # The note must link the evidence, carry a reason, and be new.
    assert "must add a line" in refused(kept.replace("daily/2026-11-04/postgres", "architecture"))
    assert "must add a line" in refused(kept.replace(" - 16MB since 2026-11-04", ""))
    annotated = POSTGRES_NODE + f"\n{NOTE}\n"
    assert "must add a line" in refused(annotated.replace(OLD_CLAIM, NEW_CLAIM), before=annotated)
    # Beside the correction, not at the other end of the node.
    far = POSTGRES_NODE.replace(OLD_CLAIM, NEW_CLAIM) + f"\nMore.\n\n{NOTE}\n"
    assert "must sit beside" in refused(far)
    assert "not one of the unit's sources" in refused(kept, evidence="daily/2026-11-02/deploy.md")


def test_params_are_checked():
    assert DreamParams.from_state({"date": "2026-11-02", "other": 1}).date == "2026-11-02"
    assert DreamParams.from_state({"date": dt.date(2026, 11, 2)}).date == "2026-11-02"
    with pytest.raises(DreamError, match="date must be YYYY-MM-DD"):
        DreamParams.from_state({"date": "yesterday"})
    with pytest.raises(DreamError, match="not a calendar day"):
        DreamParams.from_state({"date": "2026-02-30"})
    with pytest.raises(DreamError, match="dry_run"):
        DreamParams.from_state({"dry_run": "perhaps"})


def test_prompt_languages_agree():
    english = load_prompts("reme_plugins", "dream", "en").templates
    for language in LANGUAGES:
        templates = load_prompts("reme_plugins", "dream", language).templates
        assert set(templates) == set(english)
        for key, template in templates.items():
            assert placeholders(template) == placeholders(english[key]), (language, key)
