"""What a step sees of its run: prompts in YAML per language, named locks across threads and
processes, the pipeline's own model, verbs in the history, and the model requirement."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV

from reme_core.cli import cli
from reme_core.components import AgentTask, Step
from reme_core.errors import ConfigError
from reme_core.pipelines.locks import LockTimeout, named_lock
from reme_core.pipelines.prompts import LANGUAGES, load_prompts, placeholders
from reme_core.pipelines.run import PipelineRun
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from tests.fake_llm import plugins_with

ROOT = Path(__file__).resolve().parents[2]

# -- prompts -----------------------------------------------------------------------------------

PROMPT_PACKAGE = "reme_test_prompt_pkg"


@pytest.fixture(scope="module")
def prompt_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An importable package holding prompt files, removed from the import system after."""
    base = tmp_path_factory.mktemp("prompt_pkg")
    folder = base / PROMPT_PACKAGE / "prompts"
    folder.mkdir(parents=True)
    (base / PROMPT_PACKAGE / "__init__.py").write_text("")
    (folder / "greet.yaml").write_text(
        textwrap.dedent(
            """\
            en:
              hello: 'Hello $name, here is {"json": true} and $${literal}.'
            zh:
              hello: '你好 $name。'
            """
        ),
        encoding="utf-8",
    )
    (folder / "shapeless.yaml").write_text("- just\n- a list\n", encoding="utf-8")
    sys.path.insert(0, str(base))
    yield PROMPT_PACKAGE
    sys.path.remove(str(base))
    sys.modules.pop(PROMPT_PACKAGE, None)


def test_render_fills_placeholders_and_leaves_json_alone(prompt_package: str) -> None:
    prompts = load_prompts(prompt_package, "greet", "en")
    assert (
        prompts.render("hello", name="Ada") == 'Hello Ada, here is {"json": true} and ${literal}.'
    )
    assert load_prompts(prompt_package, "greet", "zh").render("hello", name="Ada") == "你好 Ada。"


def test_a_missing_placeholder_value_is_a_config_error(prompt_package: str) -> None:
    prompts = load_prompts(prompt_package, "greet", "en")
    with pytest.raises(ConfigError, match=r"greet\.yaml: prompt 'hello' needs a value for \$name"):
        prompts.render("hello")
    with pytest.raises(ConfigError, match="no prompt 'bye'"):
        prompts.render("bye", name="Ada")


def test_unknown_language_is_a_config_error(prompt_package: str) -> None:
    with pytest.raises(ConfigError, match=r"no prompts in language 'fr' \(has \['en', 'zh'\]\)"):
        load_prompts(prompt_package, "greet", "fr")


def test_missing_or_shapeless_prompt_files_are_config_errors(prompt_package: str) -> None:
    with pytest.raises(ConfigError, match=r"prompt file reme_test_prompt_pkg/prompts/nope\.yaml"):
        load_prompts(prompt_package, "nope", "en")
    with pytest.raises(ConfigError, match=r"prompt file no_such_package_xyz/prompts/x\.yaml"):
        load_prompts("no_such_package_xyz", "x", "en")
    with pytest.raises(ConfigError, match=r"expected language -> \{key: template\}"):
        load_prompts(prompt_package, "shapeless", "en")


SHIPPED_PROMPTS = sorted(
    [
        *(ROOT / "reme_plugins").rglob("prompts/*.yaml"),
        *(ROOT / "reme_core").rglob("prompts/*.yaml"),
    ]
)


def test_shipped_prompt_files_are_found() -> None:
    assert ROOT / "reme_plugins" / "prompts" / "agent_toolloop.yaml" in SHIPPED_PROMPTS


