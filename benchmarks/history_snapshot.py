"""What a history snapshot costs on a workspace of N notes: the first one (the baseline), one
with nothing changed, one after a one-note change, and one file-tool change's own commit
(``History.after_change``, what every write through reme now pays).

    python benchmarks/history_snapshot.py --notes 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from reme_core.workspace import init_workspace
from reme_core.workspace.history import History


def timed(action: Callable[[], object], repeat: int, before: Callable[[], None]) -> float:
    """The median seconds of ``action`` over ``repeat`` tries, ``before`` run ahead of each."""
    seconds = []
    for _ in range(repeat):
        before()
        started = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "ws"
        init_workspace(root)
        for i in range(args.notes):
            folder = root / "digest" / "wiki" / f"f{i % 40:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            body = f"# Note {i}\n\n" + f"Line {i} about the larkspur rollout.\n" * 20
            (folder / f"note-{i}.md").write_text(body)
        history = History(root)
        started = time.perf_counter()
        history.snapshot()
        print(f"notes: {args.notes}")
        print(f"first snapshot (baseline):        {time.perf_counter() - started:.3f} s")
        one = root / "digest" / "wiki" / "f00" / "note-0.md"
        counter = iter(range(10**6))

        def change() -> None:
            one.write_text(f"# Note 0\n\nchanged {next(counter)}\n")

        nothing = timed(history.snapshot, args.repeat, lambda: None)
        print(f"snapshot, nothing changed:        {nothing:.3f} s (median of {args.repeat})")
        changed = timed(history.snapshot, args.repeat, change)
        print(f"snapshot, one note changed:       {changed:.3f} s (median of {args.repeat})")
        rel = "digest/wiki/f00/note-0.md"
        own = timed(lambda: history.after_change([rel], []), args.repeat, change)
        print(f"one write's own commit:           {own:.3f} s (median of {args.repeat})")

        def old_snapshot() -> None:  # what snapshots did before the confinement
            base = ["git", f"--git-dir={history.git_dir}", f"--work-tree={root}"]
            subprocess.run([*base, "add", "--all", "."], cwd=root, check=True)
            subprocess.run(
                [*base, "-c", "user.name=r", "-c", "user.email=r@l", "commit", "-qm", "x"],
                cwd=root,
                check=False,
                capture_output=True,
            )

        old = timed(old_snapshot, args.repeat, change)
        print(f"old `git add --all .`, one change: {old:.3f} s (median of {args.repeat})")


if __name__ == "__main__":
    main()
