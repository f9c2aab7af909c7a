"""``search.date_boost``: dates the query names, resolved against ``as_of``, move dated notes up."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV
from pydantic import ValidationError

from reme_core.cli import cli
from reme_core.pipelines.engine import PipelineError
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.service.note_ops import SearchInput
from reme_core.service.operations import OPERATIONS
from reme_core.workspace.layout import init_workspace

HIKE_APRIL = "daily/2024-04-02/walk.md"
HIKE_MAY = "daily/2024-05-11/walk.md"
QUESTION = "where did we hike last Saturday"
WEDNESDAY = dt.date(2024, 5, 15)  # "last Saturday" = 2024-05-11


def _note(root: Path, path: str, day: str, body: str) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"---\ndate: {day}\n---\n{body}\n", "utf-8")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    init_workspace(root)
    # The April note matches the query's words more strongly; only its date is wrong.
    _note(root, HIKE_APRIL, "2024-04-02", "A long hike, the best hike and hike of the spring.")
    _note(root, HIKE_MAY, "2024-05-11", "A short hike by the river with Ana.")
    _note(root, "daily/2024-05-14/groceries.md", "2024-05-14", "Bought bread and tea.")
    return root


def _open(root: Path, *overrides: str) -> Reme:
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    plugins.collect()
    return Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=list(overrides))


def _order(reme: Reme, query: str, **kwargs: object) -> list[str]:
    return [h.path for h in reme.search(query, expand=False, **kwargs).hits]  # type: ignore[arg-type]


def test_default_off_ranks_as_the_arms_do(workspace: Path) -> None:
    with _open(workspace) as reme:
        reme.index()
        assert _order(reme, QUESTION, as_of=WEDNESDAY)[:2] == [HIKE_APRIL, HIKE_MAY]


def test_the_boost_prefers_the_day_the_question_names(workspace: Path) -> None:
    with _open(workspace, "search.date_boost=0.3") as reme:
        reme.index()
        assert _order(reme, QUESTION, as_of=WEDNESDAY)[:2] == [HIKE_MAY, HIKE_APRIL]
        # Asked on 10 April 2024, "last Saturday" is 6 April: no hike that day, the arms decide.
        assert _order(reme, QUESTION, as_of=dt.date(2024, 4, 10))[:2] == [HIKE_APRIL, HIKE_MAY]
        # Scores stay on the fused 0..1 scale, so min_score means what it did.
        response = reme.search(QUESTION, as_of=dt.date(2024, 4, 10), expand=False)
        assert all(0.0 <= h.score <= 1.0 for h in response.hits)
        # A query naming no date is ranked as without the boost.
        assert _order(reme, "hike", as_of=WEDNESDAY)[0] == HIKE_APRIL


def test_as_of_defaults_to_today(workspace: Path) -> None:
    today = dt.date.today()
    _note(workspace, f"daily/{today.isoformat()}/hike.md", today.isoformat(), "A hike.")
    with _open(workspace, "search.date_boost=0.5") as reme:
        reme.index()
        assert _order(reme, "the hike today")[0] == f"daily/{today.isoformat()}/hike.md"


def test_the_search_step_takes_as_of_as_a_param(workspace: Path) -> None:
    with _open(workspace, "search.date_boost=0.3") as reme:
        reme.index()
        result = reme.run("search", {"query": QUESTION, "as_of": "2024-05-15", "expand": False})
        assert result.outputs["search"]["hits"][0]["path"] == HIKE_MAY
        with pytest.raises(PipelineError, match="as_of must be a date as YYYY-MM-DD, got 'May 15'"):
            reme.run("search", {"query": QUESTION, "as_of": "May 15"})


def test_search_input_refuses_a_bad_as_of() -> None:
    assert SearchInput(query="x", as_of="2024-05-15").as_of == WEDNESDAY  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="as_of"):
        SearchInput(query="x", as_of="2024-02-30")  # type: ignore[arg-type]


def test_cli_as_of(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REME_SEARCH__DATE_BOOST", "0.3")
    base = ["search", QUESTION, "--no-expand", "--workspace", str(workspace), "--json"]
    result = CliRunner().invoke(cli, [*base, "--as-of", "2024-05-15"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["hits"][0]["path"] == HIKE_MAY
    bad = CliRunner().invoke(cli, [*base, "--as-of", "2024-02-30"], catch_exceptions=False)
    assert bad.exit_code != 0
    assert "'2024-02-30' is not a date (YYYY-MM-DD)" in bad.output
    assert "Traceback" not in bad.output


def test_the_search_operation_passes_as_of_on(workspace: Path) -> None:
    """The operation HTTP and MCP call: ``as_of`` as JSON gives it a string."""
    with _open(workspace, "search.date_boost=0.3") as reme:
        reme.index()
        op = OPERATIONS["search"]
        hits = op.call(reme, {"query": QUESTION, "as_of": "2024-05-15", "expand": False})["hits"]
        assert hits[0]["path"] == HIKE_MAY
        hits = op.call(reme, {"query": QUESTION, "as_of": "2024-04-10", "expand": False})["hits"]
        assert hits[0]["path"] == HIKE_APRIL
        with pytest.raises(ValidationError, match="as_of"):
            op.call(reme, {"query": QUESTION, "as_of": "last week"})
