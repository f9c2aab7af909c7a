"""Configuration: built-in defaults < YAML file < ``REME_*`` environment < ``--set`` overrides.

``Settings()`` is the built-in defaults. ``load_settings`` applies the layers itself, rather than
through pydantic-settings' sources, so that every error names the dotted key and the layer it came
from, and so tests can pass an ``env`` mapping instead of depending on the host environment.

Environment: ``REME_<SECTION>__<KEY>=value`` sets a nested key. ``REME_CONFIG``,
``REME_LOAD_PLUGINS`` and ``REME_BLOCK_PLUGINS`` are not config keys. An unknown top-level name
(``REME_FOO``) is ignored, since other tools may share the prefix; an unknown key under a known
section (``REME_SEARCH__LIMT``) is an error, because it can only be a typo.

Layers deep-merge mappings and replace lists and scalars. A component selection whose ``name``
changes drops the lower layer's ``settings`` (they belonged to the other implementation), and
``components.chunkers[.txt]=null`` removes a default chunker.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from reme_core.config_errors import KeyPath, describe, dotted, source_of, suggest
from reme_core.errors import ConfigError, UnknownComponentError
from reme_core.schema import NoteStatus
from reme_core.search.fusion import FusionMethod

if TYPE_CHECKING:
    from reme_core.plugins import Plugins

ENV_PREFIX = "REME_"
ENV_DELIMITER = "__"
CONFIG_ENV_VAR = "REME_CONFIG"
NON_CONFIG_ENV_VARS = frozenset({CONFIG_ENV_VAR, "REME_LOAD_PLUGINS", "REME_BLOCK_PLUGINS"})
SECRET_WORDS = ("key", "token", "secret", "password")

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
            name="markdown", settings={"max_chars": 1500, "overlap_chars": 200}
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
    rerank."""
    # Measured with benchmarks/fusion_levers.py over every dev set at k = 5, 10 and 20 (LoCoMo,
    # REALTALK, LongMemEval_S sessions, the synthetic workspace and the planted-entity set):
    # convex at 0.3 is never below keyword-only; RRF at 0.3 falls below it on LoCoMo@5 and
    # REALTALK@20, because ranks alone let a vector-only find push out the one keyword match.
    vector_weight: float = Field(default=0.3, ge=0, le=1)
    link_expansion: bool = True
    expansion_limit: int = Field(default=10, ge=0)
    statuses: list[NoteStatus] = Field(default_factory=lambda: ["active"], min_length=1)


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
        "auto_resource": steps("auto_resource", "auto_tag"),
        "auto_tag": steps("auto_tag"),
        "dream": steps("dream_extract", "dream_integrate", "dream_finish", "auto_tag"),
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
    auto_memory_flush: str | None = "*/15 * * * *"
    """Summarise sessions whose turns have waited longer than their auto_memory step's
    ``flush_after_minutes`` (deferred by ``min_pending_turns``, or left by a failed call)."""
    resource_inbox: str | None = None
    """Run the ``auto_resource`` pipeline over ``resource/`` (its ``inbox/`` folder is where files
    are meant to be dropped): new and changed files become resource notes, unchanged ones cost
    nothing. Off by default: it needs a model."""
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


# -- loading ---------------------------------------------------------------------------------


