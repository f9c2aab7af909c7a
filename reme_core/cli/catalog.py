"""The core commands by name: the module that defines each and the line ``reme --help`` shows.

``reme --help`` prints this table instead of importing thirteen command modules (and through them
the runtime, the index, the HTTP client and numpy); a command's module is imported only when that
command runs or shows its own help. ``tests/cli/test_lazy.py`` checks every line against the
command's own help, so an edited docstring fails a test until this table follows it.
"""

from __future__ import annotations

CORE_COMMANDS: dict[str, tuple[str, str]] = {
    "bench": (
        "reme_core.cli.bench_cmd",
        "Benchmarks: `reme bench <benchmark> run ...` (from benchmark plugins), `reproduce`.",
    ),
    "components": (
        "reme_core.cli.plugins_cmd",
        "List every registered implementation per component type, with its provider.",
    ),
    "config": ("reme_core.cli.config_cmd", "Inspect configuration."),
    "context": (
        "reme_core.cli.context_cmd",
        "Token budgets and compaction for agent messages (reme_core.light).",
    ),
    "delete": (
        "reme_core.cli.files_cmd",
        "Delete a note; prints the notes whose links to it now dangle.",
    ),
    "edit": ("reme_core.cli.files_cmd", "Find and replace exact text in a note."),
    "expire": (
        "reme_core.cli.forget_cmd",
        "Archive the notes whose expires: day has come, or whose folder's lifecycle.expire passed.",
    ),
    "forget": (
        "reme_core.cli.forget_cmd",
        "Forget a note (PATH) or the notes holding --query's words: archived by default.",
    ),
    "frontmatter": (
        "reme_core.cli.files_cmd",
        "Show a note's frontmatter, or change only the keys named (order, comments kept).",
    ),
    "history": (
        "reme_core.cli.run_cmd",
        "Recorded entries, newest first, each with its kind: run, memory, writes (notes written through reme between runs), snapshot (changes made outside reme), revert.",
    ),
    "index": (
        "reme_core.cli.index_cmd",
        "Index what changed since the last run (by content hash).",
    ),
    "init": (
        "reme_core.cli.index_cmd",
        "Lay out a workspace: daily/, digest/{personal,procedure,wiki}/, resource/, sessions/, .reme/.",
    ),
    "integrate": (
        "reme_core.cli.integrate_cmd",
        "Connect an agent host (claude-code, codex, hermes, openclaw) to this workspace: MCP, hooks, a write token.",
    ),
    "links": (
        "reme_core.cli.links_cmd",
        "Show the links of PATH (both ways), or with --unresolved the links that point nowhere.",
    ),
    "ls": (
        "reme_core.cli.files_cmd",
        "List files and folders (skips .reme, .git and hidden files).",
    ),
    "mcp": (
        "reme_core.cli.mcp_cmd",
        "Serve MCP over stdin/stdout (every tool: the client spawned this process, so it is the workspace's owner). stdout carries only the protocol; logs go to stderr.",
    ),
    "memory": (
        "reme_core.cli.memory_cmd",
        "Memory records: personal (--user), procedural (--task) and tool guidance (--tool).",
    ),
    "move": ("reme_core.cli.files_cmd", "Move a note and rewrite the links that point at it."),
    "optimize": (
        "reme_core.cli.index_cmd",
        "Compact incremental index state (the keyword index's delta segment).",
    ),
    "plugins": (
        "reme_core.cli.plugins_cmd",
        "List plugin distributions, their versions and the hooks they implement.",
    ),
    "proactive": (
        "reme_core.cli.proactive_cmd",
        "Follow-up topics from the daily notes: run the pipeline, list what to raise next.",
    ),
    "read": (
        "reme_core.cli.files_cmd",
        "Print a file (or a line range); long output stops at files.max_read_bytes with a hint.",
    ),
    "reindex": (
        "reme_core.cli.index_cmd",
        "Rebuild every projection from the notes (through the server when one is running).",
    ),
    "revert": (
        "reme_core.cli.run_cmd",
        "Undo one recorded run (as a new history entry) and reindex the files it changed.",
    ),
    "review": (
        "reme_core.cli.review_cmd",
        "Proposals of pipelines set to `review: queue`: list, show, approve, reject.",
    ),
    "run": ("reme_core.cli.run_cmd", "Run a configured pipeline (`pipelines.<NAME>.steps`), e.g."),
    "search": (
        "reme_core.cli.search_cmd",
        "Hybrid search of the workspace: keyword (BM25) and vector arms fused (search.fusion; scores 0..1, 1 = ranked first by every arm that ran); filters are applied inside each arm.",
    ),
    "serve": (
        "reme_core.cli.serve_cmd",
        "Serve the HTTP API, MCP (at /mcp), the watcher and the scheduler on one port.",
    ),
    "stat": (
        "reme_core.cli.files_cmd",
        "Size, hash, modification time, line count and frontmatter of a file.",
    ),
    "status": (
        "reme_core.cli.index_cmd",
        "Files, chunks, index state, unresolved links, files that could not be indexed, and the schedule: each job's last run (and its result) and next run.",
    ),
    "token": (
        "reme_core.cli.serve_cmd",
        "Bearer tokens for `reme serve`: each has a profile (read, write, admin) and workspaces.",
    ),
    "watch": (
        "reme_core.cli.index_cmd",
        "Index now, then keep indexing edits made outside reme until interrupted.",
    ),
    "write": ("reme_core.cli.files_cmd", "Create or overwrite a note atomically."),
}
"""name -> (the module that defines it, the first sentence of the command's help)."""
