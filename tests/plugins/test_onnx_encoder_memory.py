"""How ``OnnxRunner`` bounds the C allocator's memory without onnxruntime's arena (structure only:
no resident-memory figure is asserted)."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import pytest

from reme_plugins import native_heap, onnx_session


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> int:
        self.calls.append(args)
        return 1


@pytest.fixture
def libc(monkeypatch: pytest.MonkeyPatch) -> dict[str, _Recorder]:
    functions = {"mallopt": _Recorder(), "malloc_trim": _Recorder()}
    monkeypatch.setattr(native_heap, "libc_function", functions.get)
    opened: list[dict[str, Any]] = []

    def fake_open(path: Path, threads: int = 1, arena: bool = True) -> object:
        opened.append({"path": path, "threads": threads, "arena": arena})
        return object()

    monkeypatch.setattr(onnx_session, "open_session", fake_open)
    functions["opened"] = opened  # type: ignore[assignment]
    return functions


def test_without_an_arena_the_mmap_threshold_is_fixed_before_loading(libc: dict) -> None:
    runner = onnx_session.OnnxRunner(lambda: Path("model.onnx"), None, "t", arena=False)
    session = runner.session()
    assert runner.session() is session  # opened once
    assert libc["mallopt"].calls == [(-3, onnx_session.MMAP_THRESHOLD)]
    assert libc["malloc_trim"].calls == [(0,)]
    assert libc["opened"] == [{"path": Path("model.onnx"), "threads": 1, "arena": False}]


def test_with_an_arena_the_allocator_is_left_alone(libc: dict) -> None:
    onnx_session.OnnxRunner(lambda: Path("model.onnx"), None, "t", arena=True).session()
    assert libc["mallopt"].calls == []
    assert libc["malloc_trim"].calls == []


def test_no_glibc_no_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_heap, "libc_function", lambda name: None)
    onnx_session.bound_mmap_threshold()  # nothing to call: no error
    onnx_session.release_freed_memory()


def test_the_real_allocator_accepts_the_threshold() -> None:
    mallopt = native_heap.libc_function("mallopt")
    if mallopt is None or platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc's mallopt")
    assert mallopt(-3, onnx_session.MMAP_THRESHOLD) == 1  # glibc: 1 on success