def load_settings(
    config_file: Path | None = None,
    overrides: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Merge the layers and validate; raise ConfigError naming the key and its source."""
    env = os.environ if env is None else env
    if config_file is None and env.get(CONFIG_ENV_VAR):
        config_file = Path(env[CONFIG_ENV_VAR])
    assignments: list[tuple[list[str], Any, str]] = []
    if config_file is not None:
        assignments.append(([], read_config_file(config_file), str(config_file)))
    assignments.extend(_env_assignments(env))
    for item in overrides:
        keys, value = parse_override(item)
        assignments.append((keys, value, f"--set {item}"))

    # Start from the defaults so a layer that sets one key keeps the keys beside it.
    merged: dict[str, Any] = Settings().model_dump()
    origin: dict[KeyPath, str] = {}
    for keys, value, source in assignments:
        merged = _assign(merged, keys, value)
        for path in _paths(tuple(keys), value):
            origin[path] = source
    # BaseSettings quietly drops top-level "_..." keys (its init options such as _env_file).
    for key in merged:
        if key.startswith("_"):
            source = source_of((key,), origin)
            raise ConfigError(f"{key}: unknown key{suggest(Settings, (key,))} [from {source}]")
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(describe(exc, Settings, (), origin)) from None


def read_config_file(path: Path) -> dict[str, Any]:
    """Parse a YAML config file into a mapping (an empty file is an empty mapping)."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"config file {path}{where}: invalid YAML: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        node = yaml.compose(text)
        line = node.start_mark.line + 1 if node is not None else 1
        raise ConfigError(
            f"config file {path} line {line}: the top level must be a mapping of keys "
            f"(such as 'search:'), not a {type(data).__name__}"
        )
    workspace = data.get("workspace")
    if isinstance(workspace, str) and not Path(workspace).expanduser().is_absolute():
        # A relative workspace means "next to this file", wherever the command runs from.
        data["workspace"] = str(path.resolve().parent / workspace)
    return data


def parse_override(item: str) -> tuple[list[str], Any]:
    """Split ``key.sub=value`` into keys and a YAML-parsed value; ``a[.md]`` quotes a dotted key."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {item!r}: expected key=value, such as --set search.limit=5")
    return _split_key(key.strip(), item), _parse_value(raw, f"--set {item}")


def _split_key(key: str, item: str) -> list[str]:
    parts: list[str] = []
    current = ""
    i = 0
    while i < len(key):
        char = key[i]
        if char == "[":
            end = key.find("]", i)
            if end == -1:
                raise ConfigError(f"--set {item!r}: unclosed '[' in the key")
            if current:
                parts.append(current)
                current = ""
            parts.append(key[i + 1 : end])
            i = end + 1
            continue
        if char == ".":
            if current:
                parts.append(current)
            current = ""
        else:
            current += char
        i += 1
    if current:
        parts.append(current)
    if not parts or any(not p for p in parts):
        raise ConfigError(f"--set {item!r}: empty key")
    return parts


def _parse_value(raw: str, source: str) -> Any:
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}: the value is not valid YAML: {problem}") from None


def _env_assignments(env: Mapping[str, str]) -> Iterator[tuple[list[str], Any, str]]:
    found: list[tuple[list[str], str, str]] = []
    for var, raw in env.items():
        if not var.upper().startswith(ENV_PREFIX) or var.upper() in NON_CONFIG_ENV_VARS:
            continue
        keys = [k.lower() for k in var[len(ENV_PREFIX) :].split(ENV_DELIMITER)]
        if keys[0] not in Settings.model_fields:
            continue  # another tool's REME_* variable
        found.append((keys, raw, var))
    # Whole sections first, so REME_SEARCH='{...}' and REME_SEARCH__LIMIT=5 combine predictably.
    for keys, raw, var in sorted(found, key=lambda f: (len(f[0]), f[2])):
        yield keys, _parse_value(raw, f"env {var}"), f"env {var}"


def _assign(base: Any, keys: list[str], value: Any) -> Any:
    overlay = value
    for key in reversed(keys):
        overlay = {key: overlay}
    return _merge(base, overlay, ())


def _merge(base: Any, overlay: Any, path: KeyPath) -> Any:
    if not (isinstance(base, dict) and isinstance(overlay, dict)):
        return overlay
    if _is_selection(path) and overlay.get("name", base.get("name")) != base.get("name"):
        return overlay  # another implementation: the old settings do not apply to it
    out = dict(base)
    for key, value in overlay.items():
        out[key] = _merge(base.get(key), value, (*path, key))
    return out


def _is_selection(path: KeyPath) -> bool:
    if len(path) < 2 or path[0] != "components":
        return False
    return len(path) == 3 if path[1] == "chunkers" else len(path) == 2


def _paths(prefix: KeyPath, value: Any) -> Iterator[KeyPath]:
    yield prefix
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _paths((*prefix, key), sub)


# -- components ------------------------------------------------------------------------------

COMPONENT_KINDS: dict[str, str] = {
    "keyword_index": "keyword_index",
    "graph": "graph",
    "tag_index": "tag_index",
    "embedding": "embedding",
    "file_store": "file_store",
    "llm": "llm",
    "agent_wrapper": "agent_wrapper",
    "tokenizer": "tokenizer",
}
"""``components.<field>`` -> component type; ``chunkers`` entries are of type ``chunker``."""


def resolve_component(
    plugins: Plugins, kind: str, selection: ComponentSelection, path: str
) -> tuple[type, BaseModel]:
    """Look up the selected class and validate its settings; errors name ``path``."""
    try:
        cls = plugins.get(kind, selection.name)
    except UnknownComponentError as exc:
        raise UnknownComponentError(f"{path}.name: {exc}") from None
    settings_model: type[BaseModel] = cls.Settings
    try:
        return cls, settings_model.model_validate(selection.settings)
    except ValidationError as exc:
        message = describe(exc, settings_model, (), {})
        if "\n" in message:
            message = message.replace("\n  ", f"\n  {path}.settings.")
        else:
            message = f"{path}.settings.{message}"
        raise ConfigError(f"{message} [{kind} {selection.name!r}]") from None


def component_selections(settings: Settings) -> Iterator[tuple[str, str, ComponentSelection]]:
    """Every non-null selection as ``(kind, dotted path, selection)``."""
    components = settings.components
    for field, kind in COMPONENT_KINDS.items():
        selection = getattr(components, field)
        if selection is not None:
            yield kind, f"components.{field}", selection
    for suffix, selection in components.chunkers.items():
        yield "chunker", dotted(("components", "chunkers", suffix)), selection
    for name, pipeline in settings.pipelines.items():
        for i, step in enumerate(pipeline.steps):
            yield "step", dotted(("pipelines", name, "steps", i)), step
        if pipeline.llm is not None:
            yield "llm", dotted(("pipelines", name, "llm")), pipeline.llm


def validate_components(settings: Settings, plugins: Plugins) -> dict[str, tuple[type, BaseModel]]:
    """Resolve every selection (after plugins load); one ConfigError lists every problem."""
    resolved: dict[str, tuple[type, BaseModel]] = {}
    errors: list[ConfigError] = []
    for kind, path, selection in component_selections(settings):
        try:
            resolved[path] = resolve_component(plugins, kind, selection, path)
        except ConfigError as exc:
            errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        lines = "\n  ".join(str(e).replace("\n", "\n  ") for e in errors)
        raise ConfigError(f"invalid component configuration:\n  {lines}")
    return resolved


# -- display ---------------------------------------------------------------------------------


def redacted(settings: Settings) -> dict[str, Any]:
    """The effective config as plain data with secrets as ``***`` (for ``reme config show``)."""
    return _redact(settings.model_dump(mode="json"))


def is_secret_key(key: str) -> bool:
    """Whether a key names a secret: a word of it ends in key/token/secret/password.

    Whole words, not substrings, so ``keyword_index`` and ``max_tokens`` stay visible while
    ``api_key``, ``apikey``, ``access-token`` and ``DB_PASSWORD`` are hidden.
    """
    words = key.lower().replace("-", "_").replace(".", "_").split("_")
    return any(word.endswith(SECRET_WORDS) for word in words)


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: "***" if is_secret_key(str(k)) and v is not None else _redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value
