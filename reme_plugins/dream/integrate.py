"""Integration: one unit at a time, recall candidate digest nodes, get a decision, apply it in
memory, verify it, and only then write the one target file (or, with ``review: queue``, propose
the verified change for review and write nothing).

A rejected decision goes back to the model with the reason; a model error (garbage output
after the model's own retries, a timeout, an HTTP error) counts as a failed attempt too. When
the attempts are spent the unit fails and nothing is written for it. Every write indexes the
file before it returns, so the next unit's search already sees the node this one wrote.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reme_core.api import (
    LinkResolver,
    Llm,
    LlmError,
    Prompts,
    RemeError,
    SearchError,
    SearchFilters,
    WorkspaceError,
    content_hash,
    head_lines,
)

from .agentic import AgentIntegration
from .apply import apply_decision
from .sources import LinkKeys
from .supersede import keep_superseded
from .units import BUCKETS, Decision, DecisionRejected, DreamUnit, UnitOutcome
from .verify import check_target, verify

DIGEST_FOLDERS = [f"digest/{bucket}" for bucket in BUCKETS]


@dataclass(frozen=True)
class Candidate:
    path: str
    text: str
    hash: str


@dataclass(frozen=True)
class Plan:
    """A verified decision, ready to write."""

    decision: Decision
    target: str
    before_hash: str | None
    after: str
    before: str | None = None
    checks: tuple[str, ...] = ()
    """What the verifier checked and passed."""

    @property
    def changes(self) -> bool:
        return self.before_hash != content_hash(self.after)


def exists(reme: Any, path: str) -> bool:
    """Whether ``path`` names a file, or (a case-insensitive file system would let a "new" file
    overwrite an existing one) a path the catalog knows in another case."""
    if os.path.lexists(reme.root / path):
        return True
    lowered = path.lower()
    return any(p.lower() == lowered for p in reme.catalog.hashes())


def verify_decision(
    reme: Any,
    decision: Decision,
    target: str,
    before: str | None,
    unit: DreamUnit,
) -> tuple[str, list[str]]:
    """Apply ``decision`` to ``target`` (its text ``before``, checked by ``check_target``) and
    verify it; DecisionRejected with the reason if not. Returns the text to write and the checks
    passed.

    The one verifier of both paths: a run's decision, and a proposal approved later (against
    the target's text then)."""
    passed = (
        [f"CREATE of a new file under digest/{unit.bucket}/"]
        if decision.verb == "CREATE"
        else [f"{decision.verb} of a candidate node that exists"]
    )
    known = set(reme.catalog.hashes()) | set(unit.sources) | {target}
    keys = LinkKeys(LinkResolver(known), target)
    applied = apply_decision(decision, target, before, unit, keys)
    passed += verify(decision, target, before, applied, unit, keys)
    return applied.after, passed


