"""`reme run NAME` beside a running server sends the run to it (operation `run`), for any
configured pipeline, with the same `--json` shape as an in-process run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV

from reme_core.cli import cli
from reme_core.server.auth import TokenStore
from reme_core.server.serve import Server
from reme_core.workspace import init_workspace
from tests.server.api_support import running_server

NOTE = "digest/wiki/deploy.md"
TEXT = "# Deploy\n\nThe blue-green deploy stalled on the health check.\n"


def workspace_with_script(root: Path) -> tuple[Path, list[str]]:
    """A fresh workspace holding one note and a scripted model's answer tagging it; the
    settings that make auto_tag propose with that model."""
    init_workspace(root)
    (root / NOTE).parent.mkdir(parents=True, exist_ok=True)
    (root / NOTE).write_text(TEXT, encoding="utf-8")
    script = root.parent / f"{root.name}-tags.json"
    script.write_text(json.dumps([{"notes": [{"path": NOTE, "tags": ["deploy"]}]}]))
    return root, [
        "pipelines.auto_tag.review=queue",
        f"components.llm={{name: scripted, settings: {{path: {script}}}}}",
    ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Server]]:
    workspace, settings = workspace_with_script(tmp_path_factory.mktemp("run") / "ws")
    with running_server(workspace, *settings) as server:
        yield workspace, server


def reme(workspace: Path, *args: str, **env: str) -> tuple[int, str]:
    environment = {**KEYWORD_ONLY_ENV, "REME_TOKEN": "", "REME_LOCAL": "", **env}
    result = CliRunner().invoke(cli, [*args, "-w", str(workspace)], env=environment)
    return result.exit_code, result.output


def test_a_proposing_pipeline_runs_on_the_server_with_the_local_json_shape(
    served: tuple[Path, Server], tmp_path: Path
):
    workspace, _ = served
    code, out = reme(workspace, "run", "auto_tag", "--json")
    assert code == 0, out
    remote = json.loads(out)
    assert remote["pipeline"] == "auto_tag" and remote["usage"]["calls"] == 1
    proposal = remote["outputs"]["tag_proposals"][NOTE]
    assert (workspace / NOTE).read_text() == TEXT  # proposed, not written
    code, out = reme(workspace, "review", "list", "--json")
    assert code == 0 and [p["id"] for p in json.loads(out)["proposals"]] == [proposal], out

    # The same run in-process, on a workspace no server serves: the same JSON shape.
    local_ws, settings = workspace_with_script(tmp_path / "local")
    sets = [arg for setting in settings for arg in ("--set", setting)]
    code, out = reme(local_ws, "run", "auto_tag", *sets, "--json")
    assert code == 0, out
    local = json.loads(out)
    assert set(local) == set(remote)
    assert set(local["outputs"]) == set(remote["outputs"])
    assert [s["name"] for s in local["steps"]] == [s["name"] for s in remote["steps"]]


def test_an_unknown_pipeline_is_refused_by_the_server_naming_it(served: tuple[Path, Server]):
    workspace, _ = served
    code, out = reme(workspace, "run", "no_such_pipeline")
    assert code != 0 and "no_such_pipeline" in out and "auto_tag" in out, out


def test_a_write_token_cannot_run_an_arbitrary_pipeline(served: tuple[Path, Server]):
    workspace, _ = served
    _, secret = TokenStore(workspace / ".reme").create("write", ["default"])
    before = sorted(p.name for p in (workspace / ".reme" / "proposals").glob("*"))
    code, out = reme(workspace, "run", "auto_tag", REME_TOKEN=secret)
    assert code != 0 and "admin" in out, out
    assert sorted(p.name for p in (workspace / ".reme" / "proposals").glob("*")) == before
