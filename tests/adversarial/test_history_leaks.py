"""The version history under the hostile workspace of issue 20 (defect 1), over HTTP and MCP:
with a hard link to ``.reme/token`` in ``digest/wiki/t.md``, a ``.env`` holding
``AWS_SECRET_ACCESS_KEY``, ``private/credentials.json``, a binary ``.md`` and a note holding a
secret, a read token asks for ``history`` and ``history_show`` of every entry after a snapshot,
and no answer holds a canary."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.adversarial import probes as P

ENV_SECRET = "wJalrXUtnFEMI-env-canary-3f1c"
CREDENTIALS_CANARY = "credentials-canary-5e0b2"
BINARY_CANARY = "binary-canary-d41a"
NOTE_SECRET = "note-secret-canary-9b3e"


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[P.Target]:
    with P.served(tmp_path_factory.mktemp("history-leaks")) as served:
        root = served.workspace
        os.link(root / ".reme" / "token", root / "digest" / "wiki" / "t.md")
        (root / ".env").write_text(f"AWS_SECRET_ACCESS_KEY={ENV_SECRET}\n")
        (root / "private").mkdir()
        (root / "private" / "credentials.json").write_text(json.dumps({"k": CREDENTIALS_CANARY}))
        (root / "digest" / "wiki" / "blob.md").write_bytes(b"\0\1" + BINARY_CANARY.encode())
        written = served.post(
            "write",
            {"path": "digest/wiki/keys.md", "content": f"# Keys\nsecret_key = {NOTE_SECRET}\n"},
        )
        assert written.status_code == 200, written.text
        # A pipeline run snapshots the whole workspace first, as the scheduled flush does.
        run = served.post("auto_memory", {"session_id": "s1", "messages": []})
        assert run.status_code == 200, run.text
        served.canaries += [ENV_SECRET, CREDENTIALS_CANARY, BINARY_CANARY, NOTE_SECRET]
        yield served


def _entries(target: P.Target) -> list[dict[str, Any]]:
    answer = target.post("history", {"limit": 200}, token=target.reader)
    assert answer.status_code == 200, answer.text
    return answer.json()["entries"]


def test_the_history_holds_the_hostile_snapshot(target: P.Target) -> None:
    entries = _entries(target)
    files = {path for entry in entries for path in entry["files"]}
    # The suite sees the snapshot it probes, and the served notes are in it.
    assert "digest/wiki/keys.md" in files and any(e["kind"] == "baseline" for e in entries)
    assert P.TWIN_NFC in files  # a non-ASCII name listed as it is, not C-quoted by git
    assert not files & {
        "digest/wiki/t.md",
        ".env",
        "private/credentials.json",
        "digest/wiki/blob.md",
    }


def test_history_over_http_leaks_nothing_to_a_reader(target: P.Target) -> None:
    entries = _entries(target)
    assert entries
    texts = [json.dumps(entries)]
    for entry in entries:
        shown = target.post("history_show", {"run": entry["run"]}, token=target.reader)
        assert shown.status_code == 200, shown.text
        texts.append(shown.text)
    for path in ("digest/wiki/t.md", ".env", "private/credentials.json"):
        texts.append(target.post("history", {"path": path}, token=target.reader).text)
    leaked = [P._leaks(text, target.canaries) for text in texts]
    assert [found for found in leaked if found] == []
    assert any("[REDACTED:secret]" in text for text in texts)  # the note is there, redacted


def test_history_over_mcp_leaks_nothing_to_a_reader(target: P.Target) -> None:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    texts: list[str] = []

    async def scenario() -> None:
        headers = {"Authorization": f"Bearer {target.reader}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            Client(streamable_http_client(f"{target.url}/mcp", http_client=http)) as client,
        ):
            listed = await client.call_tool("history", {"limit": 200})
            assert not listed.is_error
            entries = listed.structured_content["entries"]
            assert entries
            texts.append(json.dumps(listed.structured_content))
            for entry in entries:
                shown = await client.call_tool("history_show", {"run": entry["run"]})
                assert not shown.is_error
                texts.append(json.dumps(shown.structured_content, default=str))
                texts.extend(getattr(c, "text", "") for c in shown.content)

    anyio.run(scenario)
    assert len(texts) > 2
    assert [
        P._leaks(text, target.canaries) for text in texts if P._leaks(text, target.canaries)
    ] == []
