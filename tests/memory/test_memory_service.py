"""The memory operations: one definition each, served over HTTP with the server's profile rules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from reme_core.service.operations import OPERATIONS
from tests.memory.support import open_workspace, scripted
from tests.server.api_support import Served, served

ANSWER = {"memories": [{"content": "Deploys on Tuesdays only.", "when_to_use": "Planning"}]}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("memory_api")
    # Two answers: one that validates, then garbage for the second call (retried, then refused).
    model = scripted(base, [ANSWER, "no JSON here", "still none", "nor here"])
    with served(base, model) as found:
        yield found


def test_operations_validate_the_scope_and_answer_json(tmp_path: Path):
    with open_workspace(tmp_path / "ws") as reme:
        added = OPERATIONS["memory_add"].call(
            reme, {"content": "Likes tea.", "user_name": "alice", "metadata": {"cups": 2}}
        )
        assert added["action"] == "added" and added["record"]["metadata"] == {"cups": 2}
        assert isinstance(added["record"]["created"], str)  # JSON-ready
        memory_id = added["record"]["memory_id"]
        got = OPERATIONS["memory_get"].call(reme, {"memory_id": memory_id, "user_name": "alice"})
        assert got["content"] == "Likes tea."
        for name, payload in [
            ("memory_delete_all", {}),
            ("memory_list", {"user_name": "alice", "tool_name": "grep"}),
            ("memory_retrieve", {"query": "tea"}),
            ("memory_add", {"content": "x", "user_name": "a", "allowed_paths": ["**"]}),
        ]:
            with pytest.raises(ValidationError):
                OPERATIONS[name].call(reme, payload)
        listed = OPERATIONS["memory_list"].call(reme, {"user_name": "alice"})
        assert [r["memory_id"] for r in listed["records"]] == [memory_id]


def test_profiles_apply_to_memory_operations(api: Served):
    added = api.post("memory_add", {"content": "Carol uses Emacs.", "user_name": "carol"}, "write")
    assert added.status_code == 200, added.text
    record = added.json()["record"]
    key = {"memory_id": record["memory_id"], "user_name": "carol"}

    refused = api.post("memory_add", {"content": "x", "user_name": "carol"}, token="read")
    assert refused.status_code == 403
    assert api.post("memory_get", key, token="read").json()["content"] == "Carol uses Emacs."
    assert api.post("memory_delete", key, token="write").status_code == 403
    assert api.post("memory_delete_all", {"user_name": "carol"}, token="write").status_code == 403

    no_scope = api.post("memory_delete_all", {}, token="admin")
    assert no_scope.status_code == 422 and "exactly one of" in no_scope.json()["error"]["message"]
    assert (api.project / record["path"]).exists()
    assert api.post("memory_delete", key, token="admin").json()["action"] == "deleted"
    assert not (api.project / record["path"]).exists()


def test_over_http_a_user_sees_only_their_own_records(api: Served):
    dave = api.post(
        "memory_add", {"content": "Erin's birthday is in May. Erin Erin.", "user_name": "dave"}
    ).json()["record"]
    erin = api.post("memory_add", {"content": "Likes hiking.", "user_name": "erin"}).json()
    found = api.post("memory_retrieve", {"query": "Erin birthday", "user_name": "erin"}, "read")
    assert found.status_code == 200 and found.json()["hits"] == []
    missing = api.post(
        "memory_get", {"memory_id": dave["memory_id"], "user_name": "erin"}, token="read"
    )
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NotFoundError"
    listed = api.post("memory_list", {"user_name": "erin"}, token="read").json()["records"]
    assert [r["memory_id"] for r in listed] == [erin["record"]["memory_id"]]


def test_summarize_over_http_uses_the_model_and_refuses_garbage(api: Served):
    messages = [{"role": "user", "content": "We only ever deploy on Tuesdays."}]
    done = api.post("memory_summarize", {"messages": messages, "task_name": "release"}, "write")
    assert done.status_code == 200, done.text
    assert [r["content"] for r in done.json()["added"]] == ["Deploys on Tuesdays only."]
    before = sorted((api.project / "digest/procedure").rglob("*.md"))
    garbage = api.post("memory_summarize", {"messages": messages, "task_name": "release"}, "write")
    assert garbage.status_code == 503 and garbage.json()["error"]["type"] == "LlmError"
    assert sorted((api.project / "digest/procedure").rglob("*.md")) == before
    empty = api.post("memory_summarize", {"messages": [], "task_name": "release"}, "write")
    assert empty.status_code == 422
