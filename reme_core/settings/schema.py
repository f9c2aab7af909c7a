"""The configuration's schema: every section and key, its built-in default and its checks.

``Settings()`` is the built-in defaults (``config/default.yaml`` lists the same, and a test
keeps the two equal); ``reme_core.settings.layering.load_settings`` builds one from the layers.
"""

from __future__ import annotations

import os
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from reme_core.schema import NoteStatus
from reme_core.search.fusion import FusionMethod, check_floor_rank, check_pattern
from reme_core.settings.lifecycle import LifecycleConfig

ENV_PREFIX = "REME_"
ENV_DELIMITER = "__"

Language = Literal["en", "zh"]
"""Languages the shipped prompts are written in (config ``language``)."""
ReviewMode = Literal["apply", "queue"]
"""``apply``: a pipeline changes notes itself; ``queue``: it writes proposals to
``.reme/proposals/`` for a person to approve or reject (``reme review``)."""


class _Strict(BaseModel):
    # YAML reads `--set name=2024` as a number; a str field still means the text.
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)


class ComponentSelection(_Strict):
    """One implementation by name, with its settings (checked once plugins load)."""

    name: str = Field(min_length=1)
    settings: dict[str, Any] = Field(default_factory=dict)


def _chunker_defaults() -> dict[str, ComponentSelection]:
    return {
        ".md": ComponentSelection(
            name="markdown",
            settings={
                "max_chars": 1500,
                "overlap_chars": 200,
                "keyword_context_keys": [],
                "vector_context_keys": ["replying_to"],
                "excerpt_chunks": "exchange",
                "excerpt_user_chunks": True,
            },
        ),
        ".txt": ComponentSelection(name="text"),
        ".jsonl": ComponentSelection(name="jsonl"),
    }


