"""Hostile input against a real `reme serve`: the probe table's summary, and glob matching time.

    python benchmarks/adversarial.py [--max-k 8]

1. Every probe of tests/adversarial/probes.py over HTTP (admin and read tokens) and MCP:
   tried / refused / answered harmlessly / leaked / changed disk / 5xx. Leaked must be 0.
2. Issue 20's families (tests/adversarial/families.py) on a second server whose log is kept:
   the history read by a read token in a hostile workspace, ``?token=`` logins, hostile names,
   a non-UTF-8 name on disk, malformed Host headers, /docs offline, tokens in the log. Per
   family: probes / leaked / changed disk (or the session) wrongly / 5xx; all must be 0.
3. Glob bombs ``**?`` * k + ``Z`` against one 70-character path: the linear matcher beside the
   former regex translation (the baseline) in the same run, as a ratio. The regex side stops
   growing k once one match takes over 5 s (it doubles, roughly, with each k).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from reme_core.workspace.globs import Glob  # noqa: E402
from tests.adversarial import families as F  # noqa: E402
from tests.adversarial import families_web as W  # noqa: E402
from tests.adversarial import probes as P  # noqa: E402
from tests.adversarial.test_properties import reference_regex  # noqa: E402


def probe_table() -> str:
    with tempfile.TemporaryDirectory() as folder, P.served(Path(folder)) as target:
        table = P.probes(target.workspace, target.outside)
        reads = [p for p in table if p.op in ("read", "stat", "list", "traverse", "search")]
        rows = {
            "HTTP, admin token": P.run_http(target, table),
            "HTTP, read token (read ops)": P.run_http(target, reads, token=target.reader),
            "MCP, admin token": P.run_mcp(target, table),
        }
        for surface, outcomes in rows.items():
            for line in P.failures(outcomes):
                print(f"FAILED ({surface}): {line}")
        return P.summary(rows)


def family_table() -> str:
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "server.log"
        with P.served(Path(folder) / "families", log=log) as target:
            found = W.run_all(target, log)
    for family in found:
        for line in family.failures:
            print(f"FAILED ({family.name}): {line}")
    return F.table(found)


def glob_timings(max_k: int) -> str:
    path = "daily/2026-11-02/" + "a" * 53
    lines = [
        "| k (`**?` repeats) | linear matcher ms | former regex ms | ratio |",
        "|---|---|---|---|",
    ]
    regex_gave_up = False
    for k in range(2, max_k + 1):
        pattern = "**?" * k + "Z"
        started = time.perf_counter()
        for _ in range(10):
            assert not Glob(pattern).match(path)
        ours = (time.perf_counter() - started) / 10 * 1000
        if regex_gave_up:
            lines.append(f"| {k} | {ours:.2f} | (over 5 s, not run) | - |")
            continue
        started = time.perf_counter()
        assert not reference_regex(pattern).match(path)
        theirs = (time.perf_counter() - started) * 1000
        regex_gave_up = theirs > 5000
        lines.append(f"| {k} | {ours:.2f} | {theirs:.1f} | {theirs / ours:.0f}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-k", type=int, default=7)
    args = parser.parse_args()
    print("## Probes against reme serve\n")
    print(probe_table())
    print("\n## Issue 20 probe families against reme serve\n")
    print(family_table())
    print("\n## Glob bombs: linear matcher vs the former regex (same run)\n")
    print(glob_timings(args.max_k))


if __name__ == "__main__":
    main()
