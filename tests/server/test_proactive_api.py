"""The follow-ups over HTTP (``GET /api/v1/proactive``, ``proactive_run``), MCP (resource and
prompt) and the CLI (``reme proactive run|list --json``), with the token profiles enforced."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV, copy_example
from mcp import Client
from mcp.shared.exceptions import MCPError

from reme_core.api import topic_id
from reme_core.cli import cli
from reme_core.runtime import Reme
from reme_core.server.mcp_server import build_mcp_server
from reme_core.server.principal import LOCAL_ADMIN, Principal
from tests.server.api_support import plugins, running_server, served

NOTE = "daily/2026-11-12/session-onboarding-questions.md"
QUESTION = "Answer the onboarding questions left open"
TOPIC = topic_id(QUESTION, NOTE)
READER = Principal(token_id="r", profile="read", workspaces=frozenset({"default"}))
NOBODY = Principal(token_id="n", profile="read", workspaces=frozenset({"elsewhere"}))


def script(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    answer = {"new": [{"text": QUESTION, "kind": "task", "notes": [NOTE]}]}
    path.write_text(json.dumps([answer]), encoding="utf-8")
    return f"components.llm={{name: scripted, settings: {{path: {path}}}}}"


def test_get_lists_the_topics_and_the_run_needs_a_write_token(tmp_path: Path):
    with served(tmp_path / "srv", script(tmp_path)) as api:
        assert api.post("proactive_run", {"today": "2026-11-13"}, token="read").status_code == 403
        ran = api.post("proactive_run", {"today": "2026-11-13"}, token="write")
        assert ran.status_code == 200, ran.text
        assert ran.json()["outputs"]["new"] == [TOPIC]

        got = api.client.get("/api/v1/proactive", headers=api.headers("read"))
        assert got.status_code == 200, got.text
        body = got.json()
        assert [t["id"] for t in body["topics"]] == [TOPIC]
        assert body["topics"][0]["notes"] == ["[[daily/2026-11-12/session-onboarding-questions]]"]
        assert body["counts"] == {"open": 1, "resolved": 0, "snoozed": 0}
        assert QUESTION in body["note"] and body["path"] == "daily/_proactive.yaml"
        # The query string is the input, validated as the POST body would be.
        none = api.client.get("/api/v1/proactive?state=resolved", headers=api.headers("read"))
        assert none.status_code == 200 and none.json()["topics"] == []
        bad = api.client.get("/api/v1/proactive?state=later", headers=api.headers("read"))
        assert bad.status_code == 422 and "state" in bad.text
        assert api.client.get("/api/v1/proactive").status_code == 401
        other = api.client.get("/api/v1/proactive", headers=api.headers("global_read"))
        assert other.status_code == 403
        posted = api.post("proactive", {"state": "all"}, token="read")
        assert posted.json()["topics"] == body["topics"]


def test_mcp_serves_the_note_as_a_resource_and_a_prompt(tmp_path: Path):
    workspace = copy_example(tmp_path / "ws")
    with Reme.open(
        workspace, env=KEYWORD_ONLY_ENV, plugins=plugins(), overrides=[script(tmp_path)]
    ) as reme:
        reme.run("proactive", {"today": "2026-11-13"})

        async def scenario(principal: Principal) -> tuple:
            server = build_mcp_server(lambda _: reme, ["default"], fallback=principal)
            async with Client(server) as client:
                resources = (await client.list_resources()).resources
                prompts = (await client.list_prompts()).prompts
                if not resources:
                    return resources, prompts, None, None
                read = await client.read_resource(str(resources[0].uri))
                prompt = await client.get_prompt("proactive")
                return resources, prompts, read, prompt

        resources, prompts, read, prompt = anyio.run(scenario, READER)
        assert [str(r.uri) for r in resources] == ["reme://default/proactive"]
        assert [p.name for p in prompts] == ["proactive"]
        assert QUESTION in read.contents[0].text and read.contents[0].mime_type == "text/markdown"
        text = prompt.messages[0].content.text
        assert text.startswith("Follow-ups kept from earlier sessions") and QUESTION in text

        assert anyio.run(scenario, NOBODY)[:2] == ([], [])

        async def unknown() -> str:
            server = build_mcp_server(lambda _: reme, ["default"], fallback=LOCAL_ADMIN)
            async with Client(server) as client:
                try:
                    await client.read_resource("reme://other/proactive")
                except MCPError as exc:
                    return str(exc)
            return "served"

        assert "unknown workspace 'other'" in anyio.run(unknown)


def test_cli_run_and_list_with_json(tmp_path: Path, monkeypatch):
    workspace = copy_example(tmp_path / "ws")
    monkeypatch.setattr("reme_core.plugins._plugins", plugins())
    env = {**KEYWORD_ONLY_ENV, "REME_TOKEN": "", "REME_LOCAL": ""}

    def reme(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(cli, [*args, "-w", str(workspace)], env=env)
        return result.exit_code, result.output

    code, out = reme("proactive", "run", "--today", "2026-11-13", "--json")
    assert code == 2 and "proactive needs a model" in out  # off without a model
    code, out = reme(
        "proactive", "run", "--today", "2026-11-13", "--json", "--set", script(tmp_path)
    )
    assert code == 0, out
    assert json.loads(out)["outputs"]["new"] == [TOPIC]
    code, out = reme("proactive", "list", "--json")
    assert code == 0 and [t["id"] for t in json.loads(out)["topics"]] == [TOPIC]
    code, out = reme("proactive", "list", "--state", "all")
    assert code == 0 and f"{TOPIC}  open" in out and QUESTION in out


def test_cli_goes_through_a_running_server(tmp_path: Path):
    workspace = copy_example(tmp_path / "ws")
    env = {**KEYWORD_ONLY_ENV, "REME_TOKEN": "", "REME_LOCAL": ""}

    def reme(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(cli, [*args, "-w", str(workspace)], env=env)
        return result.exit_code, result.output

    with running_server(workspace, script(tmp_path)):
        code, out = reme("proactive", "run", "--json")
        assert code == 0, out
        ran = json.loads(out)
        assert ran["outputs"]["new"] == [TOPIC] and ran["history"]  # the server's own run
        code, out = reme("proactive", "list", "--json")
        assert code == 0 and [t["id"] for t in json.loads(out)["topics"]] == [TOPIC]
    assert QUESTION in (workspace / "daily" / "_proactive.md").read_text(encoding="utf-8")


def test_a_run_waits_for_the_pipelines_lock_and_is_listed_in_status(tmp_path: Path):
    import threading

    with served(tmp_path / "srv", script(tmp_path)) as api:
        lock = api.registry.serial("default", "proactive")  # what the 18:00 job and `run` hold
        lock.acquire()
        answers: list[int] = []
        caller = threading.Thread(
            target=lambda: answers.append(api.post("proactive_run", token="write").status_code)
        )
        caller.start()
        caller.join(1.0)
        assert caller.is_alive() and answers == []  # waits while the pipeline runs elsewhere
        lock.release()
        caller.join(30)
        assert answers == [200]
        runs = api.post("status").json()["server"]["last_runs"]
        assert runs[0]["operation"] == "proactive_run" and runs[0]["ok"] is True
