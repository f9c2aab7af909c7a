"""reme-hermes without Hermes: settings, turns, the spool, failures, and embedded mode on a real
workspace. (test_hermes_host.py runs the provider inside the real Hermes.)

``reme_hermes`` is imported from the checkout's ``integrations/hermes`` folder; ``provider.py``
(which subclasses Hermes' own ABC) is left to the host test.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integrations" / "hermes"))

from reme_hermes.backends import EmbeddedBackend, HttpBackend, RemeUnavailable
from reme_hermes.memory import READ_TOOL, SEARCH_TOOL, RemeMemory
from reme_hermes.settings import (
    HermesSettings,
    SettingsError,
    http_target,
    load_settings,
    write_settings,
)
from reme_hermes.spool import Pending, Spool
from reme_hermes.turns import reme_session_id, turns_from

from tests.integrations import hosts

FACT = "The larkspur kiln key hangs behind the blue enamel door, tag 7Q-ORCHID."


# -- settings -----------------------------------------------------------------------------------


def test_settings_come_from_reme_json_then_the_environment(tmp_path: Path) -> None:
    write_settings(tmp_path, {"mode": "http", "url": "http://127.0.0.1:9", "token": "secret"})
    stored = json.loads((tmp_path / "reme.json").read_text())
    assert stored["url"] == "http://127.0.0.1:9" and "token" not in stored  # never written
    settings = load_settings(tmp_path, {"REME_URL": "http://127.0.0.1:7", "REME_TOKEN": "t"})
    assert (settings.url, settings.token) == ("http://127.0.0.1:7", "t")
    assert load_settings(tmp_path, {}).token is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "cannot read"),
        ("[]", "JSON object"),
        ('{"mode": "ftp"}', "mode"),
        ('{"recall_limit": -1}', "recall_limit"),
        ('{"colour": "blue"}', "colour"),
    ],
)
def test_bad_settings_are_one_clear_error(tmp_path: Path, content: str, expected: str) -> None:
    (tmp_path / "reme.json").write_text(content)
    with pytest.raises(SettingsError, match=expected):
        load_settings(tmp_path, {})


def test_http_target_reads_the_servers_discovery_file(tmp_path: Path) -> None:
    state = tmp_path / "ws" / ".reme"
    state.mkdir(parents=True)
    (state / "token").write_text("admin-secret\n")
    found = {
        "url": "http://127.0.0.1:4444",
        "workspace": "notes",
        "token_file": str(state / "token"),
    }
    (state / "server.json").write_text(json.dumps(found))
    settings = HermesSettings(workspace=tmp_path / "ws")
    assert http_target(settings) == ("http://127.0.0.1:4444", "admin-secret", "notes")
    given = HermesSettings(workspace=tmp_path / "ws", url="http://127.0.0.1:1/", token="mine")
    assert http_target(given) == ("http://127.0.0.1:1", "mine", "notes")


# -- turns --------------------------------------------------------------------------------------


def test_turns_keep_text_only_with_ids_stable_across_resends() -> None:
    first = [
        {"role": "system", "content": "You are Hermes."},
        {"role": "user", "content": "Where?\n\n<memory-context>\nrecalled\n</memory-context>"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"hits": []}'},
        {"role": "assistant", "content": [{"type": "text", "text": "Behind the door."}]},
    ]
    turns = turns_from(first)
    assert [(t["role"], t["content"]) for t in turns] == [
        ("user", "Where?"),
        ("assistant", "Behind the door."),
    ]
    later = turns_from(
        [*first, {"role": "user", "content": "ok"}, {"role": "assistant", "content": "ok"}]
    )
    assert later[:2] == turns  # the same ids: reme adds only the two new turns
    assert len({t["id"] for t in later}) == 4  # "ok" twice is still two turns


def test_session_ids_are_safe_file_names() -> None:
    assert reme_session_id("20261203_183909_f8d2f3") == "hermes-20261203_183909_f8d2f3"
    assert reme_session_id("../a b/c") == "hermes-..-a-b-c"
    assert len(reme_session_id("x" * 500)) == 128


# -- the provider's logic, with a backend that fails on demand ------------------------------------


class FlakyBackend:
    where = "fake"

    def __init__(self) -> None:
        self.down: str | None = None
        self.saved: dict[str, list[dict[str, str]]] = {}

    def _check(self) -> None:
        if self.down:
            raise RemeUnavailable(self.down)

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        self._check()
        return [
            {"path": "notes/kiln.md", "start_line": 1, "end_line": 3, "score": 1.0, "text": FACT}
        ]

    def read(self, path: str, start_line: int, end_line: int | None) -> dict[str, Any]:
        self._check()
        return {"path": path, "content": FACT}

    def capture(self, session_id: str, turns: list[dict[str, str]], flush: bool) -> dict[str, Any]:
        self._check()
        known = self.saved.setdefault(session_id, [])
        added = [t for t in turns if t not in known]
        known += added
        return {"status": "unsummarised", "note": "daily/x.md", "added": len(added)}

    def close(self) -> None:
        pass


def _memory(tmp_path: Path) -> tuple[RemeMemory, FlakyBackend]:
    backend = FlakyBackend()
    memory = RemeMemory(HermesSettings(token="t"), tmp_path, backend=lambda _: backend)
    memory.session_id = "s1"
    return memory, backend


def _log(tmp_path: Path) -> list[str]:
    path = tmp_path / "logs" / "reme.log"
    return path.read_text().splitlines() if path.exists() else []


def test_a_failed_capture_is_logged_once_kept_and_sent_by_the_next(tmp_path: Path) -> None:
    memory, backend = _memory(tmp_path)
    turn = [{"role": "user", "content": "Where?"}, {"role": "assistant", "content": "There."}]
    backend.down = "cannot reach reme at http://127.0.0.1:9"
    memory.capture("s1", turn)
    memory.capture("s1", turn, flush=True)  # the same failure again: no second line
    problems = [line for line in _log(tmp_path) if "WARNING" in line]
    assert len(problems) == 1 and "hermes-s1: not saved, cannot reach reme" in problems[0]
    assert [p.session_id for p in memory.spool.waiting()] == ["hermes-s1"]
    assert backend.saved == {}
    # A later session, reme back: the kept session goes first, then the new one.
    backend.down = None
    memory.capture("s2", [{"role": "user", "content": "Next"}])
    assert list(backend.saved) == ["hermes-s1", "hermes-s2"]
    assert [t["content"] for t in backend.saved["hermes-s1"]] == ["Where?", "There."]
    assert memory.spool.waiting() == []
    assert "hermes-s1: unsummarised daily/x.md (2 new turn(s))" in _log(tmp_path)[-2]


def test_recall_and_tools_fail_soft(tmp_path: Path) -> None:
    memory, backend = _memory(tmp_path)
    block = memory.recall("kiln key")
    assert (
        block.startswith("From reme") and "[notes/kiln.md#L1-L3]" in block and "7Q-ORCHID" in block
    )
    found = json.loads(memory.tool(SEARCH_TOOL, {"query": "kiln", "limit": 99}))
    assert found["hits"][0]["path"] == "notes/kiln.md"
    assert json.loads(memory.tool(READ_TOOL, {"path": "notes/kiln.md"}))["content"] == FACT
    assert "error" in json.loads(memory.tool(SEARCH_TOOL, {"query": " "}))
    assert "error" in json.loads(memory.tool(SEARCH_TOOL, {"query": "x", "limit": "many"}))
    backend.down = "reme at fake refused the token (HTTP 401: bad token)"
    assert memory.recall("kiln key") == ""
    assert "HTTP 401" in json.loads(memory.tool(SEARCH_TOOL, {"query": "kiln"}))["error"]
    problems = [line for line in _log(tmp_path) if "WARNING" in line]
    assert len(problems) == 1 and "recall skipped" in problems[0]  # the tool's is the same cause
    backend.down = None
    memory.recall("kiln key")  # a success: the next failure is told again
    backend.down = "reme at fake refused the token (HTTP 401: bad token)"
    memory.tool(SEARCH_TOOL, {"query": "kiln"})
    assert len([line for line in _log(tmp_path) if "WARNING" in line]) == 2


def test_only_the_primary_agent_captures(tmp_path: Path) -> None:
    memory, backend = _memory(tmp_path)
    memory.primary = False
    memory.capture("s1", [{"role": "user", "content": "from a subagent"}])
    assert backend.saved == {} and memory.spool.waiting() == []


def test_without_a_token_http_mode_is_not_available(tmp_path: Path) -> None:
    memory = RemeMemory(HermesSettings(), tmp_path)
    assert "REME_TOKEN" in (memory.problem() or "")
    assert "workspace" in (RemeMemory(HermesSettings(mode="embedded"), tmp_path).problem() or "")


def test_an_unreadable_spool_file_is_left_for_a_person(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    spool.put(Pending(session_id="hermes-a", turns=[{"id": "1", "role": "user", "content": "x"}]))
    (tmp_path / "hermes-b.json").write_text("{half")
    assert [p.session_id for p in spool.waiting()] == ["hermes-a"]
    assert spool.broken() == [tmp_path / "hermes-b.json"]
    assert (tmp_path / "hermes-a.json").stat().st_mode & 0o777 == 0o600


# -- http errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, "refused the token (HTTP 401: bad token)"),
        (403, "refused auto_memory (HTTP 403: bad token); capture needs a token with the write"),
        (500, "answered auto_memory with HTTP 500: bad token"),
    ],
)
def test_http_errors_name_the_fix(status: int, expected: str) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == "Bearer tok"
        return httpx.Response(status, json={"error": {"type": "X", "message": "bad token"}})

    backend = HttpBackend("http://127.0.0.1:9", "tok", transport=httpx.MockTransport(answer))
    with pytest.raises(RemeUnavailable, match=re.escape(expected)):
        backend.capture("hermes-s1", [], flush=False)


def test_http_down_says_so() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    backend = HttpBackend("http://127.0.0.1:9", "tok", transport=httpx.MockTransport(refuse))
    with pytest.raises(RemeUnavailable, match=re.escape("cannot reach reme at http://127.0.0.1:9")):
        backend.search("kiln", 5)


@pytest.mark.parametrize("head", [False, True], ids=["never-answers", "stalls-after-headers"])
def test_a_silent_server_costs_one_timeout_and_the_turns_are_kept(
    tmp_path: Path, head: bool
) -> None:
    with hosts.silent_server(head=head) as url:
        memory = RemeMemory(HermesSettings(url=url, token="t", timeout_s=0.3), tmp_path)
        memory.session_id = "s1"
        done: dict[str, Any] = {}

        def reply() -> None:  # what Hermes calls around one reply, then the next session's
            done["recall"] = memory.recall("kiln key")
            done["tool"] = json.loads(memory.tool(SEARCH_TOOL, {"query": "kiln"}))
            memory.capture("s1", [{"role": "user", "content": "Where?"}])
            memory.capture("s2", [{"role": "user", "content": "Next"}])

        worker = threading.Thread(target=reply, daemon=True)
        worker.start()
        worker.join(20)  # four calls of 0.3 s each; without timeout_s, httpx's 10 s default
        assert not worker.is_alive(), "calls to a server that does not answer did not time out"
    assert done["recall"] == ""
    assert "ReadTimeout" in done["tool"]["error"] and url in done["tool"]["error"]
    assert [p.session_id for p in memory.spool.waiting()] == ["hermes-s1", "hermes-s2"]
    problems = [line for line in _log(tmp_path) if "WARNING" in line]
    assert "recall skipped: cannot reach reme" in problems[0] and "ReadTimeout" in problems[0]
    # The second capture stopped at its first timeout (hermes-s1): hermes-s2 was not tried.
    not_saved = [line for line in problems if "not saved" in line]
    assert len(not_saved) == 1 and "hermes-s1: not saved" in not_saved[0]


# -- embedded, on a real workspace ------------------------------------------------------------------


def test_embedded_backend_recalls_and_captures(tmp_path: Path) -> None:
    workspace = hosts.one_note_workspace(tmp_path / "ws", FACT)
    backend = EmbeddedBackend(workspace)
    try:
        hits = backend.search("larkspur kiln key", 3)
        assert hits[0]["path"] == "notes/kiln.md" and "7Q-ORCHID" in hits[0]["text"]
        assert "7Q-ORCHID" in backend.read("notes/kiln.md", 1, None)["content"]
        turns = turns_from(
            [{"role": "user", "content": "Where?"}, {"role": "assistant", "content": FACT}]
        )
        first = backend.capture("hermes-e1", turns, flush=False)
        again = backend.capture("hermes-e1", turns, flush=True)
    finally:
        backend.close()
    assert first["added"] == 2 and first["note"].startswith("daily/")
    assert again["added"] == 0
    assert len((workspace / "sessions" / "hermes-e1.jsonl").read_text().splitlines()) == 2


def test_embedded_backend_on_a_folder_that_is_no_workspace(tmp_path: Path) -> None:
    with pytest.raises(RemeUnavailable, match="is not a reme workspace: run `reme init"):
        EmbeddedBackend(tmp_path).search("x", 1)


# -- reme-hermes install --------------------------------------------------------------------------


def test_install_copies_the_plugin_folder_writes_settings_and_undoes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from reme_hermes import install

    home = tmp_path / "hermes"
    args = ["--hermes-home", str(home), "install", "--url", "http://127.0.0.1:2333"]
    assert install.main(args) == 0
    printed = capsys.readouterr().out
    plugin = home / "plugins" / "reme"
    assert (plugin / "__init__.py").read_bytes() == (
        install.PLUGIN_SOURCE / "__init__.py"
    ).read_bytes()
    assert "kind: exclusive" in (plugin / "plugin.yaml").read_text()
    assert json.loads((home / "reme.json").read_text()) == {
        **HermesSettings().public(),
        "url": "http://127.0.0.1:2333",
    }
    # Outside Hermes' environment there is no Hermes config writer: the command says what to run.
    assert "run: hermes config set memory.provider reme" in printed
    assert not (home / "logs").exists()  # the plugin module was not imported along the way
    assert install.main(args) == 0  # a rerun changes no file
    again = capsys.readouterr().out
    assert f"wrote {plugin}" not in again  # the plugin files were already there
    assert install.main(["--hermes-home", str(home), "uninstall"]) == 0
    assert not plugin.exists() and (home / "reme.json").is_file()
    with pytest.raises(SystemExit):
        install.main(["--hermes-home", str(home), "install", "--mode", "ftp"])


def test_install_refuses_bad_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from reme_hermes import install

    home = tmp_path / "hermes"
    home.mkdir()
    (home / "reme.json").write_text("[]")
    assert install.main(["--hermes-home", str(home), "install"]) == 1
    assert "JSON object" in capsys.readouterr().err
    assert not (home / "plugins").exists()  # nothing changed
