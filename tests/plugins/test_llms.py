"""The shipped LLMs: the Llm conformance suite for each, plus what is specific to each.

The OpenAI client talks to a fake OpenAI-compatible chat server on 127.0.0.1 that answers with
scripted texts and can be scripted to fail; the scripted LLM reads JSON and YAML files. The cached
LLM's own behaviour is tested in tests/bench/test_llm_cached.py; here, where it finds its inner model.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD_ONLY_ENV
from pydantic import BaseModel, ValidationError

from reme_core import plugins as plugin_module
from reme_core.components import ComponentContext, Llm
from reme_core.errors import ConfigError, LlmError
from reme_core.plugins import Plugins, load_plugins
from reme_core.runtime import Reme
from reme_core.testing.llm import MESSAGES, VALID, LlmConformance, Person
from reme_plugins import llm_openai, llm_scripted
from reme_plugins.llm_cached import CachedLlm
from reme_plugins.llm_openai import OpenAILlm, extract_json
from reme_plugins.llm_scripted import ScriptedLlm
from tests.fake_llm import RecordingLlm, plugins_with, write_script
from tests.fake_openai_server import ScriptedServer, Send

# -- registration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "name", "cls"),
    [(llm_openai, "openai", OpenAILlm), (llm_scripted, "scripted", ScriptedLlm)],
)
def test_registers_llm(module, name, cls) -> None:
    plugins = Plugins()
    plugins.register(module, name=module.__name__)
    assert plugins.get("llm", name) is cls


@pytest.mark.parametrize(("cls", "required"), [(OpenAILlm, "model"), (ScriptedLlm, "path")])
def test_settings_reject_unknown_keys(cls, required) -> None:
    with pytest.raises(ValidationError, match="no_such_key"):
        cls.Settings.model_validate({required: "x", "no_such_key": 1})


# -- openai: a fake OpenAI-compatible chat server ----------------------------------------------


class FakeChatServer(ScriptedServer):
    """``POST /v1/chat/completions`` answering scripted texts with usage.

    Actions: ``("text", content)``, ``("tool", arguments_json)``, ``("status", code, headers)``,
    ``("garbage", body)``, ``("delay", seconds)`` (then "ok").
    """

    route = "/v1/chat/completions"
    default_action = ("text", "ok")

    def answer(self, send: Send, body: dict[str, Any], action: tuple[Any, ...]) -> None:
        kind = action[0]
        if kind == "status":
            code, headers = action[1], action[2] if len(action) > 2 else {}
            return send(code, json.dumps({"error": {"message": f"scripted {code}"}}), headers)
        if kind == "garbage":
            return send(200, action[1])
        if kind == "delay":
            time.sleep(action[1])
        message: dict[str, Any] = {"role": "assistant", "content": "ok"}
        if kind == "text":
            message["content"] = action[1]
        elif kind == "tool":
            name = body["tools"][0]["function"]["name"]
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": action[1]},
                    }
                ],
            }
        prompt = sum(len(str(m.get("content") or "")) for m in body["messages"])
        completion = len(message["content"] or action[1])
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt // 4 + 1,
                "completion_tokens": completion // 4 + 1,
                "total_tokens": prompt // 4 + completion // 4 + 2,
            },
        }
        return send(200, json.dumps(reply))

    def texts(self, *contents: str) -> None:
        with self._lock:
            self.script.extend(("text", c) for c in contents)


@pytest.fixture(scope="module")
def fake_server() -> Iterator[FakeChatServer]:
    server = FakeChatServer()
    yield server
    server.close()


@pytest.fixture
def server(fake_server: FakeChatServer) -> FakeChatServer:
    fake_server.reset()
    return fake_server


@pytest.fixture
def make_openai(server: FakeChatServer) -> Iterator[Any]:
    made: list[OpenAILlm] = []

    def make(**settings: Any) -> OpenAILlm:
        values = {"base_url": server.url, "model": "fake-chat", "retry_base_delay": 0.0}
        llm = OpenAILlm(OpenAILlm.Settings(**(values | settings)))
        made.append(llm)
        return llm

    yield make
    for llm in made:
        llm.close()


@pytest.mark.parametrize("mode", ["json_schema", "json", "tools"])
class TestOpenAIConformance(LlmConformance):
    @pytest.fixture
    def llm(self, make_openai: Any, mode: str) -> OpenAILlm:
        return make_openai(structured_mode=mode)

    def script(self, llm: Llm, responses: list[str]) -> None:
        assert isinstance(llm, OpenAILlm)
        tools = llm.settings.structured_mode == "tools"
        server = self._server
        for text in responses:
            is_json_like = text.startswith("{") or text == "not json at all"
            server.script.append(("tool" if tools and is_json_like else "text", text))

    @pytest.fixture(autouse=True)
    def _bind_server(self, server: FakeChatServer) -> None:
        self._server = server


def test_openai_needs_a_model() -> None:
    with pytest.raises(ConfigError, match=r"settings\.model"):
        OpenAILlm()
    with pytest.raises(ValidationError):
        OpenAILlm.Settings(model="")


def test_openai_model_id_names_host_and_model(make_openai: Any) -> None:
    assert make_openai(base_url="https://api.openai.com/v1").model_id == (
        "openai:api.openai.com/fake-chat"
    )
    assert make_openai().model_id != make_openai(model="other").model_id


def test_openai_sends_model_temperature_messages_and_key(
    server: FakeChatServer, make_openai: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REME_TEST_LLM_KEY", raising=False)
    llm = make_openai(api_key_env="REME_TEST_LLM_KEY", temperature=0.3)
    llm.complete(MESSAGES, max_tokens=50)
    monkeypatch.setenv("REME_TEST_LLM_KEY", "sk-test")  # read at call time
    llm.complete(MESSAGES)
    first, second = server.requests
    assert first["body"]["model"] == "fake-chat"
    assert first["body"]["temperature"] == 0.3
    assert first["body"]["max_tokens"] == 50
    assert first["body"]["messages"] == MESSAGES
    assert first["auth"] is None
    assert second["auth"] == "Bearer sk-test"
    assert "sk-test" not in json.dumps(llm.settings.model_dump())


def test_openai_json_schema_mode_sends_the_schema(server: FakeChatServer, make_openai: Any) -> None:
    server.texts(VALID)
    make_openai().structured(MESSAGES, Person)
    response_format = server.requests[0]["body"]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"]["properties"].keys() == {"name", "age"}


def test_openai_json_mode_puts_the_schema_in_the_prompt(
    server: FakeChatServer, make_openai: Any
) -> None:
    server.texts(VALID)
    make_openai(structured_mode="json").structured(MESSAGES, Person)
    body = server.requests[0]["body"]
    assert body["response_format"] == {"type": "json_object"}
    assert '"age"' in body["messages"][0]["content"]


@pytest.mark.parametrize("mode", ["json_schema", "json"])
@pytest.mark.parametrize(
    "text",
    [
        'Sure! Here it is: {"name": "Ada Lovelace", "age": 27} Hope that helps.',
        'Here you go:\n```json\n{"name": "Ada Lovelace", "age": 27}\n```\n',
        '```\n{"name": "Ada Lovelace", "age": 27}\n```',
    ],
)
def test_openai_parses_json_in_prose_or_fences(
    server: FakeChatServer, make_openai: Any, mode: str, text: str
) -> None:
    server.texts(text)
    llm = make_openai(structured_mode=mode)
    assert llm.structured(MESSAGES, Person) == Person(name="Ada Lovelace", age=27)
    assert llm.usage.retries == 0


def test_openai_retries_invalid_json_with_the_error(
    server: FakeChatServer, make_openai: Any
) -> None:
    server.texts('{"name": "Ada Lovelace", "age": ', VALID)
    llm = make_openai()
    assert llm.structured(MESSAGES, Person).age == 27
    assert llm.usage.calls == 2 and llm.usage.retries == 1
    retry_messages = server.requests[1]["body"]["messages"]
    assert len(retry_messages) > len(MESSAGES)
    assert "json" in json.dumps(retry_messages[len(MESSAGES) :]).lower()


def test_openai_always_invalid_is_an_llm_error_with_the_last_error(
    server: FakeChatServer, make_openai: Any
) -> None:
    server.texts(*['{"name": "Ada", "age": -1}'] * 5)
    llm = make_openai(max_validation_retries=2)
    with pytest.raises(LlmError, match="age") as info:
        llm.structured(MESSAGES, Person)
    assert "3 attempts" in str(info.value)
    assert len(server.requests) == 3
    assert llm.usage.calls == 3 and llm.usage.retries == 2
    assert llm.usage.prompt_tokens > 0 and llm.usage.completion_tokens > 0


def test_openai_retries_a_500(server: FakeChatServer, make_openai: Any) -> None:
    server.script.append(("status", 500))
    server.texts("fine")
    llm = make_openai()
    assert llm.complete(MESSAGES) == "fine"
    assert len(server.requests) == 2
    assert llm.usage.calls == 1 and llm.usage.retries == 1


def test_openai_honours_retry_after_on_429(
    server: FakeChatServer, make_openai: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []

    class FakeTime:
        @staticmethod
        def sleep(seconds: float) -> None:
            slept.append(seconds)

    monkeypatch.setattr(llm_openai, "time", FakeTime)
    server.script.append(("status", 429, {"Retry-After": "7"}))
    server.texts(VALID)
    llm = make_openai(retry_base_delay=0.01)
    assert llm.structured(MESSAGES, Person).age == 27
    assert slept == [7.0]
    assert llm.usage.retries == 1


def test_openai_gives_up_after_the_http_retries(server: FakeChatServer, make_openai: Any) -> None:
    server.script.extend([("status", 503)] * 3)
    with pytest.raises(LlmError, match="503"):
        make_openai(retries=2).complete(MESSAGES)
    assert len(server.requests) == 3


def test_openai_timeout_is_retried_then_an_llm_error(
    server: FakeChatServer, make_openai: Any
) -> None:
    server.script.extend([("delay", 2.0)] * 2)
    llm = make_openai(timeout=0.2, retries=1)
    with pytest.raises(LlmError, match="no answer within"):
        llm.structured(MESSAGES, Person)
    assert len(server.requests) == 2
    assert llm.usage.calls == 0 and llm.usage.retries == 1


@pytest.mark.parametrize("status", [400, 401, 404])
def test_openai_client_errors_are_not_retried(
    server: FakeChatServer, make_openai: Any, status: int
) -> None:
    server.script.append(("status", status))
    with pytest.raises(LlmError, match=str(status)):
        make_openai().complete(MESSAGES)
    assert len(server.requests) == 1


def test_openai_garbage_body_is_an_llm_error(server: FakeChatServer, make_openai: Any) -> None:
    server.script.append(("garbage", "<html>502 bad gateway</html>"))
    server.script.append(("garbage", "not json either"))
    llm = make_openai()
    with pytest.raises(LlmError, match="unusable reply"):
        llm.complete(MESSAGES)
    with pytest.raises(LlmError, match="unusable reply"):
        llm.structured(MESSAGES, Person)
    assert len(server.requests) == 2


def test_openai_unreachable_server_is_an_llm_error(make_openai: Any) -> None:
    with socket_closed_port() as port:
        llm = make_openai(base_url=f"http://127.0.0.1:{port}/v1", retries=1)
        with pytest.raises(LlmError, match="cannot reach"):
            llm.complete(MESSAGES)


@contextlib.contextmanager
def socket_closed_port() -> Iterator[int]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]  # bound, never listening: connections are refused


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('prose {"a": {"b": 2}} more', '{"a": {"b": 2}}'),
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ("list: [1, 2]", "[1, 2]"),
        ("no json here", None),
    ],
)
def test_extract_json(text: str, expected: str | None) -> None:
    assert extract_json(text) == expected


# -- scripted ----------------------------------------------------------------------------------


def make_scripted(tmp_path: Path, entries: Any, name: str = "script.json", **settings: Any):
    path = tmp_path / name
    if name.endswith((".yaml", ".yml")):
        path.write_text(entries if isinstance(entries, str) else json.dumps(entries))
    else:
        path.write_text(json.dumps(entries))
    context = ComponentContext(workspace=tmp_path, state_dir=tmp_path / ".reme")
    return ScriptedLlm(ScriptedLlm.Settings(path=name, **settings), context)


class TestScriptedConformance(LlmConformance):
    @pytest.fixture
    def llm(self, tmp_path: Path) -> ScriptedLlm:
        return make_scripted(tmp_path, [])

    def script(self, llm: Llm, responses: list[str]) -> None:
        assert isinstance(llm, ScriptedLlm)
        llm.file.write_text(json.dumps(responses))  # read on the first call


def test_scripted_needs_a_path() -> None:
    with pytest.raises(ConfigError, match=r"settings\.path"):
        ScriptedLlm()


def test_scripted_replays_in_order_and_names_the_file(tmp_path: Path) -> None:
    llm = make_scripted(tmp_path, ["one", {"name": "Ada Lovelace", "age": 27}, "three"])
    assert llm.model_id == "scripted:script.json"
    assert llm.complete(MESSAGES) == "one"
    assert llm.structured(MESSAGES, Person) == Person(name="Ada Lovelace", age=27)
    assert llm.complete(MESSAGES) == "three"
    assert llm.usage.calls == 3 and llm.usage.completion_tokens > 0
    with pytest.raises(LlmError, match=r"script\.json.*exhausted"):
        llm.complete(MESSAGES)


def test_scripted_error_entries_raise(tmp_path: Path) -> None:
    llm = make_scripted(tmp_path, [{"error": "rate limited"}, "after"])
    with pytest.raises(LlmError, match="rate limited"):
        llm.complete(MESSAGES)
    assert llm.complete(MESSAGES) == "after"


def test_scripted_loop_starts_over(tmp_path: Path) -> None:
    llm = make_scripted(tmp_path, ["a", "b"], loop=True)
    assert [llm.complete(MESSAGES) for _ in range(5)] == ["a", "b", "a", "b", "a"]
    assert llm.remaining is None


def test_scripted_reads_yaml(tmp_path: Path) -> None:
    yaml_text = "- plain answer\n- name: Ada Lovelace\n  age: 27\n- error: boom\n"
    llm = make_scripted(tmp_path, yaml_text, name="script.yaml")
    assert llm.model_id == "scripted:script.yaml"
    assert llm.complete(MESSAGES) == "plain answer"
    assert llm.structured(MESSAGES, Person).age == 27
    with pytest.raises(LlmError, match="boom"):
        llm.complete(MESSAGES)
    assert llm.remaining == 0


def test_scripted_retries_an_invalid_object(tmp_path: Path) -> None:
    class Flag(BaseModel):
        on: bool

    llm = make_scripted(tmp_path, [{"on": "maybe"}, {"on": True}])
    assert llm.structured(MESSAGES, Flag).on is True
    assert llm.usage.retries == 1


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("bad.json", "{not json", "does not parse"),
        ("bad.yaml", "- [unclosed", "does not parse"),
        ("dict.json", '{"a": 1}', "list of responses"),
        ("number.json", "[1]", "entry 0"),
    ],
)
def test_scripted_bad_files_are_llm_errors(
    tmp_path: Path, name: str, text: str, match: str
) -> None:
    (tmp_path / name).write_text(text)
    llm = ScriptedLlm(ScriptedLlm.Settings(path=str(tmp_path / name)))
    with pytest.raises(LlmError, match=match):
        llm.complete(MESSAGES)


def test_scripted_missing_file_is_an_llm_error(tmp_path: Path) -> None:
    context = ComponentContext(workspace=tmp_path, state_dir=tmp_path / ".reme")
    llm = ScriptedLlm(ScriptedLlm.Settings(path="nowhere.json"), context)
    with pytest.raises(LlmError, match=r"nowhere\.json"):
        llm.complete(MESSAGES)


# -- cached ------------------------------------------------------------------------------------


def test_cached_finds_its_inner_model_in_the_workspaces_plugins(
    tmp_path: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The process's manager holds only the shipped defaults: no `recording` model there.
    monkeypatch.setattr(plugin_module, "_plugins", default_plugins)
    assert "recording" not in load_plugins().registry("llm")
    root = tmp_path / "ws"
    root.mkdir()
    answers = write_script(tmp_path, ["from the inner model"])
    cache = tmp_path / "cache"
    inner = f"{{name: recording, settings: {{path: '{answers}'}}}}"
    overrides = [f"components.llm={{name: cached, settings: {{inner: {inner}, dir: '{cache}'}}}}"]
    plugins = plugins_with(RecordingLlm)  # the fake model is registered here only
    with Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=overrides) as reme:
        llm = reme.llm
        assert isinstance(llm, CachedLlm) and isinstance(llm.inner, RecordingLlm)
        assert llm.complete(MESSAGES) == "from the inner model"
        assert llm.complete(MESSAGES) == "from the inner model"
        assert llm.usage.calls == 1 and llm.cache_hits == 1
        assert llm.inner.prompts() == [MESSAGES[-1]["content"]]
