"""The note operations: search, read, list, stat, the link graph, and the writes (write, edit,
frontmatter, move, delete) through the workspace's confined file tools."""

from __future__ import annotations

import datetime as dt
from collections import deque
from typing import Any, Literal

from pydantic import Field

from reme_core.errors import ConfigError
from reme_core.pipelines.search import SearchRequest
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_core.service.framework import Input, Operation

# -- read ----------------------------------------------------------------------------------


class SearchInput(Input):
    query: str = Field(min_length=1)
    limit: int | None = Field(None, ge=1, le=200)
    min_score: float | None = Field(None, ge=0, le=1)
    expand: bool | None = None
    paths: list[str] | None = None
    tags: list[str] | None = None
    tag_mode: Literal["any", "all"] = "any"
    since: str | None = None
    until: str | None = None
    statuses: list[Literal["active", "archived", "superseded"]] | None = None
    as_of: dt.date | None = None
    """The day the question is asked, YYYY-MM-DD: dates it names ("last Saturday") count from
    it when ``search.date_boost`` is on (default: today)."""

    def resolved(self, reme: Reme) -> SearchRequest:
        """The checked request ``Reme.serve_search`` takes: the fields typed straight into the
        engine's filters (no dump and rebuild; an unset list means "no restriction", unset
        statuses the workspace's ``search.statuses``) and the query checked (not blank)."""
        statuses = self.statuses if self.statuses is not None else reme.settings.search.statuses
        filters = SearchFilters(
            paths=self.paths or [],
            tags=self.tags or [],
            tag_mode=self.tag_mode,
            since=self.since,
            until=self.until,
            statuses=list(statuses),
        )
        return SearchRequest(
            self.query, self.limit, self.min_score, filters, self.expand, self.as_of
        )


class ReadInput(Input):
    path: str
    start_line: int = Field(1, ge=1)
    end_line: int | None = Field(None, ge=1)


class PathInput(Input):
    path: str


class ListInput(Input):
    path: str = ""
    recursive: bool = False


class TraverseInput(Input):
    path: str
    depth: int = Field(1, ge=1, le=3)
    """Hops from ``path``; links are followed both ways."""
    max_nodes: int = Field(50, ge=1, le=500)


def _traverse(reme: Reme, given: TraverseInput) -> dict[str, Any]:
    """Bounded breadth-first walk over the link graph (outbound and inbound links)."""
    if reme.graph is None:
        raise ConfigError("components.graph is null: link tracking is off")
    start = reme.files.stat(given.path).path  # confined, and the path must exist
    seen = {start: 0}
    edges: list[dict[str, Any]] = []
    queue = deque([start])
    truncated = False
    while queue:
        node = queue.popleft()
        if seen[node] >= given.depth:
            continue
        links = reme.links(node)
        for direction, found in (("outbound", links["outbound"]), ("inbound", links["inbound"])):
            for link in found:
                other = link.target if direction == "outbound" else link.source
                if other is None:
                    continue  # a dangling link: reported by `links`, not walked
                edges.append({"from": link.source, "to": link.target, "raw": link.raw})
                if other not in seen:
                    if len(seen) >= given.max_nodes:
                        truncated = True
                        continue
                    seen[other] = seen[node] + 1
                    queue.append(other)
    unique = {(e["from"], e["to"], e["raw"]): e for e in edges}
    return {
        "start": start,
        "nodes": [{"path": p, "depth": d} for p, d in seen.items()],
        "edges": list(unique.values()),
        "truncated": truncated,
    }


def _links(reme: Reme, given: PathInput) -> dict[str, Any]:
    path = reme.files.stat(given.path).path  # confined, and the path must exist
    return {"path": path, **reme.links(path)}


# -- write ---------------------------------------------------------------------------------


class WriteInput(Input):
    path: str
    content: str
    expected_hash: str | None = None
    create_only: bool = False
    """Refuse (conflict) when the file already exists: a new note never replaces one."""


class EditInput(Input):
    path: str
    old: str = Field(min_length=1)
    new: str
    expected_count: int = Field(1, ge=1)
    expected_hash: str | None = None


class FrontmatterInput(Input):
    path: str
    set: dict[str, Any] = Field(default_factory=dict)
    remove: list[str] = Field(default_factory=list)
    expected_hash: str | None = None


class MoveInput(Input):
    src: str
    dst: str
    expected_hash: str | None = None


class DeleteInput(Input):
    path: str
    expected_hash: str | None = None


NOTE_OPERATIONS: list[Operation] = [
    Operation(
        "search",
        "read",
        "Hybrid search over the notes (BM25 + vectors, filters, one hop of links).",
        SearchInput,
        Reme.serve_search,  # the input resolves to its request: no adapter frame in between
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "read",
        "read",
        "Read a note or text file, or a line range of it.",
        ReadInput,
        lambda r, i: r.files.read(i.path, i.start_line, i.end_line),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "list",
        "read",
        "List a folder of the workspace.",
        ListInput,
        lambda r, i: r.files.ls(i.path, i.recursive),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "stat",
        "read",
        "A file's size, hash, frontmatter and dates.",
        PathInput,
        lambda r, i: r.files.stat(i.path),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "traverse",
        "read",
        "Walk the link graph from a note, both directions, a bounded number of hops.",
        TraverseInput,
        _traverse,
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "links",
        "read",
        "A note's links both ways: outbound (resolved, missing or ambiguous) and inbound.",
        PathInput,
        _links,
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "write",
        "write",
        "Create or replace a Markdown note atomically (expected_hash guards lost updates).",
        WriteInput,
        lambda r, i: r.files.write(
            i.path, i.content, expected_hash=i.expected_hash, create_only=i.create_only
        ),
        idempotent=True,
    ),
    Operation(
        "edit",
        "write",
        "Replace an exact span of a note.",
        EditInput,
        lambda r, i: r.files.edit(
            i.path, i.old, i.new, expected_count=i.expected_count, expected_hash=i.expected_hash
        ),
    ),
    Operation(
        "frontmatter",
        "write",
        "Set or remove frontmatter keys, keeping everything else as written.",
        FrontmatterInput,
        lambda r, i: r.files.update_frontmatter(
            i.path, i.set, i.remove, expected_hash=i.expected_hash
        ),
        idempotent=True,
    ),
    Operation(
        "move",
        "admin",
        "Move a note and rewrite the links that point at it.",
        MoveInput,
        lambda r, i: r.files.move(i.src, i.dst, expected_hash=i.expected_hash),
        destructive=True,
    ),
    Operation(
        "delete",
        "admin",
        "Delete a note (reports notes whose links now dangle).",
        DeleteInput,
        lambda r, i: r.files.delete(i.path, expected_hash=i.expected_hash),
        destructive=True,
    ),
]
