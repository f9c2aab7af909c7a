"""Run by test_drift.py in a child process that is killed with SIGKILL: a seeded endless burst of
writes, edits, moves, frontmatter changes, deletes and optimizes through the Python API.

Usage: ``python crash_burst.py WORKSPACE SEED``. Prints ``ready`` once the workspace is open, then
one ``op <n> <kind>`` line per operation started. Every note holds one word found nowhere else
(``uniq...``), so the parent can check that each file is found by its own word.
"""

from __future__ import annotations

import random
import sys

from reme_core.runtime import Reme

FOLDER = "notes"
OVERRIDES = [
    "components.embedding.name=hash",
    "components.file_store.name=local",
]


def note(word: str, tags: list[str], link: str | None) -> str:
    body = f"# Note {word}\n\nThe {word} notes say little.\n"
    if link:
        body += f"\nSee [[{link}]] for more.\n"
    body += f"\n## Details\n\nMore about {word} and the weather.\n"
    return f"---\ntags: [{', '.join(tags)}]\n---\n{body}"


def main() -> None:
    root, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    with Reme.open(root, overrides=OVERRIDES) as reme:
        reme.index()
        print("ready", flush=True)
        n = 0
        while True:
            n += 1
            notes = [p for p in reme.indexer.scope_files() if p.startswith(FOLDER + "/")]
            word = f"uniq{seed}x{n}"
            roll = rng.random()
            if roll < 0.3 or len(notes) < 4:
                kind = "write"
                target = rng.choice(notes)[len(FOLDER) + 1 : -3] if notes else None
                tags = [f"t{rng.randrange(4)}"]
                print(f"op {n} {kind}", flush=True)
                reme.files.write(f"{FOLDER}/n{seed}-{n}.md", note(word, tags, target))
            elif roll < 0.5:
                kind = "edit"
                path = rng.choice(notes)
                print(f"op {n} {kind}", flush=True)
                reme.files.write(path, note(word, [f"t{rng.randrange(4)}"], None))
            elif roll < 0.75:
                kind = "move"
                path = rng.choice(notes)
                print(f"op {n} {kind}", flush=True)
                reme.files.move(path, f"{FOLDER}/m{seed}-{n}.md")
            elif roll < 0.82:
                kind = "frontmatter"
                path = rng.choice(notes)
                print(f"op {n} {kind}", flush=True)
                reme.files.update_frontmatter(path, {"tags": [f"t{rng.randrange(4)}", "fm"]})
            elif roll < 0.93:
                kind = "delete"
                path = rng.choice(notes)
                print(f"op {n} {kind}", flush=True)
                reme.files.delete(path)
            else:
                kind = "optimize"
                print(f"op {n} {kind}", flush=True)
                reme.optimize()


if __name__ == "__main__":
    main()
