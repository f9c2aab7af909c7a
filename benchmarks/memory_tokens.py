"""LLM calls and tokens spent per ingested turn by auto_memory, on LongMemEval conversations.

Real sessions from LongMemEval_S (dev) go through the `auto_memory` pipeline, over HTTP, against a
local OpenAI-compatible model (`local_model.py`: deterministic, extractive, no GPU) with the
shipped `openai` llm plugin, so prompts, JSON schemas, retries and token accounting are exactly
those of a run against Ollama or vLLM. Side by side, in one run:

- ``structured``: the default; one structured call per session (more when a session exceeds the
  prompt budget);
- ``incremental``: the same, but called after every user+assistant pair, as a Claude Code Stop
  hook did before batching (each call re-sends the recent turns as context and the note so far);
- ``batched``: called after every pair as the Stop hook does, with ``min_pending_turns``
  (``--batch``, default 6, as ``auto_memory_cc`` ships): calls that find fewer pending turns only
  save them; a final ``flush: true`` per session (the SessionEnd hook) summarises the rest;
- ``agentic``: the agentic mode (the toolloop wrapper) with the cheapest possible agent: it
  writes the note in one tool call and then answers. Any real agent that looks around first
  (ls, read, search) spends more, so this is a lower bound for agent-driven memory writing.

Prompt tokens are estimated (``estimate_tokens``: ~4 characters per token) over the whole
request, schema included. The peer's agentic approach is reported to spend ~33M tokens to build
memory for one 1M-token BEAM conversation (33 tokens per ingested token); the last column is the
same ratio for ours.

    python benchmarks/memory_tokens.py ../shared/data/longmemeval/longmemeval_s_dev50.json.gz \\
        --sessions 40
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from reme_core.components import estimate_tokens
from reme_core.runtime import Reme
from reme_core.workspace import init_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_model import LocalModel

PEER_TOKENS_PER_INGESTED_TOKEN = 33.0
MODES = ("structured", "incremental", "batched", "agentic")


def load_sessions(path: Path, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` distinct haystack sessions: id, date, turns."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        items = json.load(handle)
    seen: set[str] = set()
    sessions = []
    for item in items:
        for sid, date, turns in zip(
            item["haystack_session_ids"],
            item["haystack_dates"],
            item["haystack_sessions"],
            strict=True,
        ):
            if sid in seen or not turns:
                continue
            seen.add(sid)
            sessions.append(
                {
                    "id": re.sub(r"[^A-Za-z0-9._-]", "_", sid),
                    "date": date[:10].replace("/", "-"),
                    "turns": [{"role": t["role"], "content": t["content"]} for t in turns],
                }
            )
            if len(sessions) == limit:
                return sessions
    return sessions


def agent_policy(body: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any] | None:
    """Act as the cheapest agent: write the note once, then answer."""
    if not {"tool", "args", "answer"} <= set(schema.get("properties", {})):
        return None  # not the tool loop's action: let the model fill the schema
    messages = body["messages"]
    if any(m["role"] == "assistant" for m in messages):
        return {"thought": "", "tool": None, "args": {}, "answer": "Recorded the session."}
    task = "\n".join(m["content"] for m in messages if m["role"] == "user")
    path = re.search(r"Note path: (\S+)", task).group(1)
    session = re.search(r"session_id: ([^,\s]+)", task).group(1)
    facts = [s for s in re.findall(r"[^.!?\n]{30,200}[.!?]", task)][:4]
    body_text = "\n".join(f"- {fact.strip()}" for fact in facts) or "- (nothing notable)"
    content = (
        f"---\nname: Session {session}\ndescription: What session {session} was about\n"
        f"session_id: {session}\n---\n# Session {session}\n\n## Key facts\n{body_text}\n"
    )
    return {"thought": "", "tool": "write", "args": {"path": path, "content": content}}


def run_mode(mode: str, sessions: list[dict[str, Any]], url: str, batch: int = 6) -> dict[str, Any]:
    step = {
        "agentic": "{name: auto_memory, settings: {mode: agentic}}",
        "batched": f"{{name: auto_memory, settings: {{min_pending_turns: {batch}}}}}",
    }.get(mode, "{name: auto_memory}")
    overrides = [
        "components.embedding=null",
        "components.file_store=null",
        f"components.llm={{name: openai, settings: {{base_url: '{url}', model: local, "
        "api_key_env: REME_BENCH_NO_KEY, retries: 0}}",
        f"pipelines.auto_memory.steps=[{step}]",
    ]
    totals = {"calls": 0, "prompt": 0, "completion": 0, "turns": 0, "ingested": 0, "notes": 0}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        init_workspace(root)
        started = time.perf_counter()
        with Reme.open(root, overrides=overrides, env={}) as reme:
            for session in sessions:
                turns = session["turns"]
                size = 2 if mode in ("incremental", "batched") else len(turns)
                calls = [turns[start : start + size] for start in range(0, len(turns), size)]
                params = [{"messages": pair} for pair in calls]
                if mode == "batched":
                    params.append({"messages": [], "flush": True})  # the SessionEnd hook
                for extra in params:
                    result = reme.run(
                        "auto_memory",
                        {"session_id": session["id"], "date": session["date"], **extra},
                    )
                    usage = result.usage
                    totals["calls"] += usage.calls
                    totals["prompt"] += usage.prompt_tokens
                    totals["completion"] += usage.completion_tokens
                totals["turns"] += len(turns)
                totals["ingested"] += sum(estimate_tokens(t["content"]) for t in turns)
            totals["notes"] = sum(1 for _ in (root / "daily").rglob("*.md"))
        totals["seconds"] = time.perf_counter() - started
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, nargs="?", default=default_data())
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--batch",
        type=int,
        default=6,
        help="min_pending_turns for the batched mode (turns = messages; a pair is 2)",
    )
    args = parser.parse_args()
    sessions = load_sessions(args.data, args.sessions)
    turns = sum(len(s["turns"]) for s in sessions)
    print(f"{len(sessions)} LongMemEval sessions, {turns} turns, from {args.data.name}")
    rows = {}
    with LocalModel(policy=agent_policy) as model:
        for mode in args.modes:
            rows[mode] = run_mode(mode, sessions, model.url, args.batch)
    header = (
        f"{'mode':<12} {'notes':>5} {'calls':>6} {'calls/turn':>10} {'prompt tok':>11} "
        f"{'completion':>10} {'tokens/turn':>11} {'spent/ingested':>14} {'vs peer 33x':>11}"
    )
    print(header)
    for mode, r in rows.items():
        spent = r["prompt"] + r["completion"]
        ratio = spent / max(r["ingested"], 1)
        print(
            f"{mode:<12} {r['notes']:>5} {r['calls']:>6} {r['calls'] / r['turns']:>10.3f} "
            f"{r['prompt']:>11,} {r['completion']:>10,} {spent / r['turns']:>11.0f} "
            f"{ratio:>13.2f}x {PEER_TOKENS_PER_INGESTED_TOKEN / ratio:>10.1f}x"
        )
    if "structured" in rows and len(rows) > 1:
        base = rows["structured"]
        base_spent = base["prompt"] + base["completion"]
        for mode, r in rows.items():
            if mode != "structured":
                ratio = (r["prompt"] + r["completion"]) / max(base_spent, 1)
                print(f"{mode} spends {ratio:.2f}x the tokens of structured")
    if "batched" in rows:
        print(f"batched: min_pending_turns {args.batch}, a call per pair, a flush per session")
    print("'vs peer 33x': how many times fewer tokens per ingested token than the peer's agent")


def default_data() -> Path:
    return (
        Path(__file__).resolve().parents[2] / "shared/data/longmemeval/longmemeval_s_dev50.json.gz"
    )


if __name__ == "__main__":
    main()
