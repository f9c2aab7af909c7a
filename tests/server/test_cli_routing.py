"""With a server running for the workspace, CLI commands go through it; otherwise in-process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV, copy_example

from reme_core.cli import cli
from reme_core.server.auth import TokenStore
from reme_core.server.serve import Server
from tests.server.api_support import running_server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Server]]:
    workspace = tmp_path_factory.mktemp("routing") / "ws"
    copy_example(workspace)
    with running_server(workspace) as server:
        yield workspace, server


def reme(workspace: Path, *args: str, **env: str) -> tuple[int, str]:
    runner = CliRunner()
    environment = {**KEYWORD_ONLY_ENV, "REME_TOKEN": "", "REME_LOCAL": "", **env}
    result = runner.invoke(cli, [*args, "-w", str(workspace)], env=environment)
    return result.exit_code, result.output


def test_commands_go_through_the_running_server(served: tuple[Path, Server]):
    workspace, _ = served
    code, out = reme(
        workspace, "write", "daily/2026-11-29/routed.md", "--content", "# R\n\nokapi\n", "--json"
    )
    assert code == 0, out
    assert json.loads(out)["created"]
    code, out = reme(workspace, "search", "okapi", "--json")
    assert code == 0 and json.loads(out)["hits"][0]["path"] == "daily/2026-11-29/routed.md"
    code, out = reme(workspace, "read", "daily/2026-11-29/routed.md")
    assert code == 0 and "okapi" in out
    code, out = reme(workspace, "status", "--json")
    assert code == 0 and json.loads(out)["files"] > 0


def test_a_narrower_token_is_enforced_on_cli_calls(served: tuple[Path, Server]):
    workspace, _ = served
    _, secret = TokenStore(workspace / ".reme").create("read", ["default"])
    code, out = reme(workspace, "search", "deploy", REME_TOKEN=secret)
    assert code == 0, out
    code, out = reme(
        workspace, "write", "daily/2026-11-29/nope.md", "--content", "# no\n", REME_TOKEN=secret
    )
    assert code != 0 and "write" in out
    assert not (workspace / "daily/2026-11-29/nope.md").exists()


def test_reme_local_reads_in_process_but_never_writes_beside_the_server(
    served: tuple[Path, Server],
):
    workspace, server = served
    # A token the server would refuse: a command that answers used no server.
    code, out = reme(workspace, "read", "digest/wiki/larkspur-architecture.md", REME_TOKEN="bogus")
    assert code != 0
    code, out = reme(
        workspace,
        "read",
        "digest/wiki/larkspur-architecture.md",
        REME_TOKEN="bogus",
        REME_LOCAL="1",
    )
    assert code == 0, out
    code, out = reme(workspace, "search", "deploy", "--json", REME_TOKEN="bogus", REME_LOCAL="1")
    assert code == 0 and json.loads(out)["hits"], out

    # A write in-process would be a second writer beside the server: refused, naming it.
    for env, extra in (({"REME_LOCAL": "1"}, ()), ({}, ("--set", "search.limit=3"))):
        code, out = reme(
            workspace, "write", "daily/2026-11-29/local.md", "--content", "# L\n", *extra, **env
        )
        assert code != 0 and server.url in out and "second writer" in out, out
        assert not (workspace / "daily/2026-11-29/local.md").exists()
