"""``dream_integrate`` in ``mode: agentic``: the configured agent wrapper edits a digest node.

The agent sees what the structured path's model sees (the unit, its sources, the candidate nodes)
and file tools confined to the candidates and the unit's bucket. It edits at most one node, then
answers with its verb as JSON. Its edit is not kept as it stands: every file it changed is put
back, and what it wrote for its target becomes the ``content`` of an ordinary ``Decision``, so the
same verifier checks it against the verb and the same code writes it (with ``expected_hash``, or
proposes it under ``review: queue``). A rejection goes back to the agent on the next attempt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from reme_core.api import AgentResult, AgentTask, LlmError, NoteSnapshot, Prompts

from .sources import target_path
from .units import Decision, DecisionRejected, DreamUnit, Verb

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class AgentAnswer(BaseModel):
    """What the agent answers after its edit."""

    verb: Verb
    target: str = Field(min_length=1)
    evidence: str | None = None
    note: str = ""


@dataclass
class AgentIntegration:
    reme: Any
    prompts: Prompts
    run_agent: Callable[[AgentTask, list[str]], AgentResult]
    max_turns: int

    def decide(
        self, unit: DreamUnit, candidates: list[Any], prompt: str, feedback: list[str]
    ) -> Decision:
        """Run the agent once; its edit as a Decision (not verified yet). LlmError when the
        agent failed; DecisionRejected when its answer or its edits break the rules."""
        allowed = [c.path for c in candidates] + [f"digest/{unit.bucket}"]
        before = NoteSnapshot.take(self.reme.root, allowed)
        retry = "".join(
            self.prompts.render("integrate_retry", reason=reason) + "\n" for reason in feedback
        )
        task = AgentTask(
            instructions=self.prompts.render("integrate_agent_system"),
            prompt=prompt + "\n\n" + self.prompts.render("integrate_agent") + retry,
            max_turns=self.max_turns,
        )
        result = self.run_agent(task, allowed)
        written = before.changes()
        before.put_back(self.reme.files, written)
        changed = list(written)
        if result.stopped == "error":
            raise LlmError(result.error or "the agent failed")
        answer = _answer(result.answer)
        target = target_path(answer.target)
        if [p for p in changed if p != target]:
            raise DecisionRejected(
                f"only the target may change; the edit also changed "
                f"{', '.join(p for p in changed if p != target)} (all put back)"
            )
        return Decision(
            verb=answer.verb,
            target=target,
            content=written.get(target),  # None: unchanged (CORROBORATE) or deleted
            evidence=answer.evidence,
            note=answer.note,
        )


def _answer(text: str) -> AgentAnswer:
    found = _OBJECT.search(text or "")
    try:
        return AgentAnswer.model_validate(json.loads(found.group(0) if found else text))
    except (ValueError, ValidationError) as exc:
        raise DecisionRejected(
            'answer with one JSON object: {"verb": "CREATE|CORROBORATE|REFINE|CORRECT", '
            f'"target": "digest/...md", "evidence": "...", "note": "..."}} (got {text[:200]!r}: '
            f"{exc})"
        ) from None
