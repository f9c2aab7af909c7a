"""Which notes link to a note, and how their links change when it moves.

``FileTools.move`` plans every rewrite before it touches the disk (so a rewrite outside the
call's confinement refuses the whole move); ``FileTools.delete`` reports the notes whose links
now dangle. Without an index (``inbound_lookup``) the inbound notes are found by reading them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from reme_core.errors import WorkspaceError
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.paths import WorkspacePaths
from reme_core.workspace.wikilinks import LinkResolver, rewrite_links

Load = Callable[[str, Path], tuple[bytes, str]]
"""Reads a file as the file tools do, ``(rel, absolute) -> (bytes, text)``, or raises a
``WorkspaceError`` (gone, binary, too big, not UTF-8)."""

RewritePlan = dict[str, tuple[Path, str, bytes]]
"""Note -> (its absolute path, its content hash before, its bytes with the links rewritten)."""


def scan_inbound(paths: WorkspacePaths, load: Load, rel: str, resolver: LinkResolver) -> list[str]:
    """The notes other than ``rel`` with a link that resolves to it, by reading every note."""
    sources: list[str] = []
    for source in paths.iter_files(suffixes=(".md",)):
        if source == rel:
            continue
        try:
            text = load(source, paths.root / source)[1]
        except WorkspaceError:
            continue
        if any(link.target == rel for link in resolver.links_for(source, text)):
            sources.append(source)
    return sources


def plan_rewrites(
    paths: WorkspacePaths,
    load: Load,
    inbound: Iterable[str],
    src_rel: str,
    dst_rel: str,
    resolver: LinkResolver,
) -> RewritePlan:
    """The new bytes of each ``inbound`` note whose links to ``src_rel`` change when it moves to
    ``dst_rel``; notes with nothing to rewrite are left out."""
    plan: RewritePlan = {}
    for source in sorted(set(inbound)):
        if source in (src_rel, dst_rel) or not source.lower().endswith(".md"):
            continue
        try:
            source_rel, source_abs = paths.resolve(source, for_write=True)
            data, text = load(source_rel, source_abs)
        except WorkspaceError:
            continue  # gone, binary or unreadable: it holds no links to rewrite
        new_text, count = rewrite_links(text, src_rel, dst_rel, resolver, source_rel)
        if count:
            plan[source_rel] = (source_abs, content_hash(data), new_text.encode("utf-8"))
    return plan