@pytest.mark.parametrize(
    "path", SHIPPED_PROMPTS, ids=[p.relative_to(ROOT).as_posix() for p in SHIPPED_PROMPTS]
)
def test_shipped_prompts_agree_across_languages(path: Path) -> None:
    package = ".".join(path.parent.parent.relative_to(ROOT).parts)
    by_language = {lang: load_prompts(package, path.stem, lang) for lang in LANGUAGES}
    en = by_language["en"].templates
    for language, prompts in by_language.items():
        assert set(prompts.templates) == set(en), f"{language} keys differ from en"
        for key, template in prompts.templates.items():
            names = placeholders(template)
            assert names == placeholders(en[key]), f"{language}.{key} placeholders differ from en"
            # A stray `$` (not `$$` or a placeholder) fails here rather than in a run.
            assert isinstance(prompts.render(key, **{n: "x" for n in names}), str)


# -- named locks -------------------------------------------------------------------------------


def test_threads_holding_one_name_take_turns(tmp_path: Path) -> None:
    events: list[str] = []
    first_holds = threading.Event()

    def first() -> None:
        with named_lock(tmp_path, "dream:ws"):
            events.append("first in")
            first_holds.set()
            time.sleep(0.2)
            events.append("first out")

    def second() -> None:
        first_holds.wait(5)
        with named_lock(tmp_path, "dream:ws", timeout=5):
            events.append("second in")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert events == ["first in", "first out", "second in"]


def test_a_thread_gives_up_after_the_timeout_and_other_names_are_free(tmp_path: Path) -> None:
    outcome: list[BaseException | str] = []
    with named_lock(tmp_path, "auto_memory:session/1"):

        def contend() -> None:
            try:
                with named_lock(tmp_path, "auto_memory:session/1", timeout=0.1):
                    outcome.append("entered")
            except LockTimeout as exc:
                outcome.append(exc)
            with named_lock(tmp_path, "auto_memory:session/2", timeout=0.1):
                outcome.append("other name entered")

        thread = threading.Thread(target=contend)
        thread.start()
        thread.join(5)
    assert isinstance(outcome[0], LockTimeout) and "auto_memory:session/1" in str(outcome[0])
    assert outcome[1:] == ["other name entered"]


