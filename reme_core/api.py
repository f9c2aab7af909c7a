"""The stable surface of reme for plugins and embedders: import reme from here, and only here.

Every name in ``__all__`` keeps its name and meaning across releases; where it is defined inside
``reme_core`` is not part of the promise and may move. Anything not listed here (and not in
``reme_core.testing``, the conformance kit) is internal. ``docs/plugins.md`` ("The stable API:
reme_core.api") lists the names by group.

Names are imported on first use (module ``__getattr__``, PEP 562): the surface spans the whole
core, benchmark framework included, and importing all of it up front would cost a plugin that
needs only ``hookimpl`` and ``Chunk`` about a second at every ``reme`` start (measured: 1.0 s
to import every name; ``python -X importtime -c "import reme_core.api"``: 8 ms).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # For type checkers and editors; kept equal to ``_EXPORTS`` by tests/core/test_public_api.py.
    from reme_core.bench import (
        LME_KS,
        RESULT_JSON,
        RESULT_MARKDOWN,
        BenchUsage,
        Manifest,
        RunResult,
        build_manifest,
        checkpoint,
        current_command,
        dataset_file,
        dedupe,
        diff_manifests,
        evidence_recall,
        metric_table,
        named_configs,
        resolve_config,
        retrieval_metrics,
        run_items,
        select_items,
        side_by_side,
        with_llm_cache,
        write_json,
    )
    from reme_core.bench.vector_cache import harvest as harvest_vector_cache
    from reme_core.bench.vector_cache import seed as seed_vector_cache
    from reme_core.cli.options import emit, workspace_options
    from reme_core.client import RemoteReme
    from reme_core.components import (
        AgentResult,
        AgentTask,
        AgentToolCall,
        AgentWrapper,
        Chunker,
        Component,
        ComponentContext,
        ComponentSettings,
        Embedding,
        FileStore,
        Graph,
        KeywordIndex,
        Llm,
        LlmUsage,
        ModelT,
        Step,
        TagIndex,
        TextSource,
        Tokenizer,
        VectorRecord,
        estimate_tokens,
        required_settings,
        settings_path,
    )
    from reme_core.errors import (
        ConfigError,
        ConflictError,
        DuplicateComponentError,
        EditError,
        EmbeddingError,
        FrontmatterError,
        InvalidPathError,
        LlmError,
        NotFoundError,
        PathOutsideWorkspaceError,
        PluginError,
        RemeError,
        SearchError,
        StoreBusyError,
        UnknownComponentError,
        UnsupportedFileError,
        WorkspaceError,
    )
    from reme_core.hookspecs import hookimpl
    from reme_core.index.catalog import Catalog
    from reme_core.index.sqlite_pool import ReadPool
    from reme_core.index.sqlite_pool import compact as compact_sqlite
    from reme_core.light import AgentContext, SessionMemory, format_hits
    from reme_core.pipelines.budget import batches, cut, fit, head_lines, joined_tokens
    from reme_core.pipelines.engine import PipelineResult
    from reme_core.pipelines.locks import LockTimeout, named_lock
    from reme_core.pipelines.prompts import LANGUAGES as PROMPT_LANGUAGES
    from reme_core.pipelines.prompts import Prompts, load_prompts
    from reme_core.pipelines.run import PipelineRun
    from reme_core.plugins import Plugins, load_plugins
    from reme_core.redact import redact
    from reme_core.review import Proposal, ReviewApi, Reviewer
    from reme_core.runtime import Reme
    from reme_core.schema import Chunk, Link, LinkedNote, SearchFilters, SearchHit, SearchResponse
    from reme_core.schema.chunk import chunk_path
    from reme_core.schema.proactive import ProactiveError, ProactiveTopic, ProactiveTopics, topic_id
    from reme_core.schema.tags import normalise_tag
    from reme_core.search.engine import MAX_LIMIT as MAX_SEARCH_LIMIT
    from reme_core.search.record_filters import (
        date_ok,
        expand_tags,
        query_tags,
        tags_ok,
    )
    from reme_core.search.record_filters import matches as record_matches
    from reme_core.service.lifecycle import note_expired
    from reme_core.service.operations import (
        DeleteInput,
        EditInput,
        FrontmatterInput,
        ListInput,
        MoveInput,
        PathInput,
        ReadInput,
        WriteInput,
    )
    from reme_core.service.operations import Input as OperationInput
    from reme_core.settings import (
        ComponentSelection,
        Settings,
        resolve_component,
        validate_components,
    )
    from reme_core.workspace import (
        FileTools,
        Journal,
        Note,
        WorkspacePaths,
        atomic_write,
        content_hash,
        dump_note,
        find_state_dir,
        init_workspace,
        normalise_tags,
        note_date,
        parse_frontmatter,
        parse_links,
        parse_note,
        path_matches,
        split_frontmatter,
        split_lines,
        update_frontmatter,
    )
    from reme_core.workspace.edits import NoteSnapshot
    from reme_core.workspace.wikilinks import LinkResolver


__all__ = [
    "LME_KS",
    "MAX_SEARCH_LIMIT",
    "PROMPT_LANGUAGES",
    "RESULT_JSON",
    "RESULT_MARKDOWN",
    "AgentContext",
    "AgentResult",
    "AgentTask",
    "AgentToolCall",
    "AgentWrapper",
    "BenchUsage",
    "Catalog",
    "Chunk",
    "Chunker",
    "Component",
    "ComponentContext",
    "ComponentSelection",
    "ComponentSettings",
    "ConfigError",
    "ConflictError",
    "DeleteInput",
    "DuplicateComponentError",
    "EditError",
    "EditInput",
    "Embedding",
    "EmbeddingError",
    "FileStore",
    "FileTools",
    "FrontmatterError",
    "FrontmatterInput",
    "Graph",
    "InvalidPathError",
    "Journal",
    "KeywordIndex",
    "Link",
    "LinkResolver",
    "LinkedNote",
    "ListInput",
    "Llm",
    "LlmError",
    "LlmUsage",
    "LockTimeout",
    "Manifest",
    "ModelT",
    "MoveInput",
    "NotFoundError",
    "Note",
    "NoteSnapshot",
    "OperationInput",
    "PathInput",
    "PathOutsideWorkspaceError",
    "PipelineResult",
    "PipelineRun",
    "PluginError",
    "Plugins",
    "ProactiveError",
    "ProactiveTopic",
    "ProactiveTopics",
    "Prompts",
    "Proposal",
    "ReadInput",
    "ReadPool",
    "Reme",
    "RemeError",
    "RemoteReme",
    "ReviewApi",
    "Reviewer",
    "RunResult",
    "SearchError",
    "SearchFilters",
    "SearchHit",
    "SearchResponse",
    "SessionMemory",
    "Settings",
    "Step",
    "StoreBusyError",
    "TagIndex",
    "TextSource",
    "Tokenizer",
    "UnknownComponentError",
    "UnsupportedFileError",
    "VectorRecord",
    "WorkspaceError",
    "WorkspacePaths",
    "WriteInput",
    "atomic_write",
    "batches",
    "build_manifest",
    "catch_up",
    "checkpoint",
    "chunk_path",
    "compact_sqlite",
    "content_hash",
    "current_command",
    "cut",
    "dataset_file",
    "date_ok",
    "dedupe",
    "diff_manifests",
    "dump_note",
    "emit",
    "estimate_tokens",
    "evidence_recall",
    "expand_tags",
    "find_state_dir",
    "fit",
    "format_hits",
    "harvest_vector_cache",
    "head_lines",
    "hookimpl",
    "init_workspace",
    "joined_tokens",
    "load_plugins",
    "load_prompts",
    "metric_table",
    "named_configs",
    "named_lock",
    "normalise_tag",
    "normalise_tags",
    "note_date",
    "note_expired",
    "parse_frontmatter",
    "parse_links",
    "parse_note",
    "path_matches",
    "query_tags",
    "record_matches",
    "redact",
    "required_settings",
    "resolve_component",
    "resolve_config",
    "retrieval_metrics",
    "run_items",
    "seed_vector_cache",
    "select_items",
    "settings_path",
    "side_by_side",
    "split_frontmatter",
    "split_lines",
    "tags_ok",
    "topic_id",
    "update_frontmatter",
    "validate_components",
    "with_llm_cache",
    "workspace_options",
    "write_json",
]

# Where each public name lives now: module -> its names, ``public=attribute`` where the public name
# differs from the name inside the module (a bare ``seed`` or ``compact`` says too little here).
_SOURCES: dict[str, str] = {
    # Plugin hooks.
    "reme_core.hookspecs": "hookimpl",
    # The component contract: the base class each hookspec registers, its settings and context.
    "reme_core.components": (
        "AgentResult AgentTask AgentToolCall AgentWrapper Chunker Component ComponentContext "
        "ComponentSettings Embedding FileStore Graph KeywordIndex Llm LlmUsage ModelT Step "
        "TagIndex TextSource Tokenizer VectorRecord estimate_tokens required_settings "
        "settings_path"
    ),
    # Data models components receive and return.
    "reme_core.schema": "Chunk Link LinkedNote SearchFilters SearchHit SearchResponse",
    "reme_core.schema.chunk": "chunk_path",
    "reme_core.schema.proactive": "ProactiveError ProactiveTopic ProactiveTopics topic_id",
    "reme_core.schema.tags": "normalise_tag",
    # The exact meaning of SearchFilters for one stored record, which a vector store is held to.
    "reme_core.search.record_filters": (
        "date_ok expand_tags query_tags tags_ok record_matches=matches"
    ),
    "reme_core.search.engine": "MAX_SEARCH_LIMIT=MAX_LIMIT",
    # Errors.
    "reme_core.errors": (
        "ConfigError ConflictError DuplicateComponentError EditError EmbeddingError "
        "FrontmatterError InvalidPathError LlmError NotFoundError PathOutsideWorkspaceError "
        "PluginError RemeError SearchError StoreBusyError UnknownComponentError "
        "UnsupportedFileError WorkspaceError"
    ),
    "reme_core.pipelines.locks": "LockTimeout named_lock",
    # Opening a workspace, in process or through a running server; settings and plugins.
    "reme_core.runtime": "Reme",
    "reme_core.client": "RemoteReme",
    "reme_core.settings": "ComponentSelection Settings resolve_component validate_components",
    "reme_core.plugins": "Plugins load_plugins",
    # What a pipeline step works with.
    "reme_core.pipelines.run": "PipelineRun",
    "reme_core.pipelines.engine": "PipelineResult",
    "reme_core.pipelines.prompts": "Prompts load_prompts PROMPT_LANGUAGES=LANGUAGES",
    "reme_core.pipelines.budget": "batches cut fit head_lines joined_tokens",
    "reme_core.review": "Proposal ReviewApi Reviewer",
    "reme_core.index.catalog": "Catalog",
    "reme_core.redact": "redact",
    # Notes and files in the workspace.
    "reme_core.workspace": (
        "FileTools Journal Note WorkspacePaths atomic_write content_hash dump_note find_state_dir "
        "init_workspace normalise_tags note_date parse_frontmatter parse_links parse_note "
        "path_matches split_frontmatter split_lines update_frontmatter"
    ),
    "reme_core.workspace.edits": "NoteSnapshot",
    "reme_core.workspace.wikilinks": "LinkResolver",
    # Whether a note counts as archived today though it does not say so (``expires``, policy).
    "reme_core.service.lifecycle": "note_expired",
    # The arguments of the file operations, as an agent wrapper's tools take them.
    "reme_core.service.operations": (
        "DeleteInput EditInput FrontmatterInput ListInput MoveInput PathInput ReadInput "
        "WriteInput OperationInput=Input"
    ),
    # Storage helpers for backends that keep SQLite files.
    "reme_core.index.sqlite_pool": "ReadPool compact_sqlite=compact",
    # The agent-side context API, for an agent loop that embeds reme.
    "reme_core.light": "AgentContext SessionMemory format_hits",
    # CLI commands a plugin registers (``register_commands``).
    "reme_core.cli.options": "emit workspace_options",
    # The benchmark framework (see ``reme_core.bench``'s docstring for a run command's steps).
    "reme_core.bench": (
        "LME_KS RESULT_JSON RESULT_MARKDOWN BenchUsage Manifest RunResult build_manifest "
        "checkpoint current_command dataset_file dedupe diff_manifests evidence_recall "
        "metric_table named_configs resolve_config retrieval_metrics run_items select_items "
        "side_by_side with_llm_cache write_json"
    ),
    "reme_core.bench.vector_cache": "harvest_vector_cache=harvest seed_vector_cache=seed",
}
_EXPORTS: dict[str, tuple[str, str]] = {
    public: (module, attr or public)
    for module, names in _SOURCES.items()
    for public, _, attr in (entry.partition("=") for entry in names.split())
}


def catch_up(reme: Reme | RemoteReme) -> None:
    """Index edits made outside reme (embedding them too when few), as ``reme search`` does first.

    A command that reads the workspace calls it before it starts; against a running server (or
    beside one) it does nothing, since the server's watcher keeps the index current.
    """
    from reme_core.cli.search_cmd import sync_before_search

    sync_before_search(reme)  # type: ignore[arg-type]  # typed for Reme; returns at once for a RemoteReme


def __getattr__(name: str) -> Any:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(import_module(module), attr)
    globals()[name] = value  # the next lookup skips __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
