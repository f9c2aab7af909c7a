"""``Reme``: one open workspace with its configured components, file tools, indexer and searcher.

This is the Python API; the CLI (and later the server) are thin layers over it.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from reme_core.components import AgentResult, AgentTask, ComponentContext, Llm
from reme_core.errors import ConfigError, SearchError, WorkspaceError
from reme_core.index.catalog import Catalog
from reme_core.index.embedding_cache import EmbeddingCache
from reme_core.index.indexer import Indexer, IndexReport
from reme_core.index.vectors import Progress, VectorIndex
from reme_core.index.watcher import Watcher
from reme_core.memory.review import MEMORY_PIPELINE, MemoryReviewer
from reme_core.pipelines.engine import PipelineResult, run_pipeline
from reme_core.pipelines.search import (
    SEARCH_PIPELINE,
    SearchPipeline,
    SearchRequest,
    in_search_pipeline,
)
from reme_core.plugins import Plugins, load_plugins
from reme_core.review import ReviewApi, Reviewer
from reme_core.schema import Link, SearchFilters, SearchResponse
from reme_core.search.arms import KeywordArm, SearchArm, VectorArm
from reme_core.search.engine import Searcher
from reme_core.search.expiry import file_day, parse_policy
from reme_core.settings import (
    ComponentSelection,
    Settings,
    load_settings,
    resolve_component,
    validate_components,
)
from reme_core.workspace import FileTools, Journal, WorkspacePaths
from reme_core.workspace.history import History, RevertPlan

STATE_DIR = ".reme"
VectorMode = Literal["wait", "background", "skip"]


class Reme:
    """An open workspace. Use ``Reme.open(...)`` and close it (or use it as a context manager)."""

    def __init__(self, settings: Settings, plugins: Plugins):
        self.settings = settings
        self.plugins = plugins
        self.root = settings.workspace_path()
        if not self.root.is_dir():
            raise WorkspaceError(
                f"workspace {self.root} does not exist; create it with `reme init {self.root}`"
            )
        validate_components(settings, plugins)
        self.state_dir = self.root / STATE_DIR
        self.state_dir.mkdir(exist_ok=True)
        self.context = context = ComponentContext(
            workspace=self.root, state_dir=self.state_dir, plugins=plugins
        )
        components = settings.components
        if components.keyword_index is None:
            raise ConfigError(
                "components.keyword_index: search needs a keyword index (default bm25s)"
            )
        self.keyword = self._build(
            "keyword_index", components.keyword_index, "components.keyword_index", context
        )
        self.graph = self._build("graph", components.graph, "components.graph", context)
        self.tags = self._build("tag_index", components.tag_index, "components.tag_index", context)
        self.chunkers = {
            suffix.lower(): self._build(
                "chunker", selection, f"components.chunkers[{suffix}]", context
            )
            for suffix, selection in components.chunkers.items()
        }
        self.paths = WorkspacePaths(self.root)
        self.catalog = Catalog(self.state_dir / "catalog.sqlite3")
        self.indexer = Indexer(
            self.paths,
            self.catalog,
            chunkers=self.chunkers,
            keyword=self.keyword,
            graph=self.graph,
            tags=self.tags,
            exclude=settings.index.exclude,
            max_file_bytes=settings.index.max_file_bytes,
        )
        self.journal = Journal(self.state_dir)
        self.history = History(self.root, self.journal)
        self.files = FileTools(
            self.root,
            journal=self.journal,
            on_change=self._on_change,
            before_remove=self.history.keep_before_removal,
            # Without a graph, the file tools find inbound links by reading the notes.
            inbound_lookup=self._inbound_sources if self.graph is not None else None,
            max_read_bytes=settings.files.max_read_bytes,
            max_file_bytes=settings.index.max_file_bytes,
        )
        # The model pipelines use; None when no LLM is configured (steps must then say so).
        self.llm = self._build("llm", components.llm, "components.llm", context)
        self._pipeline_llms: dict[str, Any] = {}
        self.agent_wrapper = self._build(
            "agent_wrapper", components.agent_wrapper, "components.agent_wrapper", context
        )
        # Counts tokens for context budgets (reme_core.light); cheap to build, loads lazily.
        self.tokenizer = self._build(
            "tokenizer", components.tokenizer, "components.tokenizer", context
        )
        self.vectors = self._build_vectors(context)
        self.indexer.vectors = self.vectors
        self.embedding_state: str | None = None
        """Set by ``warm_up``: warming, ready, or why it failed (None: never warmed)."""
        if self.vectors is not None:
            # While the drift seal says the store matched the catalog, a vector pass has
            # nothing to compare; one that finds nothing to do says so to the seal.
            self.vectors.settled = self.indexer.vectors_settled
            self.vectors.on_matched = self.indexer.settle_vectors
        arms: list[SearchArm] = [KeywordArm(self.keyword)]
        weights = {"keyword": 1.0}
        if self.vectors is not None:
            vector_weight = settings.search.vector_weight
            arms.append(VectorArm(self.vectors))
            weights = {"keyword": 1.0 - vector_weight, "vector": vector_weight}
        self.searcher = Searcher(
            self.catalog,
            arms,
            weights,
            settings.search,
            graph=self.graph,
            tags=self.tags,
            expire_policy=parse_policy(settings.lifecycle.expire),
            modified=file_day(self.root, settings.tzinfo()),
        )
        # The served search pipelines, built on first use and kept (settings never change).
        self._search_pipelines: dict[str, SearchPipeline] = {}
        self._search_pipelines_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        workspace: str | Path | None = None,
        *,
        config_file: Path | None = None,
        overrides: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        plugins: Plugins | None = None,
    ) -> Reme:
        """Load settings (defaults < file < env < overrides), plugins, and open the workspace."""
        settings = load_settings(config_file, overrides, env)
        if workspace is not None:
            settings = settings.model_copy(
                update={"workspace": Path(workspace).expanduser().resolve()}
            )
        return cls(settings, plugins or load_plugins())

    # -- operations --------------------------------------------------------------------------

    def index(self, vectors: VectorMode = "wait", progress: Progress | None = None) -> IndexReport:
        """Incremental index of the whole workspace.

        ``vectors``: ``"wait"`` embeds what changed before returning (``progress(done, total)``
        is called per batch), ``"background"`` embeds on a thread while keyword search already
        serves, ``"skip"`` leaves it for later (search says how much is embedded).
        It also repairs drift (``status()["drift"]``): paths the indexes disagree about.
        ``seconds`` covers the embedding it waited for (``embed_seconds`` of it).
        """
        started = time.perf_counter()
        report = self.indexer.scan()
        return self._with_vectors(report, started, vectors, progress)

    def reindex(
        self, vectors: VectorMode = "wait", progress: Progress | None = None
    ) -> IndexReport:
        """Rebuild every projection from the notes (cached embeddings are reused)."""
        started = time.perf_counter()
        report = self.indexer.rebuild()
        return self._with_vectors(report, started, vectors, progress)

    def _with_vectors(
        self, report: IndexReport, started: float, mode: VectorMode, progress: Progress | None
    ) -> IndexReport:
        embedding = time.perf_counter()
        self._update_vectors(mode, progress)
        done = time.perf_counter()
        if self.vectors is not None and mode == "wait":
            report.embed_seconds = done - embedding
        report.seconds = done - started
        return report

    def optimize(self) -> None:
        """Fold incremental index state into the main structures; build the vector index."""
        # No write lands while the structures are rebuilt; the drift seal follows the rebuild.
        with self.indexer.writers, self.indexer.sealed_write():
            self.indexer.optimize()
            if self.vectors is not None:
                self.vectors.optimize()

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        min_score: float | None = None,
        filters: SearchFilters | None = None,
        expand: bool | None = None,
        as_of: dt.date | None = None,
    ) -> SearchResponse:
        """The search every surface serves (HTTP, MCP, ``reme search``, ``memory_search``): the
        configured ``pipelines.search`` pipeline (``serve_search``), for a request whose query
        is checked once, as it is made (``SearchRequest``)."""
        return self.serve_search(SearchRequest(query, limit, min_score, filters, expand, as_of))

    def serve_search(self, request: SearchRequest) -> SearchResponse:
        """Serve one checked request: its arguments reach the steps of ``pipelines.search`` as
        the search step's params and, typed, as ``request``. The default pipeline, the shipped
        ``search`` step alone, is ``engine_search`` of the request, so the engine serves it here
        without running it. The search operation's handler (its input resolves to a request)."""
        pipeline = self._served_search()
        if pipeline is not None:
            return pipeline.run(request)
        with self.indexer.lock.read():  # many searches at once; never a half-applied write
            return self.searcher.search(
                request.query,
                limit=request.limit,
                min_score=request.min_score,
                filters=request.filters,
                expand=request.expand,
                as_of=request.as_of,
            )

    def engine_search(
        self,
        query: str,
        *,
        limit: int | None = None,
        min_score: float | None = None,
        filters: SearchFilters | None = None,
        expand: bool | None = None,
        as_of: dt.date | None = None,
    ) -> SearchResponse:
        """Hybrid search by the engine itself, whatever ``pipelines.search`` says: what the
        ``search`` step runs, and what internal lookups (dream candidates, memory records) use.
        The engine's own entry point, so it checks the query too."""
        if not query or not query.strip():
            raise SearchError("empty query")
        with self.indexer.lock.read():  # many searches at once; never a half-applied write
            return self.searcher.search(
                query, limit=limit, min_score=min_score, filters=filters, expand=expand, as_of=as_of
            )

    def _served_search(self) -> SearchPipeline | None:
        """The pipeline ``search`` runs, or None where the engine serves it: no
        ``pipelines.search``, a step of it searching, or a pipeline that is only the engine."""
        if SEARCH_PIPELINE not in self.settings.pipelines or in_search_pipeline(self):
            return None
        pipeline = self._search_pipeline(SEARCH_PIPELINE)
        return None if pipeline.engine_only else pipeline

    def _search_pipeline(self, name: str) -> SearchPipeline:
        """Pipeline ``name``'s steps, resolved (and shareable steps built) on first use."""
        found = self._search_pipelines.get(name)
        if found is None:
            with self._search_pipelines_lock:  # two first searches at once build it once
                found = self._search_pipelines.get(name)
                if found is None:
                    found = self._search_pipelines[name] = SearchPipeline(self, name)
        return found

    def run(self, pipeline: str, params: dict[str, Any] | None = None) -> PipelineResult:
        """Run a configured pipeline (``settings.pipelines``) with ``params`` as its initial state."""
        return run_pipeline(self, pipeline, params or {})

    @property
    def review(self) -> ReviewApi:
        """The review queue: proposals of pipelines set to ``review: queue`` (``list``, ``show``,
        ``approve``, ``reject``)."""
        return ReviewApi(self)

    def builtin_reviewer(self, pipeline: str) -> Reviewer | None:
        """The reviewer of proposals the core itself makes, which name no step: memory
        summarize's (``memory.review: queue``). Here, above both, so the review queue need not
        know the memory package."""
        return MemoryReviewer() if pipeline == MEMORY_PIPELINE else None

    def llm_for(self, pipeline: str) -> Llm | None:
        """The model pipeline ``pipeline`` uses: its own ``llm`` if configured (built once and
        kept), else ``components.llm``."""
        config = self.settings.pipelines.get(pipeline)
        if config is None or config.llm is None:
            return self.llm
        if pipeline not in self._pipeline_llms:
            self._pipeline_llms[pipeline] = self._build(
                "llm", config.llm, f"pipelines.{pipeline}.llm", self.context
            )
        return self._pipeline_llms[pipeline]

    def run_agent(
        self, task: AgentTask, allowed_paths: Sequence[str], *, llm: Llm | None = None
    ) -> AgentResult:
        """Run the configured agent wrapper with file tools confined to ``allowed_paths``
        (an empty list allows nothing; the confinement can only narrow, never widen)."""
        if self.agent_wrapper is None:
            raise ConfigError(
                "components.agent_wrapper is null: agentic steps need one (e.g. toolloop)"
            )
        tools = self.files.confined(list(allowed_paths))
        return self.agent_wrapper.run(task, tools=tools, llm=llm if llm is not None else self.llm)

    def revert(self, run: str, *, force: bool = False, confirm: bool = False) -> list[str]:
        """Undo one recorded run (a new history commit) and reindex what it touched.

        Refused, with nothing changed, by a ``RevertRefusedError`` whose ``plan`` lists the
        files: a snapshot of changes made outside reme unless ``force``, a revert that deletes
        files unless ``confirm`` (``revert_preview`` says beforehand what it would do).
        """
        with self.indexer.writers:  # no other write between the revert and its indexing
            files = self.history.revert(run, force=force, confirm=confirm)
            self.indexer.update(files)
        return files

    def revert_preview(self, run: str) -> RevertPlan:
        """The files reverting ``run`` would delete, modify and restore; changes nothing."""
        return self.history.preview(run)

    def watch(self, on_report: Callable[[IndexReport], None] | None = None) -> Watcher:
        """Start indexing edits made outside the API; call ``stop()`` on the result to end it."""

        def index_batch(paths: list[str]) -> None:
            report = self.indexer.update(paths)
            if on_report:
                on_report(report)

        watcher = Watcher(
            self.root, index_batch, debounce=self.settings.index.watch_debounce_seconds
        )
        watcher.start()
        return watcher

    def warm_up(self) -> bool:
        """Do now what the first search after a start would wait for (`reme serve` calls this
        on a thread once it is up): the default filters' allowed chunks and the keyword index
        (``Searcher.warm``), then the embedding model, loaded by embedding one short query.
        False when there is no vector arm to warm. A model failure is raised and kept in
        ``status()``; the model then loads on the first search, as without a warm-up."""
        with self.indexer.lock.read():  # as a search reads: never a half-applied write
            self.searcher.warm()
        if self.vectors is None or not self.vectors.available:
            return False
        self.embedding_state = "warming"
        try:
            embedding = self.vectors.embedding
            embedding.embed_query(embedding.truncate("warm up"))
        except Exception as exc:
            self.embedding_state = f"failed: {exc}"
            raise
        self.embedding_state = "ready"
        return True

    def links(self, path: str) -> dict[str, list[Link]]:
        """Links written in ``path`` (resolved or not) and resolved links from other notes to it."""
        if self.graph is None:
            raise ConfigError("components.graph is null: link tracking is off")
        with self.indexer.lock.read():
            return {"outbound": self.graph.outbound(path), "inbound": self.graph.inbound(path)}

    def unresolved_links(self) -> list[Link]:
        """Every wikilink whose target is missing or ambiguous."""
        if self.graph is None:
            raise ConfigError("components.graph is null: link tracking is off")
        with self.indexer.lock.read():
            return self.graph.unresolved()

    def status(self) -> dict[str, Any]:
        # The drift check needs no pass running (one between its intent and its last flush
        # would look interrupted); it never waits for one: it says it was skipped instead.
        idle = self.indexer.writers.acquire(blocking=False)
        try:
            with self.indexer.lock.read():  # counts from one state of the index
                return self._status(drift=idle)
        finally:
            if idle:
                self.indexer.writers.release()

    def _status(self, drift: bool = True) -> dict[str, Any]:
        counts = self.catalog.counts()
        return {
            "workspace": str(self.root),
            **counts,
            "unresolved_links": len(self.graph.unresolved()) if self.graph is not None else 0,
            "keyword_index": {"name": self.keyword.name, **self.keyword.stats()},
            "vectors": (
                self.vectors.status()
                | ({"embedding": self.embedding_state} if self.embedding_state else {})
                if self.vectors is not None
                else {"state": "off", "reason": "components.embedding is null"}
            ),
            "problems": self.catalog.problems(),
            "drift": (
                self.indexer.drift().summary()
                if drift
                else {
                    "found": None,
                    "count": None,
                    "problems": [],
                    "skipped": "an index pass is running",
                }
            ),
        }

    def close(self) -> None:
        with self.indexer.writers:
            # Asked before anything closes (SQLite folds its logs into the files then); not
            # while a background vector pass writes outside the indexer's passes.
            closing = self.indexer.before_close(
                busy=self.vectors is not None and self.vectors.building
            )
        if self.vectors is not None:
            self.vectors.close()  # stops a background pass first; pending work resumes next time
            self.embedding_cache.close()
        with self.indexer.writers, self.indexer.lock.write():
            self.keyword.flush()
            for component in (
                self.keyword,
                self.graph,
                self.tags,
                self.llm,
                *self._pipeline_llms.values(),
                *self._search_pipelines.values(),
                self.agent_wrapper,
                self.tokenizer,
                *self.chunkers.values(),
            ):
                if component is not None:
                    component.close()
            self.catalog.close()
            self.indexer.after_close(closing)

    def __enter__(self) -> Reme:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- wiring ------------------------------------------------------------------------------

    def _build(
        self, kind: str, selection: ComponentSelection | None, path: str, context: ComponentContext
    ) -> Any:
        if selection is None:  # the feature is turned off in config
            return None
        cls, settings = resolve_component(self.plugins, kind, selection, path)
        return cls(settings, context)

    def _build_vectors(self, context: ComponentContext) -> VectorIndex | None:
        components = self.settings.components
        if components.embedding is None and components.file_store is None:
            return None
        if components.embedding is None or components.file_store is None:
            missing = "embedding" if components.embedding is None else "file_store"
            raise ConfigError(
                f"components.{missing}: vectors need both an embedding and a file_store "
                "(set both to null for keyword-only search)"
            )
        embedding = self._build("embedding", components.embedding, "components.embedding", context)
        store = self._build("file_store", components.file_store, "components.file_store", context)
        self.embedding_cache = EmbeddingCache(self.state_dir / "embeddings.sqlite3")
        vectors = VectorIndex(
            embedding,
            store,
            self.embedding_cache,
            self.catalog,
            candidate_cap=self.settings.search.candidate_cap,
        )
        vectors.open()  # a failure is reported by status and search, not raised: keywords still work
        return vectors

    def _update_vectors(self, mode: VectorMode, progress: Progress | None) -> None:
        if self.vectors is None or mode == "skip":
            return
        if mode == "background":
            self.vectors.reconcile_in_background()
        else:
            self.vectors.reconcile(progress)

    def _on_change(self, changed: list[str], removed: list[str]) -> None:
        # Read-your-writes: the write call returns only after its file is searchable.
        self.indexer.update(changed, removed)
        self.history.after_change(changed, removed)  # so a deleted note's text is kept

    def _inbound_sources(self, path: str) -> list[str]:
        with self.indexer.lock.read():
            return sorted({link.source for link in self.graph.inbound(path)})
