"""The proof of a purge (``reme forget --purge``): what a trace of a purged note is, and where one
is still found afterwards (``ForgetReport.remaining``; ``service.forget`` runs the purge).

A trace (``proof_needles``) is its path with and without ``.md``, its longer lines and
distinctive words (a code, an id: letters and digits; also lower-cased, as a keyword index stores
them, and JSON-escaped), its content hash and git blob id, its chunks' ids and the digests of
their embedded text (what a cached embedding or a vector is keyed by). ``traces`` reads the files
under ``.reme/``, the workspace and the history's objects byte by byte for them. A string that a
note still in the workspace holds too (its own path, a line it quotes, a link to the purged note)
is not a trace of this one and is not looked for; nor is the path without ``.md`` in the history,
where other notes' past versions may link to it (an unlinked digest's revertible entry).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field

from reme_core.index.purge import needles_held
from reme_core.runtime import Reme
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.history_purge import still_holds

MIN_LINE_CHARS = 20
"""A note's lines at least this long are what the proof looks for (shorter ones, a heading, a
date, are in many notes)."""
MAX_NEEDLES = 50
"""At most this many of each kind (lines, words, chunks) are looked for."""
MIN_WORD_CHARS = 8
_WORD = re.compile(r"[^\W_]+(?:[-_.][^\W_]+)*")
_HEX = re.compile(r"[0-9a-fA-F]+")


@dataclass
class Needles:
    """What no file should hold after a purge (see the module docstring)."""

    text: list[bytes] = field(default_factory=list)
    """The notes' paths, lines and distinctive words (and their variants)."""
    names: list[bytes] = field(default_factory=list)
    """The paths without ``.md`` (a wikilink's form): not looked for in the history."""
    ids: list[bytes] = field(default_factory=list)
    """Content hashes, git blob ids, chunk ids, embedded-text digests (hex and raw)."""

    @property
    def all(self) -> list[bytes]:
        return list(dict.fromkeys([*self.text, *self.names, *self.ids]))


def proof_needles(
    texts: dict[str, bytes],
    chunks: Sequence[tuple[str, str, str]],
    *,
    kept_digests: Collection[str] = (),
    kept_hashes: Collection[str] = (),
) -> Needles:
    """The traces of the notes ``texts`` (path -> bytes) with their ``chunks`` (the catalog's
    ``chunk_hashes``) that a purge must leave nowhere; digests and content hashes that other
    notes share (``kept_*``) are theirs too and are left out."""
    out = Needles()
    for rel, data in texts.items():
        out.text.append(rel.encode("utf-8"))
        stem = rel[:-3] if rel.lower().endswith(".md") else None
        if stem:
            out.names.append(stem.encode("utf-8"))
        text = data.decode("utf-8", "replace")
        lines = [ln.strip() for ln in text.splitlines() if len(ln.strip()) >= MIN_LINE_CHARS]
        words = [w for w in dict.fromkeys(_words(text)) if _distinctive(w)]
        for item in [*lines[:MAX_NEEDLES], *words[:MAX_NEEDLES]]:
            out.text += [v.encode("utf-8") for v in _variants(item, item in words)]
        digest = content_hash(data)
        if digest not in kept_hashes:  # an identical file elsewhere has the same ids
            blob = hashlib.sha1(b"blob %d\x00" % len(data) + data, usedforsecurity=False)
            out.ids += [digest.encode(), blob.hexdigest().encode()]
    for cid, _, digest in list(chunks)[:MAX_NEEDLES]:
        out.ids.append(cid.encode("utf-8"))
        if digest not in kept_digests:
            out.ids += [digest.encode(), bytes.fromhex(digest)]
    for kind in (out.text, out.names, out.ids):
        kind[:] = [n for n in dict.fromkeys(kind) if n]
    return out


def _words(text: str) -> Iterator[str]:
    for match in _WORD.finditer(text):
        whole = match.group()
        yield whole
        yield from re.split(r"[-_.]", whole)


def _distinctive(word: str) -> bool:
    """A code or an id (letters and digits, long enough, not a hex hash that git also prints):
    unlikely in any other file, unlike a plain word."""
    digits = sum(c.isdigit() for c in word)
    return (
        len(word) >= MIN_WORD_CHARS
        and digits >= 2
        and sum(c.isalpha() for c in word) >= 2
        and not _HEX.fullmatch(word)
    )


def _variants(item: str, word: bool) -> list[str]:
    """``item`` as written, JSON-escaped (a catalog's frontmatter, a proposal) and, for a word,
    lower-cased (a keyword index's vocabulary)."""
    out = [item, json.dumps(item)[1:-1], json.dumps(item, ensure_ascii=False)[1:-1]]
    if word:
        out.append(item.lower())
    return list(dict.fromkeys(out))


def traces(reme: Reme, needles: Needles) -> list[str]:
    """Where any of ``needles`` is still found: files under ``.reme/`` (byte by byte, the
    history's git store asked object by object instead), workspace files, the history; a
    string that a note of the workspace (or its path) holds too is not counted."""
    state = reme.state_dir
    hits = {
        f".reme/{name}": held
        for name, held in needles_held(state, needles.all, skip=[reme.history.git_dir]).items()
    }
    hits.update(needles_held(reme.root, needles.all, skip=[state, reme.root / ".git"]))
    in_history = [n for n in needles.all if n not in set(needles.names)]
    history = still_holds(reme.history, in_history)
    if not hits and not history:
        return []
    shared = _shared(reme, {n for held in hits.values() for n in held} | set(in_history))
    found = [where for where, held in hits.items() if held - shared]
    if history and still_holds(reme.history, [n for n in in_history if n not in shared]):
        found.append("history")
    return found


def _shared(reme: Reme, candidates: set[bytes]) -> set[bytes]:
    """The ``candidates`` that a file the index still holds (or its path) contains, compared
    without case."""
    if not candidates:
        return set()
    lowered = {n: n.lower() for n in candidates}
    paths = sorted(reme.catalog.hashes())
    corpus = ["\n".join(paths).encode("utf-8").lower()]
    shared: set[bytes] = set()
    for rel in paths:
        try:
            corpus.append((reme.root / rel).read_bytes().lower())
        except OSError:
            continue
    for needle, low in lowered.items():
        if any(low in text for text in corpus):
            shared.add(needle)
    return shared


def unshared(reme: Reme, needles: list[bytes]) -> list[bytes]:
    """The ``needles`` no note left in the workspace holds (those are the notes' own words)."""
    shared = _shared(reme, set(needles))
    return [n for n in needles if n not in shared]