@dataclass
class Integrator:
    reme: Any
    llm: Llm | None
    prompts: Prompts
    candidates: int
    candidate_tokens: int
    """How much of each candidate the prompt shows; the rest is marked as not shown."""
    retries: int
    output_retries: int | None
    dry_run: bool
    record: Callable[[str], None]
    propose: Callable[[Plan, DreamUnit], tuple[str, str, str | None]] | None = None
    """``review: queue``: queue a verified plan for review instead of writing it; returns the
    proposal's id, its status (``pending``, or ``rejected`` when the same change was rejected
    before) and that rejection's reason."""
    agent: AgentIntegration | None = None
    """``mode: agentic``: the agent wrapper edits the node instead of the model deciding."""

    def integrate(self, unit: DreamUnit) -> tuple[UnitOutcome, str | None]:
        """Integrate one unit; returns its outcome and the path written (None if none)."""
        outcome = UnitOutcome(
            unit=unit.id, name=unit.name, bucket=unit.bucket, sources=unit.sources, result="failed"
        )
        try:
            candidates = self.find_candidates(unit)
        except (SearchError, WorkspaceError) as exc:
            outcome.reason = f"candidate search failed: {exc}"
            return outcome, None
        outcome.candidates = [c.path for c in candidates]
        messages = [
            {"role": "system", "content": self.prompts.render("integrate_system")},
            {"role": "user", "content": self._prompt(unit, candidates)},
        ]
        feedback: list[str] = []  # rejections told to the agent on its next attempt
        for _ in range(self.retries + 1):
            outcome.attempts += 1
            try:
                if self.agent is not None:
                    decision = self.agent.decide(unit, candidates, messages[1]["content"], feedback)
                else:
                    decision = self.llm.structured(
                        messages, Decision, max_retries=self.output_retries
                    )
            except LlmError as exc:
                outcome.reason = f"model error: {exc}"
                continue
            except DecisionRejected as exc:  # the agent's answer or edit broke the rules
                outcome.reason = str(exc)
                outcome.rejections.append(str(exc))
                feedback.append(str(exc))
                continue
            outcome.verb, outcome.target = decision.verb, decision.target
            outcome.note = decision.note
            try:
                plan = self.plan(decision, unit, candidates)
            except RemeError as exc:  # DecisionRejected, or a text that cannot be parsed
                outcome.reason = str(exc)
                outcome.rejections.append(str(exc))
                feedback.append(str(exc))
                messages += [
                    {"role": "assistant", "content": decision.model_dump_json(exclude_none=True)},
                    {"role": "user", "content": self.prompts.render("integrate_retry", reason=exc)},
                ]
                continue
            outcome.target = plan.target
            return self._finish(outcome, plan, unit)
        return outcome, None

    def find_candidates(self, unit: DreamUnit) -> list[Candidate]:
        """The digest nodes search finds for the unit, best first, with their full text."""
        filters = SearchFilters(paths=list(DIGEST_FOLDERS), statuses=["active"])
        response = self.reme.engine_search(
            f"{unit.name}\n{unit.summary}",
            limit=min(self.candidates * 4, 200),
            filters=filters,
            expand=False,
        )
        found: list[Candidate] = []
        for hit in response.hits:
            if len(found) >= self.candidates:
                break
            if hit.path in {c.path for c in found}:
                continue
            _, absolute = self.reme.paths.resolve(hit.path)
            try:
                data = absolute.read_bytes()
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # gone or unreadable since it was indexed: not a safe target
            found.append(Candidate(hit.path, text, content_hash(data)))
        return found

    def plan(self, decision: Decision, unit: DreamUnit, candidates: list[Candidate]) -> Plan:
        """Apply ``decision`` in memory and verify it; DecisionRejected with the reason if not."""
        by_path = {c.path: c for c in candidates}
        target = check_target(decision, unit, list(by_path), self._exists)
        before = by_path.get(target)
        text = before.text if before else None
        after, checks = verify_decision(self.reme, decision, target, text, unit)
        hash_ = before.hash if before else None
        return Plan(decision, target, hash_, after, before=text, checks=tuple(checks))

    def _finish(
        self, outcome: UnitOutcome, plan: Plan, unit: DreamUnit
    ) -> tuple[UnitOutcome, str | None]:
        outcome.reason = None
        if not plan.changes:
            outcome.result = "unchanged"  # e.g. CORROBORATE of a node that already cites it
            return outcome, None
        if self.dry_run:
            outcome.result = "dry-run"
            return outcome, None
        if plan.before_hash is None and self._exists(plan.target):
            outcome.reason = f"{plan.target} appeared while the unit was integrated; not replaced"
            return outcome, None
        if self.propose is not None:
            outcome.proposal, status, why = self.propose(plan, unit)
            if status == "rejected":
                outcome.result = "rejected"
                outcome.reason = f"the same change was rejected in review: {why}"
            else:
                outcome.result = "proposed"
            return outcome, None
        kept = None
        try:
            if plan.decision.verb == "CORRECT" and plan.before is not None:
                # The statement as it was, kept beside the corrected node (supersede.py).
                kept = keep_superseded(self.reme, plan.target, plan.before, plan.decision.evidence)
            self.reme.files.write(
                plan.target,
                plan.after,
                expected_hash=plan.before_hash,
                create_only=plan.before_hash is None,
            )
        except (WorkspaceError, DecisionRejected) as exc:
            # A hand edit raced the run: nothing is overwritten, and no copy is left behind.
            if kept is not None:
                self.reme.files.delete(kept)
            outcome.reason = f"could not write {plan.target}: {exc}"
            return outcome, None
        outcome.superseded = kept
        outcome.result = "applied"
        self.record(f"{plan.decision.verb} {plan.target}")
        return outcome, plan.target

    def _exists(self, path: str) -> bool:
        return exists(self.reme, path)

    def _prompt(self, unit: DreamUnit, candidates: list[Candidate]) -> str:
        # A long node is cut in the prompt only: decisions are applied to and verified against
        # its full text, so an edit inside the shown part keeps the rest as it is.
        shown = "\n\n".join(
            f'<candidate path="{c.path}">\n'
            f"{head_lines(c.text, self.candidate_tokens).rstrip()}\n</candidate>"
            for c in candidates
        )
        return self.prompts.render(
            "integrate_user",
            name=unit.name,
            bucket=unit.bucket,
            summary=unit.summary,
            sources="\n".join(f"- {path}" for path in unit.sources),
            candidates=shown or "(none)",
        )
