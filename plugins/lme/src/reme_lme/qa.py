"""Question answering over the memory workspace, and LongMemEval's judge.

``answer``: a bounded search-tool loop. Each call the model either asks for a search (a query)
or answers; search results are appended to the conversation; after ``max_calls`` model calls the
model must answer from what it has. ``judge``: the per-type yes/no prompts of LongMemEval's
``evaluate_qa.py`` (``get_anscheck_prompt``), answered with a short completion; "yes" = correct.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from reme_core.api import Llm

ANSWER_SYSTEM = """You answer a user's question from your memory of past chat sessions with them.
The memory is searchable: ask for a search with a short keyword query, read the results (dated
chat excerpts), search again if something is missing, then answer. The current date is given;
resolve relative dates against the session dates. Answer briefly. If the memory does not hold
the information, say that you do not know.

Reply with a JSON object: {"search": "<query>"} to search, or {"answer": "<answer>"} to answer."""

FINAL_PROMPT = 'No more searches. Give your final answer now, as {"answer": "..."}.'

_YES_NO = " Answer yes or no only."
_STANDARD = (
    "I will give you a question, a correct answer, and a response from a model. Please answer "
    "yes if the response contains the correct answer. Otherwise, answer no. If the response is "
    "equivalent to the correct answer or contains all the intermediate steps to get the correct "
    "answer, you should also answer yes. If the response only contains a subset of the "
    "information required by the answer, answer no. "
)
JUDGE_PROMPTS: dict[str, str] = {
    "standard": _STANDARD
    + "\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\nModel Response: {response}\n\n"
    "Is the model response correct?" + _YES_NO,
    "temporal-reasoning": _STANDARD
    + "In addition, do not penalize off-by-one errors for the number of days. If the question "
    "asks for the number of days/weeks/months, etc., and the model makes off-by-one errors "
    "(e.g., predicting 19 days when the answer is 18), the model's response is still correct. "
    "\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\nModel Response: {response}\n\n"
    "Is the model response correct?" + _YES_NO,
    "knowledge-update": "I will give you a question, a correct answer, and a response from a "
    "model. Please answer yes if the response contains the correct answer. Otherwise, answer no. "
    "If the response contains some previous information along with an updated answer, the "
    "response should be considered as correct as long as the updated answer is the required "
    "answer.\n\nQuestion: {question}\n\nCorrect Answer: {answer}\n\nModel Response: {response}"
    "\n\nIs the model response correct?" + _YES_NO,
    "single-session-preference": "I will give you a question, a rubric for desired personalized "
    "response, and a response from a model. Please answer yes if the response satisfies the "
    "desired response. Otherwise, answer no. The model does not need to reflect all the points "
    "in the rubric. The response is correct as long as it recalls and utilizes the user's "
    "personal information correctly.\n\nQuestion: {question}\n\nRubric: {answer}\n\n"
    "Model Response: {response}\n\nIs the model response correct?" + _YES_NO,
    "abstention": "I will give you an unanswerable question, an explanation, and a response from "
    "a model. Please answer yes if the model correctly identifies the question as unanswerable. "
    "The model could say that the information is incomplete, or some other information is given "
    "but the asked information is not.\n\nQuestion: {question}\n\nExplanation: {answer}\n\n"
    "Model Response: {response}\n\nDoes the model correctly identify the question as "
    "unanswerable?" + _YES_NO,
}


class AnswerAction(BaseModel):
    """One model turn of the answer loop."""

    search: str | None = Field(None, description="A search query, to look something up.")
    answer: str | None = Field(None, description="The final answer.")


class Answer(BaseModel):
    answer: str
    searches: list[str] = Field(default_factory=list)
    calls: int = 0


Search = Callable[[str], str]
"""Runs one query; returns the results as text for the model."""


def answer(
    llm: Llm, question: str, question_date: str, search: Search, max_calls: int = 4
) -> Answer:
    """Answer ``question`` with at most ``max_calls`` model calls (the last one must answer)."""
    messages: list[dict[str, str]] = [
        {"role": "system", "content": ANSWER_SYSTEM},
        {"role": "user", "content": f"Current date: {question_date}\nQuestion: {question}"},
    ]
    result = Answer(answer="")
    for call in range(max(max_calls, 1)):
        last = call == max_calls - 1
        if last and call:
            messages.append({"role": "user", "content": FINAL_PROMPT})
        action = llm.structured(messages, AnswerAction)
        result.calls += 1
        query = (action.search or "").strip()
        if action.answer is not None and (not query or last):
            result.answer = action.answer.strip()
            return result
        if not query or last:
            break
        result.searches.append(query)
        messages.append({"role": "assistant", "content": action.model_dump_json(exclude_none=True)})
        messages.append(
            {"role": "user", "content": f"Search results for {query!r}:\n{search(query)}"}
        )
    result.answer = result.answer or "I do not know."
    return result


def judge_prompt(
    question_type: str, question: str, answer: str, response: str, abstention: bool
) -> str:
    """LongMemEval's judge prompt for this question type."""
    if abstention:
        template = JUDGE_PROMPTS["abstention"]
    else:
        template = JUDGE_PROMPTS.get(question_type, JUDGE_PROMPTS["standard"])
    return template.format(question=question, answer=answer, response=response)


def judge(llm: Llm, prompt: str) -> tuple[bool, str]:
    """``(correct, the judge's words)``: correct when the reply says yes."""
    reply = llm.complete([{"role": "user", "content": prompt}], max_tokens=10)
    return "yes" in reply.strip().lower(), reply.strip()


def render_hits(hits: list[dict[str, Any]], dates: dict[str, str], max_chars: int = 6000) -> str:
    """Search hits as dated text blocks for the model, at most ``max_chars`` in all."""
    blocks: list[str] = []
    used = 0
    for hit in hits:
        when = dates.get(hit["path"], "")
        block = f"[{when} {hit['path']} lines {hit['start_line']}-{hit['end_line']}]\n{hit['text']}"
        if used + len(block) > max_chars and blocks:
            break
        blocks.append(block[:max_chars])
        used += len(block)
    return "\n\n".join(blocks) or "(no results)"