class ComponentsConfig(_Strict):
    """Component selections; ``None`` turns a feature off."""

    keyword_index: ComponentSelection | None = Field(
        default_factory=lambda: ComponentSelection(name="bm25s")
    )
    graph: ComponentSelection | None = Field(
        default_factory=lambda: ComponentSelection(name="sqlite")
    )
    tag_index: ComponentSelection | None = Field(
        default_factory=lambda: ComponentSelection(name="sqlite")
    )
    # Hybrid search out of the box: a bundled offline model and an embedded vector store.
    embedding: ComponentSelection | None = Field(
        default_factory=lambda: ComponentSelection(name="e5-onnx")
    )
    file_store: ComponentSelection | None = Field(
        default_factory=lambda: ComponentSelection(name="zvec")
    )
    llm: ComponentSelection | None = None
    # Used only by steps set to an agentic mode; it runs on the pipeline's llm.
    agent_wrapper: ComponentSelection | None = Field(
        default_factory=lambda: ComponentSelection(name="toolloop")
    )
    chunkers: dict[str, ComponentSelection] = Field(default_factory=_chunker_defaults)
    # Context budgets (reme_core.light) count with it. The default needs no download: an
    # estimate calibrated against o200k_base (see benchmarks/context.py for its error).
    tokenizer: ComponentSelection = Field(
        default_factory=lambda: ComponentSelection(name="estimate")
    )

    @field_validator("chunkers", mode="before")
    @classmethod
    def _check_chunkers(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        bad = [k for k in value if not (isinstance(k, str) and k.startswith(".") and len(k) > 1)]
        if bad:
            raise ValueError(f"chunker keys are file suffixes such as '.md', not {bad[0]!r}")
        # A null entry is how a layer removes a chunker that a lower layer selected.
        return {k: v for k, v in value.items() if v is not None}


class IndexConfig(_Strict):
    """What the indexer scans."""

    exclude: list[str] = Field(
        default_factory=lambda: [".reme/**", ".git/**", ".obsidian/**", "**/.*", "tool_results/**"]
    )
    max_file_bytes: int = Field(default=5 * 1024 * 1024, ge=1)
    watch_debounce_seconds: float = Field(default=0.5, ge=0)


class FilesConfig(_Strict):
    """File tools."""

    max_read_bytes: int = Field(default=50 * 1024, ge=1)


class SearchConfig(_Strict):
    """Search defaults; a request may override them."""

    limit: int = Field(default=10, ge=1, le=200)
    min_score: float = Field(default=0.0, ge=0, le=1)
    candidate_multiplier: int = Field(default=5, ge=1)
    candidate_cap: int = Field(default=200, ge=1)
    rrf_k: int = Field(default=60, ge=0)
    fusion: FusionMethod = "convex"
    """How the arms' rankings become one (reme_core.search.fusion): rrf, convex, adaptive,
    rerank, interleave."""
    # Measured over every dev set at k = 5, 10 and 20 (benchmarks/fusion_levers.py and the
    # LoCoMo, REALTALK, LongMemEval and BEAM runners; README "Fusion, measured"): convex at 0.25
    # is never below keyword-only; convex at 0.3 falls one question below it on the planted-entity
    # set and REALTALK@20, RRF at 0.3 on LoCoMo@5 and the entity paraphrases, because ranks alone
    # let a vector-only find push out the one keyword match.
    vector_weight: float = Field(default=0.25, ge=0, le=1)
    vector_floor_rank: int = Field(default=0, ge=0, le=10000)
    """convex, rerank, interleave: the vector arm's Nth candidate's cosine counts as 0 (lower
    ones too), its best as 1; 0 (the default): min-max over every candidate it fetched, a scale
    that moves with limit x candidate_multiplier. 1 is refused (every score would be 0 or 1)."""
    interleave_pattern: str = Field(default="ab", pattern=r"^[ab]{2,16}$")
    """interleave: whose turn it is, repeated: ``a`` the ranking at vector_weight, ``b`` the one
    at twice it (``ab`` one each, ``aab`` two of a for one of b); both letters must appear."""
    link_expansion: bool = True
    expansion_limit: int = Field(default=10, ge=0)
    statuses: list[NoteStatus] = Field(default_factory=lambda: ["active"], min_length=1)
    date_boost: float = Field(default=0.0, ge=0, le=1)
    """Weight of the days a query names ("last Saturday", "in May 2023", "two weeks ago":
    reme_core.search.dates, relative to the search's ``as_of``, today when not given): fused
    scores move toward notes dated in that span by this much. 0 (the default) keeps the arms'
    ranking; measured by benchmarks/turn_levers.py."""
    date_slack_days: int = Field(default=0, ge=0, le=366)
    """Notes this many days outside a named span still get a share of ``date_boost``, falling
    linearly to nothing (0: only notes inside the span)."""

    @field_validator("vector_floor_rank")
    @classmethod
    def _floor_rank(cls, value: int) -> int:
        return check_floor_rank(value)

    @field_validator("interleave_pattern")
    @classmethod
    def _pattern(cls, value: str) -> str:
        return check_pattern(value)


class PipelineConfig(_Strict):
    """A named list of registered steps, run in order over one shared state."""

    steps: list[ComponentSelection] = Field(min_length=1)
    llm: ComponentSelection | None = None
    """The model this pipeline's steps use; null = ``components.llm`` (so memory writing can run
    on a cheaper model than answering)."""
    review: ReviewMode = "apply"
    """``queue``: steps that change notes (dream_integrate, auto_tag) write proposals for review
    instead (``reme review``); a step that cannot is a configuration error when the run starts."""


def _pipeline_defaults() -> dict[str, PipelineConfig]:
    def steps(*names: str) -> PipelineConfig:
        return PipelineConfig(steps=[ComponentSelection(name=n) for n in names])

    return {
        "search": steps("search"),
        "auto_memory": steps("auto_memory"),
        # A Stop hook calls after every answer: summarise about three answers per model call.
        "auto_memory_cc": PipelineConfig(
            steps=[
                ComponentSelection(name="claude_code_transcript"),
                ComponentSelection(name="auto_memory", settings={"min_pending_turns": 6}),
            ]
        ),
        # Codex's notify program runs after every turn (about 2 messages), as the Stop hook does.
        "auto_memory_codex": PipelineConfig(
            steps=[
                ComponentSelection(name="codex_transcript"),
                ComponentSelection(name="auto_memory", settings={"min_pending_turns": 6}),
            ]
        ),
        "auto_resource": steps("auto_resource", "auto_tag"),
        "auto_tag": steps("auto_tag"),
        "dream": steps("dream_extract", "dream_integrate", "dream_finish", "auto_tag"),
        "proactive": steps("proactive"),
    }


class MemoryConfig(_Strict):
    """Memory records (``reme memory``)."""

    review: ReviewMode = "apply"
    """``queue``: ``memory summarize`` writes proposals (verb MEMORY) instead of records."""
    mode: Literal["structured", "agentic"] = "structured"
    """``agentic``: ``memory summarize`` has the configured agent wrapper write the memories
    as notes in the scope's folder; they are put back and written as the model's would be."""
    agent_max_turns: int = Field(default=12, ge=1, le=200)


class ScheduledPipeline(_Strict):
    """One configured pipeline run on a cron, with the params ``reme run --param`` would give."""

    cron: str
    pipeline: str
    params: dict[str, Any] = Field(default_factory=dict)


class ScheduleConfig(_Strict):
    """Cron expressions (minute hour day month weekday) in ``timezone``; null turns a job off."""

    dream: str | None = "0 3 * * *"
    optimize: str | None = "30 3 * * *"
    proactive: str | None = "0 18 * * *"
    """Keep the follow-up topics of the day's daily notes (``daily/_proactive.yaml``) and the
    note that raises them next session; like dream, it needs a model (without one the job's
    run fails, recorded, and nothing changes)."""
    auto_memory_flush: str | None = "*/15 * * * *"
    """Summarise sessions whose turns have waited longer than their auto_memory step's
    ``flush_after_minutes`` (deferred by ``min_pending_turns``, or left by a failed call)."""
    resource_inbox: str | None = None
    """Run the ``auto_resource`` pipeline over ``resource/`` (its ``inbox/`` folder is where files
    are meant to be dropped): new and changed files become resource notes, unchanged ones cost
    nothing. Off by default: it needs a model."""
    expire: str | None = None
    """Archive expired notes (``expires:`` in a note, or ``lifecycle.expire`` per folder); off
    by default (search leaves expired notes out either way)."""
    pipelines: dict[str, ScheduledPipeline] = Field(default_factory=dict)
    """Any configured pipeline on a cron, by job name: ``{tag_nightly: {cron: "0 4 * * *",
    pipeline: auto_tag, params: {}}}``."""
    catch_up: bool = True
    """At start, run a job once if its last scheduled time passed while the server was down."""


class ServerConfig(_Strict):
    """``reme serve``: HTTP API + MCP + watcher + scheduler on one port."""

    host: str = "127.0.0.1"
    port: int = Field(default=2333, ge=0, le=65535)
    auth: bool = True
    """Bearer tokens (created on first start in .reme/). Binding a non-loopback host with auth
    off is refused."""
    workspaces: dict[str, Path] = Field(default_factory=dict)
    """Further named workspaces served beside this one (which is ``default``)."""
    shared_workspaces: list[str] = Field(default_factory=list)
    """Workspaces a search may include beside the caller's own ("project plus global" recall),
    when the token allows both."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host header values accepted besides the loopback names and the bound host."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Browser origins allowed to call the API (none by default: no CORS)."""
    max_body_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)


