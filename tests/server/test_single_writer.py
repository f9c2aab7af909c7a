"""While `reme serve` owns a workspace, no CLI command writes it in-process: each goes through
the server or is refused, naming the server (as a second `reme serve` is)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner, Result
from conftest import KEYWORD_ONLY_ENV, copy_example

from reme_core.cli import cli, index_cmd
from reme_core.server.serve import Server
from tests.server.api_support import running_server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Server]]:
    workspace = tmp_path_factory.mktemp("single-writer") / "ws"
    copy_example(workspace)
    with running_server(workspace) as server:
        yield workspace, server


def reme(workspace: Path, *args: str, input: str | None = None, **env: str) -> Result:
    environment = {**KEYWORD_ONLY_ENV, "REME_TOKEN": "", "REME_LOCAL": "", **env}
    return CliRunner().invoke(cli, [*args, "-w", str(workspace)], env=environment, input=input)


def derived_state(workspace: Path) -> dict[str, int]:
    """Modification times of the keyword index files (what an in-process writer rewrites; not
    SQLite's -wal and -shm files, which a reader touches too)."""
    return {
        str(path.relative_to(workspace)): path.stat().st_mtime_ns
        for path in sorted((workspace / ".reme").rglob("*"))
        if path.is_file() and "bm25s" in path.parts and not path.name.endswith(("-wal", "-shm"))
    }


def refused(result: Result, server: Server) -> str:
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    assert server.url is not None and server.url in result.stderr, result.stderr
    assert "second writer" in result.stderr
    return result.stderr


@pytest.mark.parametrize(
    ("args", "advice"),
    [
        (("optimize",), "schedule"),
        (("index",), "watcher"),
        (("revert", "0000000"), "stop it first"),
    ],
)
def test_writing_commands_without_an_operation_are_refused(
    served: tuple[Path, Server], args: tuple[str, ...], advice: str
) -> None:
    workspace, server = served
    before = derived_state(workspace)
    message = refused(reme(workspace, *args), server)
    assert advice in message
    assert derived_state(workspace) == before


def test_watch_is_refused_instead_of_starting_a_second_watcher(
    served: tuple[Path, Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, server = served

    def interrupted(_: float) -> None:
        raise KeyboardInterrupt  # a watch that got this far would now end as if Ctrl-C

    monkeypatch.setattr(index_cmd, "time", SimpleNamespace(sleep=interrupted))
    message = refused(reme(workspace, "watch"), server)
    assert "watcher" in message
    assert "watching" not in message


def test_mcp_over_stdio_is_refused(served: tuple[Path, Server]) -> None:
    workspace, server = served
    message = refused(reme(workspace, "mcp"), server)
    assert f"{server.url}/mcp" in message


def test_reme_local_keeps_reads_in_process_and_refuses_writes(
    served: tuple[Path, Server],
) -> None:
    workspace, server = served
    note = "digest/wiki/larkspur-architecture.md"
    before = (workspace / note).read_bytes(), derived_state(workspace)
    shown = reme(workspace, "frontmatter", note, "--json", REME_LOCAL="1", REME_TOKEN="bogus")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["path"] == note
    links = reme(workspace, "links", note, "--json", REME_LOCAL="1")
    assert links.exit_code == 0, links.output
    searched = reme(workspace, "search", "larkspur", "--json", REME_LOCAL="1")
    assert searched.exit_code == 0 and json.loads(searched.stdout)["hits"], searched.output

    for args in (
        ("frontmatter", note, "--field", "status=archived"),
        ("edit", note, "--old", "Larkspur", "--new", "Lark"),
        ("run", "search", "--param", "query=deploy"),
        ("memory", "add", "prefers tea", "--user", "mira"),
        ("index",),
        ("reindex",),
    ):
        refused(reme(workspace, *args, REME_LOCAL="1"), server)
    assert ((workspace / note).read_bytes(), derived_state(workspace)) == before


def test_json_errors_are_one_object_on_stdout(served: tuple[Path, Server]) -> None:
    workspace, server = served
    result = reme(workspace, "optimize", "--json")
    assert result.exit_code != 0
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "ServerRunningError" and server.url in error["message"]
    assert result.stderr == ""


def test_reindex_goes_through_the_server(served: tuple[Path, Server]) -> None:
    # Last in this module: the server rebuilds its index, which the tests above compare.
    workspace, _ = served
    # With a token the server refuses, nothing is rebuilt: the call went to the server.
    assert reme(workspace, "reindex", REME_TOKEN="bogus").exit_code != 0
    result = reme(workspace, "reindex", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["indexed"] and report["removed"] == []
