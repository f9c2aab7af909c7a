"""``reme bench beam run`` and ``reme bench beam compare``.

    reme bench beam run chats/100K --config bm25 --limit 2
    reme bench beam compare chats/100K --configs bm25 hybrid default search_v2 --out runs/cmp

``run`` follows reme_core.bench's sequence: resolve the config (host ``REME_*`` variables do not
apply), wrap configured models in the ``cached`` llm, build the manifest and ``checkpoint`` it
(``reme bench reproduce`` stops there), check the steps, score the conversations in parallel
(resumable: rerun with the same ``--out``), then write ``result.json`` and ``result.md``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path

import click

from reme_beam.data import ABILITIES, CHAT_FILES, QUESTIONS_FILE, discover, find_file
from reme_beam.metrics import KS
from reme_beam.report import (
    build_result,
    compare_metrics,
    markdown,
    overall_markdown,
    side_by_side_markdown,
)
from reme_beam.retrieval import check_steps
from reme_beam.worker import RunOptions, score_conversation
from reme_core.api import (
    RESULT_JSON,
    RESULT_MARKDOWN,
    ConfigError,
    RunResult,
    Settings,
    build_manifest,
    checkpoint,
    load_plugins,
    named_configs,
    resolve_config,
    run_items,
    select_items,
    validate_components,
    with_llm_cache,
    write_json,
)

CONFIG_DIR = Path(__file__).resolve().parent / "config"
"""The named configs, shipped inside the package so a plain (non-editable) install has them."""
COMPARE_CONFIGS = ("bm25", "bm25_v2", "hybrid", "default", "search_v2")
QA_PIPELINES = ("beam_answer", "beam_judge")


def config_dirs() -> list[Path]:
    return [CONFIG_DIR] if CONFIG_DIR.is_dir() else []


@click.group("beam")
def beam_group() -> None:
    """BEAM (long-term memory benchmark): retrieval per ability, and QA with a model."""


def _ks(ks: Sequence[int] | None) -> tuple[int, ...]:
    chosen = tuple(sorted(set(ks or ()))) or KS
    if any(k < 1 for k in chosen):
        raise click.BadParameter("k must be at least 1", param_hint="--k")
    return chosen


def _parse_ks(
    _ctx: click.Context, _param: click.Parameter, values: Sequence[str]
) -> tuple[int, ...]:
    """``--k 10,50`` and ``--k 10 --k 50`` alike -> (10, 50)."""
    out: list[int] = []
    for value in values:
        for part in str(value).split(","):
            if not part.strip():
                continue
            try:
                out.append(int(part))
            except ValueError:
                raise click.BadParameter(f"{part!r} is not a whole number") from None
    return _ks(out) if out else ()


def _join(ks: Sequence[int]) -> str:
    return ",".join(map(str, ks))


def _run_options(command: click.Command) -> click.Command:
    options = [
        click.option(
            "--mode",
            type=click.Choice(["raw", "memory"]),
            default="raw",
            show_default=True,
            help="raw: transcripts + excerpt notes, no LLM; memory: auto_memory with the model.",
        ),
        click.option("--dream", is_flag=True, help="memory mode: run dream after each day."),
        click.option(
            "--session-unit",
            type=click.Choice(["batch", "turn"]),
            default="batch",
            show_default=True,
            help="What one session is: a BEAM batch, or one turn group of a batch.",
        ),
        click.option("--limit", type=int, help="Only the first N conversations (smoke runs)."),
        click.option("--ids", multiple=True, help="Only these conversations (folder names)."),
        click.option("--workers", type=int, help="Parallel processes (default: CPU count)."),
        click.option("--qa", is_flag=True, help="Answer and judge each question (needs a model)."),
        click.option(
            "--k",
            "ks",
            multiple=True,
            callback=_parse_ks,
            metavar="K[,K...]",
            help="Message budgets: figures are taken at k messages shown to the reader, "
            f"e.g. --k 10,50 gives recall@10msg and recall@50msg (default {_join(KS)}).",
        ),
        click.option(
            "--set",
            "overrides",
            multiple=True,
            metavar="KEY=VALUE",
            help="Config override on top of --config (e.g. components.llm.name=openai).",
        ),
        click.option(
            "--llm-cache",
            type=str,
            default=None,
            help="Folder of the LLM answer cache (default ~/.cache/reme/llm).",
        ),
        click.option("--no-llm-cache", is_flag=True, help="Do not wrap models in the cache."),
        click.option(
            "--vector-cache",
            type=click.Path(dir_okay=False, path_type=Path),
            help="SQLite file of embeddings shared by items and runs (compare: <out>/vectors.sqlite3).",
        ),
        click.option(
            "--keep-workspaces",
            type=click.Path(file_okay=False, path_type=Path),
            help="Copy each conversation's workspace here (to inspect it).",
        ),
        click.option(
            "--no-progress",
            is_flag=True,
            help="No progress bar (off a terminal, progress is one plain line per tenth).",
        ),
        # The old name, kept so the commands recorded in earlier results still rerun.
        click.option("--quiet", "quiet", is_flag=True, hidden=True),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@beam_group.command("run")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--config",
    "config",
    default=None,
    help=f"Named config ({', '.join(sorted(named_configs(config_dirs())))}) or a YAML file.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Result folder (rerunning into it resumes).",
)
@_run_options
def run_command(data_dir: Path, config: str | None, out: Path, **kwargs: object) -> None:
    """Score DATA_DIR (chats/<size>, or one chat folder) and write result.json / result.md."""
    _fold_quiet(kwargs)
    result = run_benchmark(data_dir, config, out, **kwargs)  # type: ignore[arg-type]
    click.echo(f"{out / RESULT_MARKDOWN}")
    click.echo(markdown(result, _ks(kwargs.get("ks")), bool(kwargs.get("qa"))))  # type: ignore[arg-type]


@beam_group.command("compare")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--configs",
    default=",".join(COMPARE_CONFIGS),
    show_default=True,
    help="Comma-separated named configs (or files), run one after the other on the same items.",
)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    help="Side-by-side metrics (default recall@<k>msg for each --k, and hits@<largest k>msg).",
)
@_run_options
def compare_command(
    data_dir: Path, configs: str, out: Path, metrics: tuple[str, ...], **kwargs: object
) -> None:
    """Run several configs on the same conversations; write compare.md side by side."""
    names = [c.strip() for c in configs.split(",") if c.strip()]
    if not names:
        raise click.UsageError("--configs names no config")
    _fold_quiet(kwargs)
    if kwargs.get("vector_cache") is None:  # the configs embed the same chunks: once is enough
        kwargs["vector_cache"] = out / "vectors.sqlite3"
    results: dict[str, RunResult] = {}
    for name in names:
        click.echo(f"== {name}", err=True)
        command = _run_command_line(data_dir, name, out / _label(name), kwargs)
        results[_label(name)] = run_benchmark(
            data_dir,
            name,
            out / _label(name),
            command=command,
            **kwargs,  # type: ignore[arg-type]
        )
    shown = list(metrics) or compare_metrics(_ks(kwargs.get("ks")), bool(kwargs.get("qa")))  # type: ignore[arg-type]
    abilities = [a for a in ABILITIES if any(a in r.categories for r in results.values())]
    text = (
        f"## BEAM side by side: {data_dir}\n\n"
        + "\n".join(f"- {label}: {out / label / RESULT_MARKDOWN}" for label in results)
        + "\n\nevidence recall within k messages shown, overall; the BM25 floor is plain BM25 over "
        "single messages, computed in the same run\n\n"
        + overall_markdown(results, _ks(kwargs.get("ks")))  # type: ignore[arg-type]
        + "\n\n"
        + side_by_side_markdown(results, shown, abilities)
    )
    (out / "compare.md").write_text(text, encoding="utf-8")
    click.echo(text)


def run_benchmark(
    data_dir: Path,
    config: str | None,
    out: Path,
    *,
    mode: str = "raw",
    dream: bool = False,
    session_unit: str = "batch",
    limit: int | None = None,
    ids: Sequence[str] = (),
    workers: int | None = None,
    qa: bool = False,
    ks: Sequence[int] = (),
    overrides: Sequence[str] = (),
    llm_cache: str | None = None,
    no_llm_cache: bool = False,
    keep_workspaces: Path | None = None,
    vector_cache: Path | None = None,
    no_progress: bool = False,
    command: list[str] | None = None,
) -> RunResult:
    """One run of one config; returns the result it saved under ``out``."""
    ks = _ks(ks)
    folders = discover(data_dir)
    items = [{"id": f.name, "folder": str(f.resolve())} for f in folders]
    try:
        chosen = select_items(items, limit=limit, ids=list(ids) or None)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--ids") from None
    resolved = resolve_config(config, config_dirs=config_dirs(), overrides=list(overrides))
    settings = resolved.settings
    if not no_llm_cache and _has_model(settings):
        settings = with_llm_cache(settings, llm_cache)
    plugins = load_plugins()
    manifest = build_manifest(
        settings=settings,
        plugins=plugins,
        datasets=_dataset_files([Path(i["folder"]) for i in chosen]),
        config_name=config,
        overrides=list(overrides),
        command=command,
    )
    checkpoint(manifest)
    _preflight(settings, plugins, mode=mode, qa=qa, dream=dream)
    options = RunOptions(
        settings=settings.model_dump(mode="json"),
        mode=mode,  # type: ignore[arg-type]
        dream=dream,
        session_unit=session_unit,  # type: ignore[arg-type]
        ks=ks,
        qa=qa,
        keep_dir=str(keep_workspaces.resolve()) if keep_workspaces else None,
        vector_cache=str(vector_cache.resolve()) if vector_cache else None,
    )
    started = time.perf_counter()
    rows = run_items(
        chosen,
        functools.partial(score_conversation, options=options),
        out_dir=out,
        workers=workers,
        progress=not no_progress,
        desc=f"beam {config or 'default'}",
    )
    result = build_result(
        rows,
        manifest,
        seconds=time.perf_counter() - started,
        options=options.model_dump(exclude={"settings"}),
    )
    result.write(out / RESULT_JSON)
    (out / RESULT_MARKDOWN).write_text(markdown(result, ks, qa), encoding="utf-8")
    write_json(out / "conversations.json", result.notes["conversations"])
    return result


def _preflight(settings: Settings, plugins: object, *, mode: str, qa: bool, dream: bool) -> None:
    """Refuse a run that would fail in every item, before any item starts."""
    pipelines = ("search", *[p for p in QA_PIPELINES if qa and p in settings.pipelines])
    check_steps(settings, plugins, pipelines)  # type: ignore[arg-type]
    validate_components(settings, plugins)  # type: ignore[arg-type]
    if (qa or mode == "memory" or dream) and not _has_model(settings):
        what = "--qa" if qa else "--dream" if dream else "--mode memory"
        raise ConfigError(
            f"{what} needs a model: set components.llm in the config or with "
            "--set components.llm='{name: openai, settings: {model: ...}}'"
        )


def _has_model(settings: Settings) -> bool:
    return settings.components.llm is not None or any(
        p.llm is not None for p in settings.pipelines.values()
    )


def _dataset_files(folders: list[Path]) -> list[Path]:
    files = []
    for folder in folders:
        for names in (CHAT_FILES, QUESTIONS_FILE):
            found = find_file(folder, names)
            if found is not None:
                files.append(found)
    return files


def _fold_quiet(kwargs: dict[str, object]) -> None:
    """``--quiet`` (hidden, the old name) means ``--no-progress``."""
    if kwargs.pop("quiet", False):
        kwargs["no_progress"] = True


def _label(config: str) -> str:
    return Path(config).stem if config.endswith((".yaml", ".yml")) else config


def _run_command_line(
    data_dir: Path, config: str, out: Path, kwargs: dict[str, object]
) -> list[str]:
    """The ``reme`` arguments of the equivalent single run (what its manifest records, so
    ``reme bench reproduce`` reruns one config, not the whole comparison)."""
    args = ["bench", "beam", "run", str(data_dir), "--config", config]
    for key, value in kwargs.items():
        flag = "--" + key.replace("_", "-")
        if key == "ks":
            flag = "--k"
            value = _join(value) if value else value  # type: ignore[arg-type]
        if key == "overrides":
            flag = "--set"
        if value in (None, False, (), []):
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, list | tuple):
            for v in value:
                args += [flag, str(v)]
        else:
            args += [flag, str(value)]
    return args
