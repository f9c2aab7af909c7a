"""The example agent loop (examples/agent_loop), run with its scripted models."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

import reme_core.runtime
from reme_core.plugins import Plugins

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "agent_loop" / "agent_loop.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reme_example_agent_loop", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_agent_loop_compacts_persists_and_answers(
    root: Path,
    plugins: Plugins,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.setattr(reme_core.runtime, "load_plugins", lambda: plugins)
    example = _load()
    example.main([str(root), "--scripted"])
    out = capsys.readouterr().out
    answers = [line for line in out.splitlines() if line.startswith("assistant: ")]
    assert answers[0].startswith("assistant: tests/test_io.py::test_read fails")
    assert answers[-1] == "assistant: It is heron-db-7, in eu-west-3."
    assert "context:" in out
    # The first task was compacted: summarised, and saved as a daily note in the background.
    saved = [line for line in out.splitlines() if line.startswith("saved ")]
    assert saved and "daily/" in saved[0]
    (note,) = (root / "daily").glob("*/session-*.md")
    assert "nightly build" in note.read_text("utf-8")
    # clear() persisted every raw message once, tool calls and results included.
    (dialog,) = (root / "sessions" / "dialog").glob("*.jsonl")
    lines = [json.loads(line)["message"] for line in dialog.read_text("utf-8").splitlines()]
    assert len(lines) == 14 and sum(1 for m in lines if m["role"] == "tool") == 3
    assert any(m.get("tool_calls") for m in lines)


def test_without_a_model_the_example_says_how_to_run_it(
    root: Path, plugins: Plugins, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(reme_core.runtime, "load_plugins", lambda: plugins)
    with pytest.raises(SystemExit, match="--scripted"):
        _load().main([str(root)])
