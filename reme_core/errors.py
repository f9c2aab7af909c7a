"""Errors with messages a user can act on. Every error a command can raise derives from RemeError."""

from __future__ import annotations


class RemeError(Exception):
    """Base class: the CLI prints the message and exits non-zero, without a traceback."""

    exit_code = 1


class ConfigError(RemeError):
    """Invalid configuration: the message names the dotted path of the offending key."""

    exit_code = 2


class PluginError(RemeError):
    """A plugin could not be loaded, or registered something invalid."""


class DuplicateComponentError(PluginError):
    """Two providers registered the same name for one component type."""


class UnknownComponentError(PluginError, ConfigError):
    """Config names an implementation that no loaded plugin provides."""


class WorkspaceError(RemeError):
    """A workspace operation was refused: bad path, missing file, wrong file type."""


class PathOutsideWorkspaceError(WorkspaceError):
    """The path escapes the workspace (or the per-call allowed paths)."""


class InvalidPathError(WorkspaceError):
    """The path cannot name a file at all: too long, a name over the OS limit, control bytes."""

    http_status = 422


class NotFoundError(WorkspaceError):
    """The file does not exist."""


class UnsupportedFileError(WorkspaceError):
    """The file is binary, too large, or not a type the tool handles."""


class FrontmatterError(WorkspaceError):
    """The note's YAML frontmatter cannot be parsed or is not a mapping."""


class ConflictError(WorkspaceError):
    """The file changed since the caller read it (content hash mismatch)."""


class EditError(WorkspaceError):
    """A find/replace edit did not match the expected number of times."""


class SearchError(RemeError):
    """A search request cannot be honoured as asked (bad filter, unavailable arm)."""


class ArmUnavailable(RemeError):
    """A search arm cannot run now (model missing, store busy); search goes on without it and says
    so. Raised by the index layer (``VectorIndex.rank``), caught by the search engine."""


class StoreBusyError(RemeError):
    """The vector store is held by another writer (another process owns this workspace)."""


class EmbeddingError(RemeError):
    """The embedding model failed or returned something unusable (wrong dimension, NaN)."""


class LlmError(RemeError):
    """The language model failed (HTTP error, timeout, output that never validated)."""
