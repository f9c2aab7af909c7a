"""Where records live: one folder per scope inside the digest buckets of DESIGN section 3.

    digest/personal/<user-slug>/<id>.md      personal memories of one user
    digest/procedure/<task-slug>/<id>.md     task experience
    digest/wiki/tools/<tool-slug>/<id>.md    usage guidance of one tool

The digest is where consolidated knowledge lives, so records are read, searched, linked and
offered to dream as integration candidates like any digest node, and kept in version history.
A folder is a search restriction only: two names can share a slug ("Alice" and "alice"), so
every read still checks the record's own frontmatter against the scope.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from reme_core.memory.models import MemoryScope, MemoryType, check_memory_id

BUCKETS: dict[MemoryType, str] = {
    "personal": "digest/personal",
    "procedural": "digest/procedure",
    "tool": "digest/wiki/tools",
}
SLUG_CHARS = 60
_NOT_WORD = re.compile(r"[^\w]+")


def slug(name: str) -> str:
    """A folder name for ``name``: lowercase words joined by ``-`` (letters of any script kept);
    a name with no letters or digits gets a short hash instead."""
    text = unicodedata.normalize("NFKC", name).lower()
    text = _NOT_WORD.sub("-", text).strip("-_")[:SLUG_CHARS].strip("-_")
    if not text:
        text = "x-" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    return text


def scope_folder(scope: MemoryScope) -> str:
    return f"{BUCKETS[scope.memory_type]}/{slug(scope.value)}"


def record_path(scope: MemoryScope, memory_id: str) -> str:
    return f"{scope_folder(scope)}/{check_memory_id(memory_id)}.md"
