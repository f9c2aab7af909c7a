"""Take notes out of the version history for good (``reme forget --purge``).

The history keeps every version of every note (that is what makes a revert possible), so
forgetting a note's text means rewriting it: every commit is recommitted without the note's
paths and without any blob the note ever had (under whatever name), and its name is taken out of
the commit messages; then the old objects are dropped (reflogs expired, ``git gc
--prune=now``). The rewrite is the confinement's (``history_migration.confine``), which keeps
messages, authors and dates; ``still_holds`` asks git, object by object, whether any string is
left (the objects are compressed, so a byte ``grep`` of ``history.git`` would prove nothing).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from reme_core.workspace.history import History
from reme_core.workspace.history_migration import GitBytes, confine, git_runner

FORGOTTEN = "(forgotten note)"
"""What a purged note's name becomes in the history's commit messages."""
_NULL = "0" * 40


def purge_history(
    history: History,
    paths: Sequence[str],
    *,
    blobs: Collection[str] = (),
    words: Collection[bytes] = (),
) -> int:
    """Rewrite the history without ``paths``; returns how many commits changed (0: it never
    held them). ``blobs``: other versions to take out (of a file that stays, which held the
    notes' text: ``blobs_holding``); ``words``: other strings to take out of the messages."""
    if not (history.git_dir / "HEAD").exists() or not paths:
        return 0
    names = set(paths)
    with history._lock:
        history.ensure()
        git = git_runner(history._base())
        refused = frozenset(_blobs_of(git, list(names)) | set(blobs))
        changed = confine(_scrubbing(git, names, words), names.__contains__, refused)
        _scrub_message_file(history, names)
    return changed


def still_holds(history: History, needles: Sequence[bytes]) -> bool:
    """Whether any object of the history (commits, trees, blobs, reachable or not) contains one
    of ``needles``, decompressed."""
    if not (history.git_dir / "HEAD").exists():
        return False
    git = git_runner(history._base())
    out = git("cat-file", "--batch-all-objects", "--batch", "--unordered")
    return any(needle in out for needle in needles if needle)


def blobs_holding(history: History, paths: Sequence[str], needles: Sequence[bytes]) -> set[str]:
    """The versions of ``paths`` in the history that contain one of ``needles``."""
    if not (history.git_dir / "HEAD").exists() or not paths or not needles:
        return set()
    with history._lock:
        git = git_runner(history._base())
        found = set()
        for blob in sorted(_blobs_of(git, list(paths))):
            data = git("cat-file", "blob", blob)
            if any(needle in data for needle in needles if needle):
                found.add(blob)
    return found


def _blobs_of(git: GitBytes, paths: list[str]) -> set[str]:
    """Every blob any commit held at ``paths``."""
    if not git("rev-parse", "--verify", "-q", "HEAD", check=False).strip():
        return set()
    raw = git("log", "--all", "--format=", "--raw", "--no-abbrev", "--no-renames", "--", *paths)
    blobs = set()
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith(":"):
            fields = line.split("\t", 1)[0].split()
            blobs.update(sha for sha in fields[2:4] if sha != _NULL)
    return blobs


def _scrubbing(git: GitBytes, names: set[str], more: Collection[bytes] = ()) -> GitBytes:
    """``git``, but a commit read to be recommitted has the notes' names (and ``more``) taken
    out of its message (``confine`` recommits every commit from ``cat-file commit``)."""
    named = {n.encode("utf-8") for n in {*names, *(n.removesuffix(".md") for n in names)}}
    words = sorted({*named, *(w for w in more if w)}, key=len, reverse=True)

    def run(*args: str, **kwargs: object) -> bytes:
        out = git(*args, **kwargs)  # type: ignore[arg-type]
        if args[:2] != ("cat-file", "commit"):
            return out
        headers, sep, message = out.partition(b"\n\n")
        for word in words:
            message = message.replace(word, FORGOTTEN.encode("utf-8"))
        return headers + sep + message

    return run


def _scrub_message_file(history: History, names: set[str]) -> None:
    """git leaves the last commit's message in ``COMMIT_EDITMSG``; empty it if it names one."""
    path = history.git_dir / "COMMIT_EDITMSG"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    if any(name.removesuffix(".md") in text for name in names):
        path.write_text("", encoding="utf-8")