HOLDER = """
import sys
from pathlib import Path
from reme_core.pipelines.locks import named_lock

with named_lock(Path(sys.argv[1]), "dream:ws"):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_another_process_holding_the_lock_times_out(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with (
            pytest.raises(LockTimeout, match="held by another process"),
            named_lock(tmp_path, "dream:ws", timeout=0.2),
        ):
            pass
    finally:
        holder.communicate("\n", timeout=10)
    with named_lock(tmp_path, "dream:ws", timeout=2):
        pass  # released when the holder exits


# -- the pipeline's model, verbs, and require_llm ---------------------------------------------


class AskModel(Step):
    name = "ask_model"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        answer = run.llm.complete([{"role": "user", "content": "which model?"}])
        return {"answer": answer, "model": run.llm.model_id}


class Recorder(Step):
    name = "recorder"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        run.reme.files.write("digest/wiki/x.md", "# X\n\nrecorded\n")
        run.record("CREATE digest/wiki/x.md")
        run.record("CORROBORATE digest/wiki/y.md")
        return {}


class NeedsModel(Step):
    name = "needs_model"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        run.require_llm("the needs_model step")
        return {}


class Agentic(Step):
    name = "agentic"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        result = run.agent(AgentTask(instructions="Write.", prompt="Write a."), ["digest/wiki"])
        prompts = run.prompts("reme_plugins", "agent_toolloop")
        return {"changed": result.changed, "language": prompts.language}


@pytest.fixture
def plugins() -> Plugins:
    return plugins_with(AskModel, Recorder, NeedsModel, Agentic)


def open_reme(root: Path, plugins: Plugins, *overrides: str) -> Reme:
    root.mkdir(exist_ok=True)
    return Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=list(overrides))


def script(root: Path, name: str, entries: list[Any]) -> str:
    (root.parent / name).write_text(json.dumps(entries), encoding="utf-8")
    return str(root.parent / name)


def test_a_step_sees_its_pipelines_model(tmp_path: Path, plugins: Plugins) -> None:
    root = tmp_path / "ws"
    main = script(root, "main.json", ["from the main model"])
    own = script(root, "a.json", ["from the pipeline's model", "again"])
    with open_reme(
        root,
        plugins,
        f"components.llm={{name: scripted, settings: {{path: '{main}'}}}}",
        f"pipelines.p.llm={{name: scripted, settings: {{path: '{own}'}}}}",
        "pipelines.p.steps=[{name: ask_model}]",
        "pipelines.q.steps=[{name: ask_model}]",
    ) as reme:
        p = reme.run("p")
        assert p.outputs == {"answer": "from the pipeline's model", "model": "scripted:a.json"}
        assert p.usage.calls == 1 and p.usage.completion_tokens > 0
        assert reme.llm is not None and reme.llm.usage.calls == 0
        q = reme.run("q")
        assert q.outputs == {"answer": "from the main model", "model": "scripted:main.json"}
        assert q.usage.calls == 1
        assert reme.run("p").outputs["answer"] == "again"  # one model per pipeline, kept
        assert reme.llm_for("p") is reme.llm_for("p") is not reme.llm


def test_the_agent_runs_on_the_pipelines_model(tmp_path: Path, plugins: Plugins) -> None:
    root = tmp_path / "ws"
    write = {"tool": "write", "args": {"path": "digest/wiki/a.md", "content": "# A\n"}}
    own = script(root, "a.json", [write, {"answer": "done"}])
    with open_reme(
        root,
        plugins,
        "language=zh",
        "components.agent_wrapper.name=toolloop",
        f"pipelines.p.llm={{name: scripted, settings: {{path: '{own}'}}}}",
        "pipelines.p.steps=[{name: agentic}]",
    ) as reme:
        result = reme.run("p")
    assert result.outputs == {"changed": ["digest/wiki/a.md"], "language": "zh"}
    assert result.usage.calls == 2
    assert result.history is not None


def test_unknown_pipeline_model_names_its_key(tmp_path: Path, plugins: Plugins) -> None:
    with pytest.raises(ConfigError, match=r"pipelines\.p\.llm\.name"):
        open_reme(
            tmp_path / "ws",
            plugins,
            "pipelines.p.llm.name=no_such_model",
            "pipelines.p.steps=[{name: ask_model}]",
        )


def test_recorded_verbs_reach_the_result_history_and_cli(tmp_path: Path, plugins: Plugins) -> None:
    root = tmp_path / "ws"
    verbs = ["CREATE digest/wiki/x.md", "CORROBORATE digest/wiki/y.md"]
    with open_reme(root, plugins, "pipelines.r.steps=[{name: recorder}]") as reme:
        result = reme.run("r")
        assert result.verbs == verbs
        entry = reme.history.entries()[0]
    assert entry.run == result.history and entry.verbs == verbs
    assert entry.message == "reme run r"
    shown = CliRunner().invoke(cli, ["history", "-w", str(root)])
    assert shown.exit_code == 0, shown.output
    assert "\n    CREATE digest/wiki/x.md\n    CORROBORATE digest/wiki/y.md" in shown.output


def test_require_llm_says_how_to_configure_a_model(tmp_path: Path, plugins: Plugins) -> None:
    with open_reme(tmp_path / "ws", plugins, "pipelines.n.steps=[{name: needs_model}]") as reme:
        run = PipelineRun(reme=reme, name="n", llm=reme.llm_for("n"))
        with pytest.raises(ConfigError, match=r"the needs_model step needs a model") as info:
            run.require_llm("the needs_model step")
        assert "components.llm" in str(info.value) and "pipelines.n.llm" in str(info.value)
        with pytest.raises(ConfigError, match=r"needs_model.*components\.llm"):
            reme.run("n")