class Settings(BaseSettings):
    """The whole configuration. ``Settings()`` is the built-in defaults; use ``load_settings``."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=ENV_DELIMITER,
        extra="forbid",
        coerce_numbers_to_str=True,
    )

    workspace: Path | None = None
    timezone: str | None = None
    language: Language = "en"
    components: ComponentsConfig = Field(default_factory=ComponentsConfig)
    index: IndexConfig = Field(default_factory=IndexConfig)
    files: FilesConfig = Field(default_factory=FilesConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    pipelines: dict[str, PipelineConfig] = Field(default_factory=_pipeline_defaults)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings reads file, env and overrides itself; reading os.environ here as well
        # would make Settings() depend on the host and bypass the error messages.
        return (init_settings,)

    @field_validator("workspace", mode="before")
    @classmethod
    def _number_as_path(cls, value: Any) -> Any:
        # YAML reads `workspace: 2024` as a number; it is still a folder name.
        return (
            str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
        )

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str | None) -> str | None:
        if value is not None:
            _zone(value)
        return value

    def workspace_path(self) -> Path:
        """The workspace folder, ``~`` expanded and resolved; the current directory when unset."""
        if self.workspace is None:
            return Path.cwd().resolve()
        return self.workspace.expanduser().resolve()

    def tzinfo(self) -> tzinfo:
        """The configured zone, or the host's local zone when unset."""
        return _zone(self.timezone) if self.timezone else _local_zone()


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {name!r}; use an IANA name such as 'Europe/Paris' or 'UTC'"
        ) from None


def _local_zone() -> tzinfo:
    # Prefer a named zone (it knows DST changes); a fixed offset is the fallback.
    for name in (os.environ.get("TZ", "").lstrip(":"), _localtime_link()):
        if name:
            try:
                return ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                pass
    return datetime.now().astimezone().tzinfo or ZoneInfo("UTC")


def _localtime_link() -> str:
    try:
        target = str(Path("/etc/localtime").readlink())
    except OSError:
        return ""
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else ""
