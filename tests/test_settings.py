"""Configuration layers, error messages, default.yaml completeness, redaction, component checks."""

from __future__ import annotations

from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import yaml

from reme_core import hookimpl
from reme_core.components import (
    Chunker,
    ComponentSettings,
    Graph,
    KeywordIndex,
    TagIndex,
    Tokenizer,
)
from reme_core.errors import ConfigError, UnknownComponentError
from reme_core.plugins import Plugins
from reme_core.settings import (
    ComponentSelection,
    Settings,
    is_secret_key,
    load_settings,
    parse_override,
    redacted,
    resolve_component,
    validate_components,
)

DEFAULT_YAML = Path(__file__).resolve().parents[1] / "config" / "default.yaml"


def write(tmp_path: Path, text: str, name: str = "reme.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def config_error(**kwargs: Any) -> str:
    kwargs.setdefault("env", {})
    with pytest.raises(ConfigError) as info:
        load_settings(**kwargs)
    return str(info.value)


# -- defaults and default.yaml -------------------------------------------------------------------


def test_builtin_defaults_match_the_spec() -> None:
    s = Settings()
    assert s.workspace is None and s.timezone is None
    assert s.components.keyword_index == ComponentSelection(name="bm25s")
    assert s.components.embedding == ComponentSelection(name="e5-onnx")
    assert s.components.file_store == ComponentSelection(name="zvec")
    assert s.components.chunkers[".md"].settings == {
        "max_chars": 1500,
        "overlap_chars": 200,
        "keyword_context_keys": [],
        "vector_context_keys": ["replying_to"],
        "excerpt_chunks": "exchange",
        "excerpt_user_chunks": True,
    }
    assert s.index.max_file_bytes == 5242880
    assert s.files.max_read_bytes == 51200
    assert (s.search.limit, s.search.rrf_k, s.search.statuses) == (10, 60, ["active"])


def test_default_yaml_lists_every_key_with_its_builtin_default() -> None:
    raw = yaml.safe_load(DEFAULT_YAML.read_text(encoding="utf-8"))
    assert raw == Settings().model_dump(mode="json")


def test_loading_default_yaml_equals_builtin_defaults() -> None:
    assert load_settings(DEFAULT_YAML, env={}) == Settings()


def test_settings_ignores_the_host_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REME_SEARCH__LIMIT", "7")
    assert Settings().search.limit == 10


# -- precedence ----------------------------------------------------------------------------------


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    config = write(tmp_path, "search:\n  limit: 3\n  min_score: 0.1\n  rrf_k: 30\n")
    env = {"REME_SEARCH__LIMIT": "4", "REME_SEARCH__MIN_SCORE": "0.2"}
    s = load_settings(config, overrides=["search.limit=5"], env=env)
    assert s.search.limit == 5  # --set beats env
    assert s.search.min_score == 0.2  # env beats file
    assert s.search.rrf_k == 30  # file beats defaults
    assert s.search.candidate_cap == 200  # untouched default


def test_reme_config_env_names_the_file_unless_config_file_is_given(tmp_path: Path) -> None:
    from_env = write(tmp_path, "search: {limit: 3}\n", "env.yaml")
    explicit = write(tmp_path, "search: {limit: 4}\n", "explicit.yaml")
    env = {"REME_CONFIG": str(from_env)}
    assert load_settings(env=env).search.limit == 3
    assert load_settings(explicit, env=env).search.limit == 4


def test_non_config_env_vars_and_unknown_top_level_names_are_ignored() -> None:
    env = {"REME_LOAD_PLUGINS": "a,b", "REME_BLOCK_PLUGINS": "c", "REME_FOO": "1", "HOME": "/x"}
    assert load_settings(env=env) == Settings()


def test_env_values_parse_as_yaml_and_sections_combine() -> None:
    env = {
        "REME_SEARCH": "{limit: 7, statuses: [active, archived]}",
        "REME_SEARCH__MIN_SCORE": "0.5",
        "REME_WORKSPACE": "/notes",
    }
    s = load_settings(env=env)
    assert (s.search.limit, s.search.min_score) == (7, 0.5)
    assert s.search.statuses == ["active", "archived"]
    assert s.workspace == Path("/notes")


def test_set_parses_flow_lists_null_and_bracketed_keys() -> None:
    s = load_settings(
        overrides=[
            "search.statuses=[active,archived]",
            "components.chunkers[.txt]=null",
            "components.llm={name: fake, settings: {model: m}}",
            "timezone=UTC",
        ],
        env={},
    )
    assert s.search.statuses == ["active", "archived"]
    assert ".txt" not in s.components.chunkers and ".md" in s.components.chunkers
    assert s.components.llm == ComponentSelection(name="fake", settings={"model": "m"})
    assert s.timezone == "UTC"


def test_changing_a_selection_name_drops_the_old_settings() -> None:
    s = load_settings(overrides=["components.chunkers[.md].name=plain"], env={})
    assert s.components.chunkers[".md"] == ComponentSelection(name="plain")
    kept = load_settings(overrides=["components.chunkers[.md].settings.max_chars=900"], env={})
    assert kept.components.chunkers[".md"].settings == {
        "max_chars": 900,
        "overlap_chars": 200,
        "keyword_context_keys": [],
        "vector_context_keys": ["replying_to"],
        "excerpt_chunks": "exchange",
        "excerpt_user_chunks": True,
    }


def test_parse_override() -> None:
    assert parse_override("search.limit=5") == (["search", "limit"], 5)
    assert parse_override("a[.md].b=x=y") == (["a", ".md", "b"], "x=y")
    assert parse_override("workspace=") == (["workspace"], None)
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_override("search.limit")
    with pytest.raises(ConfigError, match="unclosed"):
        parse_override("a[.md=1")


# -- unknown keys ----------------------------------------------------------------------------------


def test_unknown_top_level_key_in_file(tmp_path: Path) -> None:
    config = write(tmp_path, "serch:\n  limit: 3\n")
    message = config_error(config_file=config)
    assert "serch: unknown key (did you mean 'search'?)" in message
    assert str(config) in message


def test_unknown_nested_key_in_file(tmp_path: Path) -> None:
    message = config_error(config_file=write(tmp_path, "search:\n  limt: 3\n"))
    assert "search.limt: unknown key (did you mean 'limit'?)" in message
    assert "reme.yaml" in message


def test_unknown_nested_key_in_env() -> None:
    message = config_error(env={"REME_SEARCH__LIMT": "3"})
    assert "search.limt: unknown key (did you mean 'limit'?)" in message
    assert "env REME_SEARCH__LIMT" in message


def test_unknown_key_via_set() -> None:
    message = config_error(overrides=["index.exclud=[a]"])
    assert "index.exclud: unknown key (did you mean 'exclude'?)" in message
    assert "--set index.exclud=[a]" in message


def test_unknown_private_looking_key_is_not_swallowed() -> None:
    message = config_error(overrides=["_env_file=.env"])
    assert message.startswith("_env_file: unknown key") and "--set _env_file=.env" in message


def test_unknown_key_in_a_component_selection() -> None:
    message = config_error(overrides=["components.chunkers[.md].nme=x"])
    assert "components.chunkers[.md].nme: unknown key (did you mean 'name'?)" in message


def test_several_problems_are_all_reported(tmp_path: Path) -> None:
    message = config_error(
        config_file=write(tmp_path, "search: {limt: 1}\n"), overrides=["files.max_red_bytes=1"]
    )
    assert "search.limt" in message and "files.max_red_bytes" in message


# -- bad values ------------------------------------------------------------------------------------


def test_bad_type_names_path_value_and_source() -> None:
    message = config_error(overrides=["search.limit=abc"])
    assert message.startswith("search.limit: ")
    assert "'abc'" in message and "--set search.limit=abc" in message


def test_out_of_range_value_from_env() -> None:
    message = config_error(env={"REME_SEARCH__LIMIT": "500"})
    assert "search.limit:" in message and "200" in message and "REME_SEARCH__LIMIT" in message


def test_bad_status_names_the_list_item(tmp_path: Path) -> None:
    message = config_error(config_file=write(tmp_path, "search:\n  statuses: [active, gone]\n"))
    assert "search.statuses[1]:" in message and "'gone'" in message


def test_chunker_keys_must_be_suffixes() -> None:
    message = config_error(overrides=["components.chunkers.md={name: markdown}"])
    assert "components.chunkers:" in message and "'.md'" in message


# -- YAML files ------------------------------------------------------------------------------------


def test_yaml_that_does_not_parse_names_file_and_line(tmp_path: Path) -> None:
    config = write(tmp_path, "search:\n  limit: 3\n  bad: [unclosed\n")
    message = config_error(config_file=config)
    assert str(config) in message and "line 4" in message


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    config = write(tmp_path, "# comment\n- search\n- index\n")
    message = config_error(config_file=config)
    assert str(config) in message and "line 2" in message and "mapping" in message


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    assert load_settings(write(tmp_path, "# nothing set\n"), env={}) == Settings()


def test_missing_config_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    message = config_error(env={"REME_CONFIG": str(missing)})
    assert str(missing) in message and "does not exist" in message


# -- workspace and timezone ------------------------------------------------------------------------


def test_workspace_path_defaults_to_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings().workspace_path() == tmp_path.resolve()


def test_workspace_path_expands_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    s = load_settings(overrides=["workspace=~/notes"], env={})
    assert s.workspace_path() == (tmp_path / "notes").resolve()


def test_relative_workspace_in_a_file_is_relative_to_the_file(tmp_path: Path) -> None:
    config = write(tmp_path, "workspace: notes\n")
    assert load_settings(config, env={}).workspace_path() == (tmp_path / "notes").resolve()


def test_timezone_is_validated() -> None:
    assert load_settings(overrides=["timezone=Europe/Paris"], env={}).tzinfo() == ZoneInfo(
        "Europe/Paris"
    )
    message = config_error(env={"REME_TIMEZONE": "Mars/Olympus"})
    assert message.startswith("timezone: unknown time zone 'Mars/Olympus'")
    assert "REME_TIMEZONE" in message


def test_null_timezone_is_the_host_zone() -> None:
    zone = Settings().tzinfo()
    assert isinstance(zone, tzinfo)
    assert datetime.now(zone).utcoffset() is not None


# -- redaction -------------------------------------------------------------------------------------


def test_redacted_hides_secrets_recursively_and_keeps_the_rest() -> None:
    s = load_settings(
        overrides=[
            "components.llm={name: openai, settings: {api_key: sk-1, max_tokens: 5,"
            " nested: {DB_PASSWORD: p, apiToken: t}, headers: [{secret: s}], token: null}}"
        ],
        env={},
    )
    shown = redacted(s)
    llm = shown["components"]["llm"]["settings"]
    assert llm["api_key"] == "***" and llm["max_tokens"] == 5
    assert llm["nested"] == {"DB_PASSWORD": "***", "apiToken": "***"}
    assert llm["headers"] == [{"secret": "***"}]
    assert llm["token"] is None  # unset stays visibly unset
    assert shown["components"]["keyword_index"] == {"name": "bm25s", "settings": {}}
    assert s.components.llm is not None and s.components.llm.settings["api_key"] == "sk-1"


@pytest.mark.parametrize(
    ("key", "secret"),
    [("api_key", True), ("apikey", True), ("access-token", True), ("keyword_index", False),
     ("max_tokens", False), ("client_secret", True), ("name", False)],
)  # fmt: skip
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


# -- components ------------------------------------------------------------------------------------


class MarkdownSettings(ComponentSettings):
    max_chars: int = 1000
    overlap_chars: int = 0
    keyword_context_keys: list[str] = []
    vector_context_keys: list[str] = []
    excerpt_chunks: str = "packed"
    excerpt_user_chunks: bool = False


class FakeMarkdown(Chunker):
    name = "markdown"
    Settings = MarkdownSettings

    def chunk(self, path: str, text: str) -> list[Any]:
        return []


def fake_class(base: type, name: str) -> type:
    return type(f"Fake_{name}", (base,), {"name": name})


class FakePlugin:
    @hookimpl
    def register_chunkers(self, register: Any) -> None:
        register(FakeMarkdown)
        register(fake_class(Chunker, "text"))
        register(fake_class(Chunker, "jsonl"))

    @hookimpl
    def register_keyword_indexes(self, register: Any) -> None:
        register(fake_class(KeywordIndex, "bm25s"))

    @hookimpl
    def register_graphs(self, register: Any) -> None:
        register(fake_class(Graph, "sqlite"))

    @hookimpl
    def register_tag_indexes(self, register: Any) -> None:
        register(fake_class(TagIndex, "sqlite"))

    @hookimpl
    def register_tokenizers(self, register: Any) -> None:
        register(fake_class(Tokenizer, "estimate"))


@pytest.fixture
def plugins() -> Plugins:
    manager = Plugins()
    manager.register(FakePlugin(), name="fake")
    return manager


def test_resolve_component_validates_settings(plugins: Plugins) -> None:
    selection = ComponentSelection(name="markdown", settings={"max_chars": "800"})
    cls, settings = resolve_component(plugins, "chunker", selection, "components.chunkers[.md]")
    assert cls is FakeMarkdown
    assert settings == MarkdownSettings(max_chars=800)


def test_resolve_component_unknown_name(plugins: Plugins) -> None:
    selection = ComponentSelection(name="markdwn")
    with pytest.raises(UnknownComponentError) as info:
        resolve_component(plugins, "chunker", selection, "components.chunkers[.md]")
    message = str(info.value)
    assert message.startswith("components.chunkers[.md].name: unknown chunker 'markdwn'")
    assert "markdown" in message  # lists what is available


def test_resolve_component_bad_settings(plugins: Plugins) -> None:
    path = "components.chunkers[.md]"
    bad_type = ComponentSelection(name="markdown", settings={"max_chars": "lots"})
    with pytest.raises(ConfigError, match=r"components\.chunkers\[\.md\]\.settings\.max_chars: "):
        resolve_component(plugins, "chunker", bad_type, path)
    unknown = ComponentSelection(name="markdown", settings={"max_char": 5})
    with pytest.raises(ConfigError) as info:
        resolve_component(plugins, "chunker", unknown, path)
    assert "settings.max_char: unknown key (did you mean 'max_chars'?)" in str(info.value)


def test_validate_components_accepts_the_defaults(plugins: Plugins) -> None:
    # The fake plugin set has no vector components or agent; the rest resolve as they are.
    keyword_only = Settings.model_validate(
        {
            "components": {"embedding": None, "file_store": None, "agent_wrapper": None},
            "pipelines": {},
        }
    )
    resolved = validate_components(keyword_only, plugins)
    assert set(resolved) == {
        "components.keyword_index",
        "components.graph",
        "components.tag_index",
        "components.tokenizer",
        "components.chunkers[.md]",
        "components.chunkers[.txt]",
        "components.chunkers[.jsonl]",
    }
    assert resolved["components.chunkers[.md]"][1] == MarkdownSettings(
        max_chars=1500,
        overlap_chars=200,
        vector_context_keys=["replying_to"],
        excerpt_chunks="exchange",
        excerpt_user_chunks=True,
    )


def test_validate_components_reports_every_bad_selection(plugins: Plugins) -> None:
    s = load_settings(
        overrides=["components.llm.name=gpt", "components.chunkers[.md].settings.overlap=1"],
        env={},
    )
    with pytest.raises(ConfigError) as info:
        validate_components(s, plugins)
    message = str(info.value)
    assert "components.llm.name: unknown llm 'gpt'" in message
    assert "components.chunkers[.md].settings.overlap: unknown key" in message
