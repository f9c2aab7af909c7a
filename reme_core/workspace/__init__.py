"""The workspace: confined paths, notes and frontmatter, wikilinks, the journal, file tools."""

from reme_core.workspace.frontmatter import (
    dump_note,
    parse_frontmatter,
    split_frontmatter,
    update_frontmatter,
)
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.journal import Journal, JournalEntry
from reme_core.workspace.layout import find_state_dir, init_workspace
from reme_core.workspace.notes import Note, normalise_tags, note_date, parse_note
from reme_core.workspace.paths import WorkspacePaths, is_internal, path_matches
from reme_core.workspace.results import (
    DeleteResult,
    EditResult,
    FrontmatterResult,
    LsEntry,
    LsResult,
    MoveResult,
    ReadResult,
    StatResult,
    WriteResult,
)
from reme_core.workspace.tools import TEXT_SUFFIXES, FileTools, atomic_write, split_lines
from reme_core.workspace.wikilinks import LinkResolver, ParsedLink, parse_links, rewrite_links

__all__ = [
    "TEXT_SUFFIXES",
    "DeleteResult",
    "EditResult",
    "FileTools",
    "FrontmatterResult",
    "Journal",
    "JournalEntry",
    "LinkResolver",
    "LsEntry",
    "LsResult",
    "MoveResult",
    "Note",
    "ParsedLink",
    "ReadResult",
    "StatResult",
    "WorkspacePaths",
    "WriteResult",
    "atomic_write",
    "content_hash",
    "dump_note",
    "find_state_dir",
    "init_workspace",
    "is_internal",
    "normalise_tags",
    "note_date",
    "parse_frontmatter",
    "parse_links",
    "parse_note",
    "path_matches",
    "rewrite_links",
    "split_frontmatter",
    "split_lines",
    "update_frontmatter",
]
