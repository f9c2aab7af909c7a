"""One run: config -> manifest -> conversations in parallel -> result.json and result.md."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path

from reme_core.api import (
    RESULT_JSON,
    RESULT_MARKDOWN,
    Manifest,
    RemeError,
    RunResult,
    build_manifest,
    checkpoint,
    diff_manifests,
    load_plugins,
    resolve_config,
    run_items,
    select_items,
    validate_components,
    write_json,
)
from reme_locomo.data import DataError, dataset_files, load_conversations
from reme_locomo.report import build_result, markdown
from reme_locomo.worker import KS, RunOptions, score_conversation

CONFIG_DIR = Path(__file__).resolve().parent / "config"
"""The named configs, shipped inside the package so a plain (non-editable) install has them."""
MANIFEST_FILE = "manifest.json"


class LocomoRunError(RemeError):
    """The run cannot start as asked (bad data, an unknown id, a folder holding another run)."""


def run_benchmark(
    data: Path,
    *,
    config: str | None,
    out: Path,
    overrides: Sequence[str] = (),
    ks: Sequence[int] = KS,
    limit: int | None = None,
    ids: Sequence[str] | None = None,
    workers: int | None = None,
    vector_cache: Path | None = None,
    progress: bool = True,
    command: Sequence[str] | None = None,
) -> RunResult:
    """Score every selected conversation of ``data`` with ``config``; save and return the result."""
    resolved = resolve_config(config, config_dirs=[CONFIG_DIR], overrides=overrides)
    settings = resolved.settings
    plugins = load_plugins()
    validate_components(settings, plugins)  # fail here, not once per conversation
    try:
        files = dataset_files(data)
    except DataError as exc:
        raise LocomoRunError(str(exc)) from None
    manifest = build_manifest(
        settings=settings,
        plugins=plugins,
        datasets=files,
        config_name=config,
        overrides=overrides,
        command=command,
    )
    checkpoint(manifest)
    try:  # before _claim: malformed data leaves nothing in ``out``
        conversations = load_conversations(data)
        items = [{"id": c.id, "file": c.file} for c in conversations]
        chosen = select_items(items, limit=limit, ids=ids)
    except ValueError as exc:  # DataError, or unknown --ids
        raise LocomoRunError(str(exc)) from None
    _claim(out, manifest)
    ks = tuple(sorted(set(ks)))
    options = RunOptions(
        settings=settings.model_dump(mode="json"),
        ks=ks,
        vector_cache=str(vector_cache.resolve()) if vector_cache else None,
    )
    started = time.perf_counter()
    rows = run_items(
        chosen,
        functools.partial(score_conversation, options=options),
        out_dir=out,
        workers=workers,
        progress=progress,
        desc=f"locomo {config or 'default'}",
    )
    result = build_result(
        rows,
        manifest,
        seconds=time.perf_counter() - started,
        notes={
            "dataset": data.name,
            "format": sorted(
                {c.format for c in conversations if c.id in {i["id"] for i in chosen}}
            ),
            "ks": list(ks),
        },
    )
    result.write(out / RESULT_JSON)
    (out / RESULT_MARKDOWN).write_text(markdown(result, ks), encoding="utf-8")
    return result


def _claim(out: Path, manifest: Manifest) -> None:
    """Keep the manifest in ``out``; refuse to resume a folder holding a different run."""
    path = out / MANIFEST_FILE
    if path.is_file():
        earlier = Manifest.model_validate_json(path.read_text(encoding="utf-8"))
        differences = diff_manifests(earlier, manifest)
        if differences:
            raise LocomoRunError(
                f"{out} holds a run with another setup ({'; '.join(differences)}); "
                "use another --out to start a new run"
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, manifest.model_dump(mode="json"))
