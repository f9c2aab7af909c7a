"""``reme bench lme``: run LongMemEval, compare configs side by side, list the named configs."""

from __future__ import annotations

from pathlib import Path

import click

from reme_core.api import current_command, named_configs, side_by_side
from reme_lme.runner import CONFIG_DIR, headline, run_benchmark

COMPARE_CONFIGS = ("bm25", "search_v2", "default", "hybrid", "hybrid_v2")
"""BM25 only, search_v2 on it, the shipped search, hybrid at weight 0.7, search_v2 on hybrid."""

DATA = click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise click.BadParameter(f"expected numbers such as 1,3,5,10, not {text!r}") from None
    if not values or min(values) < 1:
        raise click.BadParameter("k values are positive numbers")
    return values


def _ids(values: tuple[str, ...]) -> list[str] | None:
    ids = [v for value in values for v in value.replace(",", " ").split()]
    return ids or None


def run_options(func):  # type: ignore[no-untyped-def]
    """Options ``run`` and ``compare`` share."""
    for option in reversed(
        [
            click.option(
                "--mode",
                type=click.Choice(["raw", "memory"]),
                default="raw",
                show_default=True,
                help="raw: transcripts + user-turn notes, no LLM; memory: through auto_memory.",
            ),
            click.option(
                "--memory-pipeline",
                default="auto_memory",
                show_default=True,
                help="Pipeline each session goes through in memory mode.",
            ),
            click.option(
                "--dream", is_flag=True, help="Memory mode: run dream once after the sessions."
            ),
            click.option(
                "--k",
                "ks",
                default="1,3,5,10,30,50",
                show_default=True,
                help="Cut-offs for the retrieval metrics.",
            ),
            click.option(
                "--qa", is_flag=True, help="Answer each question and judge it (needs a model)."
            ),
            click.option("--limit", type=int, help="Only the first N questions (smoke runs)."),
            click.option(
                "--ids",
                multiple=True,
                help="Only these question ids (comma-separated or repeated).",
            ),
            click.option("--workers", type=int, help="Parallel processes (default: CPU count)."),
            click.option(
                "--set",
                "overrides",
                multiple=True,
                metavar="KEY=VALUE",
                help="Override a config key.",
            ),
            click.option(
                "--cache-dir", help="Folder of the LLM answer cache (default ~/.cache/reme/llm)."
            ),
            click.option(
                "--vector-cache",
                type=click.Path(dir_okay=False, path_type=Path),
                help="A SQLite file of embeddings shared by questions and runs "
                "(compare: <out>/vectors.sqlite3).",
            ),
            click.option(
                "--data-cache",
                type=click.Path(file_okay=False, path_type=Path),
                help="Folder of the per-question split of DATA "
                "(default: $XDG_CACHE_HOME/reme/lme or ~/.cache/reme/lme).",
            ),
            click.option("--no-progress", is_flag=True, help="No progress bar."),
        ]
    ):
        func = option(func)
    return func


@click.group("lme")
def lme_group() -> None:
    """LongMemEval: retrieval metrics without an LLM, QA with one."""


@lme_group.command("run")
@DATA
@click.option(
    "--config", "config", help="A named config (`reme bench lme configs`) or a YAML file."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Result folder (rerun with the same folder to resume).",
)
@run_options
def run_command(data: Path, config: str | None, out: Path | None, **options: object) -> None:
    """Run LongMemEval on DATA (longmemeval_s_cleaned.json, _oracle, _m; .json or .json.gz)."""
    out = out or Path("lme-results") / f"{config or 'default'}-{options['mode']}"
    result = _run(data, config, out, current_command(), options)
    click.echo(result.markdown(headline(result.notes["ks"], result.notes["qa"])))
    click.echo(f"result: {out / 'result.json'}")
    _exit_on_failures([result.failed])


@lme_group.command("compare")
@DATA
@click.option(
    "--configs",
    "configs",
    default=",".join(COMPARE_CONFIGS),
    show_default=True,
    help="Named configs or files, comma-separated, run one after the other on the same questions.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("lme-results/compare"),
    show_default=True,
)
@run_options
def compare_command(data: Path, configs: str, out: Path, **options: object) -> None:
    """Run several configs on the same questions; print them side by side."""
    names = [c for c in configs.replace(",", " ").split() if c]
    if options["vector_cache"] is None:  # the configs embed the same chunks: once is enough
        options["vector_cache"] = out / "vectors.sqlite3"
    results = {}
    for name in names:
        folder = out / Path(name).stem
        # Each config's result reruns on its own: record the equivalent `run` command.
        command = [
            "bench",
            "lme",
            "run",
            str(data),
            "--config",
            name,
            "--out",
            str(folder),
            *_as_args(options),
        ]
        results[name] = _run(data, name, folder, command, options)
    first = next(iter(results.values()))
    table = side_by_side(results, headline(first.notes["ks"], first.notes["qa"]))
    text = f"## LongMemEval {data.name}: {', '.join(names)}\n\n{table}\n"
    (out / "compare.md").write_text(text, encoding="utf-8")
    click.echo(text)
    _exit_on_failures([r.failed for r in results.values()])


@lme_group.command("configs")
def configs_command() -> None:
    """List the named configs."""
    for name, path in named_configs([CONFIG_DIR]).items():
        first = path.read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
        click.echo(f"{name:12} {first}")


def _run(data: Path, config: str | None, out: Path, command: list[str], options: dict) -> object:
    return run_benchmark(
        data,
        config=config,
        overrides=list(options["overrides"]),
        out=out,
        mode=str(options["mode"]),
        memory_pipeline=str(options["memory_pipeline"]),
        dream=bool(options["dream"]),
        ks=_ints(str(options["ks"])),
        qa=bool(options["qa"]),
        limit=options["limit"],  # type: ignore[arg-type]
        ids=_ids(options["ids"]),  # type: ignore[arg-type]
        workers=options["workers"],  # type: ignore[arg-type]
        progress=not options["no_progress"],
        cache_dir=options["cache_dir"],  # type: ignore[arg-type]
        vector_cache=options["vector_cache"],  # type: ignore[arg-type]
        data_cache=options["data_cache"],  # type: ignore[arg-type]
        command=command,
    )


def _as_args(options: dict) -> list[str]:
    """The shared options as command-line arguments (for a per-config `run` command)."""
    args = ["--mode", str(options["mode"]), "--k", str(options["ks"])]
    if options["mode"] == "memory":
        args += ["--memory-pipeline", str(options["memory_pipeline"])]
    for flag in ("dream", "qa", "no_progress"):
        if options[flag]:
            args.append("--" + flag.replace("_", "-"))
    for key in ("limit", "workers", "cache_dir", "vector_cache", "data_cache"):
        if options[key] is not None:
            args += ["--" + key.replace("_", "-"), str(options[key])]
    for value in options["ids"]:
        args += ["--ids", value]
    for value in options["overrides"]:
        args += ["--set", value]
    return args


def _exit_on_failures(failed: list[list[str]]) -> None:
    count = sum(len(f) for f in failed)
    if count:
        click.echo(f"{count} item(s) failed; their errors are in the result's items", err=True)
        click.get_current_context().exit(1)
