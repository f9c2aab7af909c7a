"""A real `reme serve` under hostile input, over HTTP and MCP (issue 12).

Every path-bearing field of every operation gets every value of the table in probes.py; each
answer must be below 500, contain no byte of a file outside the policy (the server's token, the
token hashes, .git/config, a file outside the workspace), and leave the disk as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adversarial import probes as P


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[P.Target]:
    with P.served(tmp_path_factory.mktemp("adversarial")) as served:
        yield served


@pytest.fixture(scope="module")
def table(target: P.Target) -> list[P.Probe]:
    return P.probes(target.workspace, target.outside)


def test_the_leak_detector_sees_a_canary(target: P.Target) -> None:
    # Guards the suite itself: a note holding a canary, read back, must count as a leak, and a
    # plain read must be answered (the server is not refusing everything).
    note = "digest/wiki/canary-check.md"
    assert target.post("write", {"path": note, "content": f"# c\n{P.OUTSIDE_CANARY}\n"}).is_success
    try:
        answer = target.post("read", {"path": note})
        assert answer.status_code == 200
        assert P._leaks(answer.text, target.canaries)
        assert target.post("read", {"path": P.EXISTING}).status_code == 200
    finally:
        target.post("delete", {"path": note})


def test_every_probe_over_http_with_an_admin_token(target: P.Target, table: list[P.Probe]) -> None:
    outcomes = P.run_http(target, table)
    assert len(outcomes) > 250
    assert P.failures(outcomes) == []
    print("\n" + P.summary({"http (admin)": outcomes}))


def test_link_probes_with_a_read_token(target: P.Target, table: list[P.Probe]) -> None:
    links = ("symlink", "hard link", ".reme", "history.git", ".git")
    reads = [
        p
        for p in table
        if p.op in ("read", "stat", "list", "traverse", "search") and p.label.startswith(links)
    ]
    assert len(reads) > 30
    outcomes = P.run_http(target, reads, token=target.reader)
    assert P.failures(outcomes) == []


def test_every_probe_over_mcp(target: P.Target, table: list[P.Probe]) -> None:
    outcomes = P.run_mcp(target, table)
    assert len(outcomes) > 250
    assert P.failures(outcomes) == []


def test_symlink_to_the_token_is_refused_for_a_reader(target: P.Target) -> None:
    # The reported attack, as reported: a read token asks for a link to .reme/token.
    answer = target.post("read", {"path": "daily/link-token.md"}, token=target.reader)
    assert answer.status_code == 403
    assert target.admin not in answer.text
    hits = target.post("search", {"query": target.admin}, token=target.reader).json()["hits"]
    assert all(target.admin not in hit["text"] for hit in hits)


def test_the_server_still_answers_after_the_probes(target: P.Target) -> None:
    assert target.post("search", {"query": "deploy"}).status_code == 200
    assert isinstance(Path(target.workspace / ".reme" / "token").read_text(), str)
