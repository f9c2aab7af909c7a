"""Rewrite a history written before it was confined, so no commit holds refused content.

Histories made before the confinement staged the whole work tree (``git add --all .``): a hard
link to ``.reme/token``, a ``.env``, ``private/credentials.json``, binaries. Hiding those names
when showing is not enough (the objects stay readable with git, and a later change could show
them again), so the history is rewritten once: every commit keeps only the entries whose names
the history may hold and whose blobs pass the note tools' checks, with their text redacted;
messages, authors and dates are kept; the branch moves to the new tip, then the reflogs are
expired and ``git gc --prune=now`` drops the old objects. Done once per history, recorded by
``reme.confined`` in its git config (a history made since is marked confined at creation).
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence

from reme_core.redact import redact
from reme_core.workspace.history_entries import HistoryError
from reme_core.workspace.history_staging import may_hold, servable_content

CONFINED_KEY = "reme.confined"
"""The history's git config key saying it holds only confined, redacted content."""

GitBytes = Callable[..., bytes]
"""Runs one git command on the history: ``(*args, stdin=bytes, env=dict) -> stdout``."""


def confine(
    git: GitBytes, refused_path: Callable[[str], bool], refused_blobs: frozenset[str]
) -> int:
    """Rewrite the history's branch so no commit holds a refused or unredacted file; return
    how many commits changed (0: the history was already clean, and is left as it was).

    A blob alone cannot say it came through a hard link to ``.reme/token``, so two more
    filters: ``refused_path`` (a name the work tree holds now as a link the tools refuse:
    every version of it goes) and ``refused_blobs`` (the ids of the files in ``.reme/``: a
    copy of one, under any name, goes)."""
    head = git("symbolic-ref", "-q", "HEAD", check=False).decode().strip()
    if not head or not git("rev-parse", "--verify", "-q", head, check=False).strip():
        return 0
    commits = git("rev-list", "--reverse", "--topo-order", head).decode().split()
    refused_path = functools.cache(refused_path)  # asked once per name, not once per commit
    blobs: dict[str, str | None] = {}  # old blob -> the blob to keep (None: drop the entry)
    mapped: dict[str, str] = {}
    changed = 0
    with tempfile.TemporaryDirectory(prefix="reme-history-") as scratch:
        env = {**os.environ, "GIT_INDEX_FILE": os.path.join(scratch, "index")}
        previous = None  # the commit whose confined tree the scratch index holds
        for commit in commits:
            parents = _parents(git, commit)
            # Most histories are a line: from the parent's tree, only what the commit changed
            # needs judging (a full listing per commit made a 100-commit rewrite take 20 s).
            since = previous if parents == [previous] else None
            keep = _Keep(git, blobs, refused_path, refused_blobs)
            tree = _confined_tree(git, commit, since, keep, env)
            new = _recommit(git, commit, tree, [mapped[p] for p in parents])
            mapped[commit] = new
            changed += new != commit
            previous = commit
    if not changed:
        return 0
    tip = commits[-1]
    git("update-ref", "-m", "reme: confine the history", head, mapped[tip], tip)
    # Any other ref (ORIG_HEAD after an aborted revert, say) would keep the old objects alive.
    for ref in git("for-each-ref", "--format=%(refname)").decode().split():
        if ref != head:
            git("update-ref", "-d", ref, check=False)
    for pseudo in ("ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "REVERT_HEAD"):
        git("update-ref", "-d", pseudo, check=False)
    git("read-tree", head)  # the index follows the branch; the work tree is never touched
    git("reflog", "expire", "--expire=now", "--all")
    git("gc", "--prune=now", "--quiet")
    return changed


def _parents(git: GitBytes, commit: str) -> list[str]:
    return git("rev-list", "--parents", "-n", "1", commit).decode().split()[1:]


_REMOVE = "0 " + "0" * 40
"""An ``--index-info`` line with this mode and id removes the path."""


class _Keep:
    """Which tree entries the history keeps, and as which blob."""

    def __init__(
        self,
        git: GitBytes,
        blobs: dict[str, str | None],
        refused_path: Callable[[str], bool],
        refused_blobs: frozenset[str],
    ):
        self.git, self.blobs = git, blobs
        self.refused_path, self.refused_blobs = refused_path, refused_blobs

    def wanted(self, mode: str, sha: str, raw_path: bytes) -> str | None:
        """The path of an entry whose name and kind the history may hold, else None."""
        try:
            path = raw_path.decode("utf-8")
        except UnicodeDecodeError:
            return None  # not a name the note tools accept
        # Only regular files: a symlink (120000) or a submodule is never served.
        if mode not in ("100644", "100755") or sha in self.refused_blobs:
            return None
        if not may_hold(path) or self.refused_path(path):
            return None
        return path

    def lines(self, entries: list[tuple[str, str, str]], removed: list[str]) -> list[bytes]:
        """``--index-info`` lines: each kept entry with its (redacted) blob, the rest removed."""
        _judge(self.git, [sha for _, sha, _ in entries if sha not in self.blobs], self.blobs)
        out = [f"{_REMOVE}\t{path}".encode() for path in removed]
        for mode, sha, path in entries:
            kept = self.blobs[sha]
            out.append(f"{mode} {kept}\t{path}".encode() if kept else f"{_REMOVE}\t{path}".encode())
        return out


def _confined_tree(git: GitBytes, commit: str, since: str | None, keep: _Keep, env: dict) -> str:
    """The tree of ``commit`` with only the entries the history may hold, texts redacted;
    with ``since`` (its parent, whose confined tree the index holds), from the changes only."""
    entries: list[tuple[str, str, str]] = []  # (mode, old blob, path)
    removed: list[str] = []
    if since is None:
        git("read-tree", "--empty", env=env)
        for item in git("ls-tree", "-r", "-z", "--full-tree", commit).split(b"\0"):
            if not item:
                continue
            meta, _, raw_path = item.partition(b"\t")
            mode, kind, sha = meta.decode().split()
            path = keep.wanted(mode, sha, raw_path) if kind == "blob" else None
            if path is not None:
                entries.append((mode, sha, path))
    else:
        raw = git("diff-tree", "-r", "-z", "--no-renames", "--raw", since, commit).split(b"\0")
        for meta, raw_path in zip(raw[0::2], raw[1::2], strict=False):
            if not meta.startswith(b":"):
                continue
            _, mode, _, sha, status = meta.decode().split()
            path = None if status == "D" else keep.wanted(mode, sha, raw_path)
            if path is not None:
                entries.append((mode, sha, path))
            elif _decodes(raw_path):  # gone, or now refused: out of the index
                removed.append(raw_path.decode("utf-8"))
    lines = keep.lines(entries, removed)
    if lines:
        git("update-index", "-z", "--index-info", stdin=b"\0".join(lines) + b"\0", env=env)
    return git("write-tree", env=env).decode().strip()


def _decodes(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False  # never staged: nothing to remove
    return True


def _judge(git: GitBytes, shas: Sequence[str], blobs: dict[str, str | None]) -> None:
    """Decide, for each new blob, what the history keeps: itself, a redacted copy, or none."""
    if not shas:
        return
    unique = list(dict.fromkeys(shas))
    out = git("cat-file", "--batch", stdin=("\n".join(unique) + "\n").encode())
    position = 0
    for sha in unique:
        header_end = out.index(b"\n", position)
        _, _, size = out[position:header_end].decode().split()
        start = header_end + 1
        data = out[start : start + int(size)]
        position = start + int(size) + 1
        text = servable_content(data)
        if text is None:
            blobs[sha] = None
            continue
        redacted, counts = redact(text)
        if not counts or redacted == text:
            blobs[sha] = sha
        else:
            written = git("hash-object", "-w", "--stdin", stdin=redacted.encode("utf-8"))
            blobs[sha] = written.decode().strip()


def _recommit(git: GitBytes, commit: str, tree: str, parents: list[str]) -> str:
    """A commit like ``commit`` (message, author, committer, dates) with ``tree`` and
    ``parents``; the same id as ``commit`` when nothing differs."""
    raw = git("cat-file", "commit", commit)
    headers, _, message = raw.partition(b"\n\n")
    env = dict(os.environ)
    for line in headers.decode("utf-8", "replace").splitlines():
        role, _, value = line.partition(" ")
        if role not in ("author", "committer"):
            continue
        name, _, rest = value.partition(" <")
        email, _, date = rest.partition("> ")
        prefix = "GIT_AUTHOR_" if role == "author" else "GIT_COMMITTER_"
        env[prefix + "NAME"], env[prefix + "EMAIL"], env[prefix + "DATE"] = name, email, date
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return git(*args, stdin=message, env=env).decode().strip()


def git_runner(base: list[str]) -> GitBytes:
    """A ``GitBytes`` running ``base + args`` (the history's git command with its dirs)."""

    def run(
        *args: str, stdin: bytes | None = None, env: dict | None = None, check: bool = True
    ) -> bytes:
        done = subprocess.run(
            [*base, *args], input=stdin, capture_output=True, env=env, check=False
        )
        if check and done.returncode != 0:
            raise HistoryError(
                f"git {args[0]} failed while confining the history: "
                f"{done.stderr.decode(errors='replace').strip()}"
            )
        return done.stdout

    return run
