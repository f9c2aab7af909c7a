"""One LongMemEval run: config -> manifest -> items in parallel -> result.json and result.md."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path

from reme_core.api import (
    LME_KS,
    Manifest,
    RemeError,
    RunResult,
    build_manifest,
    checkpoint,
    diff_manifests,
    load_plugins,
    resolve_config,
    run_items,
    validate_components,
    with_llm_cache,
    write_json,
)
from reme_lme.data import split_items
from reme_lme.worker import Options, score_item

BENCHMARK = "longmemeval"
CONFIG_DIR = Path(__file__).resolve().parent / "config"
MANIFEST_FILE = "manifest.json"


class LmeRunError(RemeError):
    """The run cannot start as asked (a resumed folder from another run, an unknown id)."""


def headline(ks: Sequence[int], qa: bool) -> list[str]:
    """The columns of the Markdown table (every metric is in the JSON)."""
    shown = [k for k in (5, 10) if k in ks] or list(ks)[:2]
    columns = [f"session_recall_any@{k}" for k in shown[:1]]
    for k in shown:
        columns += [f"session_recall_all@{k}", f"session_ndcg_any@{k}"]
    for k in shown:
        columns += [f"turn_recall_all@{k}", f"turn_ndcg_any@{k}"]
    return [*columns, "qa_accuracy"] if qa else columns


def run_benchmark(
    data: Path,
    *,
    config: str | None,
    overrides: Sequence[str] = (),
    out: Path,
    mode: str = "raw",
    memory_pipeline: str = "auto_memory",
    dream: bool = False,
    ks: Sequence[int] = LME_KS,
    qa: bool = False,
    limit: int | None = None,
    ids: Sequence[str] | None = None,
    workers: int | None = None,
    progress: bool = True,
    cache_dir: str | None = None,
    vector_cache: Path | None = None,
    data_cache: Path | None = None,
    command: Sequence[str] | None = None,
) -> RunResult:
    """Run LongMemEval on ``data`` and save the result in ``out``; return it.

    ``data`` is split once into one file per question under ``data_cache`` (default
    ``~/.cache/reme/lme``, see ``reme_lme.data.split_items``); each worker reads its own.
    """
    resolved = resolve_config(config, config_dirs=[CONFIG_DIR], overrides=overrides)
    settings = with_llm_cache(resolved.settings, cache_dir)
    plugins = load_plugins()
    validate_components(settings, plugins)  # fail here, not once per item in the workers
    manifest = build_manifest(
        settings=settings,
        plugins=plugins,
        datasets=[data],
        config_name=config,
        overrides=overrides,
        command=command,
    )
    checkpoint(manifest)
    try:  # before _claim: a malformed file leaves nothing in ``out``
        refs = split_items(data, data_cache, sha256=manifest.datasets[0].sha256)
    except ValueError as exc:
        raise LmeRunError(str(exc)) from None
    _claim(out, manifest)
    options = Options(
        config=settings.model_dump(mode="json"),
        mode=mode,  # type: ignore[arg-type]
        memory_pipeline=memory_pipeline,
        dream=dream,
        ks=list(ks),
        qa=qa,
        vector_cache=str(vector_cache.resolve()) if vector_cache else None,
    )
    started = time.perf_counter()
    try:
        rows = run_items(
            refs,
            functools.partial(score_item, options=options),
            out_dir=out,
            workers=workers,
            limit=limit,
            ids=ids,
            item_id=lambda ref: ref.question_id,
            progress=progress,
            desc=f"lme {config or 'default'}",
        )
    except ValueError as exc:  # unknown --ids
        raise LmeRunError(str(exc)) from None
    skipped: dict[str, int] = {}
    for row in rows:
        if row.get("skip"):
            skipped[row["skip"]] = skipped.get(row["skip"], 0) + 1
    result = RunResult.from_items(
        BENCHMARK,
        manifest,
        rows,
        seconds=time.perf_counter() - started,
        notes={
            "mode": mode,
            "memory_pipeline": memory_pipeline if mode == "memory" else None,
            "dream": dream,
            "ks": list(ks),
            "qa": qa,
            # How turn_* was ranked: the official turn corpus, or the memory notes' anchors.
            "turn_ranking": "turn corpus" if mode == "raw" else "note anchors",
            "items": len(rows),
            "skipped": skipped,
            "dataset": data.name,
        },
    )
    result.save(out, headline(ks, qa))
    return result


def _claim(out: Path, manifest: Manifest) -> None:
    """Keep the manifest in ``out``; refuse to resume a folder holding a different run."""
    path = out / MANIFEST_FILE
    if path.is_file():
        earlier = Manifest.model_validate_json(path.read_text(encoding="utf-8"))
        differences = diff_manifests(earlier, manifest)
        if differences:
            raise LmeRunError(
                f"{out} holds a run with another setup ({'; '.join(differences)}); "
                "use another --out to start a new run"
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, manifest.model_dump(mode="json"))
