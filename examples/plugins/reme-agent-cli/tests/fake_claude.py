"""A stand-in for ``claude -p``: plays the plan in ``$FAKE_AGENT_PLAN`` in its working directory.

The plan is a JSON list of steps: ``{"call": tool, "args": {...}}`` (write, edit, read, ls, move,
delete: done to the files under the working directory, as the real agent's own tools would),
``{"fail": message}`` (the model fails: message on stderr, exit 1) and ``{"answer": text}``. Each
call is a turn; a call past ``--max-turns`` ends the run as Claude Code does, with
``subtype: error_max_turns``. The answer is printed as ``--output-format json`` prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("-p", dest="prompt", required=True)
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--append-system-prompt")
    parser.add_argument("--output-format")
    parser.add_argument("--permission-mode")
    args = parser.parse_args()
    steps = json.loads(Path(os.environ["FAKE_AGENT_PLAN"]).read_text(encoding="utf-8"))
    for turns, step in enumerate(steps):  # every step before this one was a call: a turn
        if "fail" in step:
            print(step["fail"], file=sys.stderr)
            return 1
        if "answer" in step:
            result = {"type": "result", "subtype": "success", "is_error": False}
            print(json.dumps({**result, "result": step["answer"], "num_turns": turns + 1}))
            return 0
        if turns == args.max_turns:
            result = {"type": "result", "subtype": "error_max_turns", "is_error": True}
            print(json.dumps({**result, "num_turns": turns}))
            return 1
        act(step["call"], step["args"])
    return 0


def act(tool: str, args: dict) -> None:
    path = Path(args.get("path") or ".")
    if tool == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(args["content"], encoding="utf-8")
    elif tool == "edit" and path.is_file():
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace(args["old"], args["new"], 1), encoding="utf-8")
    elif tool == "move" and Path(args["src"]).is_file():
        Path(args["dst"]).parent.mkdir(parents=True, exist_ok=True)
        os.replace(args["src"], args["dst"])
    elif tool == "delete" and path.is_file():
        path.unlink()
    # read and ls change nothing (a missing file is what the real agent would find too)


if __name__ == "__main__":
    sys.exit(main())
