"""``reme bench locomo``: run LoCoMo / REALTALK, compare configs side by side, list the configs.

reme bench locomo run locomo10.json --config bm25 --out runs/bm25
reme bench locomo compare REALTALK/data --out runs/realtalk
"""

from __future__ import annotations

from pathlib import Path

import click

from reme_core.api import current_command, named_configs
from reme_locomo.report import compare_markdown, markdown
from reme_locomo.runner import CONFIG_DIR, run_benchmark
from reme_locomo.worker import KS

COMPARE_CONFIGS = ("bm25", "vector", "default")
"""Keyword only, vector only, reme's default hybrid."""

DATA = click.argument("data", type=click.Path(exists=True, path_type=Path))


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(",", " ").split()]
    except ValueError:
        raise click.BadParameter(f"expected numbers such as 5,10,20, not {text!r}") from None
    if not values or min(values) < 1:
        raise click.BadParameter("k values are positive numbers")
    return values


def _ids(values: tuple[str, ...]) -> list[str] | None:
    return [v for value in values for v in value.replace(",", " ").split()] or None


def run_options(func):  # type: ignore[no-untyped-def]
    """Options ``run`` and ``compare`` share."""
    for option in reversed(
        [
            click.option(
                "--k",
                "ks",
                default=",".join(map(str, KS)),
                show_default=True,
                help="Cut-offs of turn recall.",
            ),
            click.option("--limit", type=int, help="Only the first N conversations (smoke runs)."),
            click.option(
                "--ids",
                multiple=True,
                help="Only these conversations (sample_id / chat file name; comma-separated).",
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
                "--vector-cache",
                type=click.Path(dir_okay=False, path_type=Path),
                help="A SQLite file of embeddings shared by conversations and runs "
                "(compare: <out>/vectors.sqlite3).",
            ),
            click.option("--no-progress", is_flag=True, help="No progress bar."),
        ]
    ):
        func = option(func)
    return func


@click.group("locomo")
def locomo_group() -> None:
    """LoCoMo and REALTALK: turn recall@k per category, beside plain BM25 over turns."""


@locomo_group.command("run")
@DATA
@click.option(
    "--config", "config", help="A named config (`reme bench locomo configs`) or a YAML file."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Result folder (rerun with the same folder to resume).",
)
@run_options
def run_command(data: Path, config: str | None, out: Path | None, **options: object) -> None:
    """Run DATA: LoCoMo's locomo10.json (or a subset), a REALTALK chat, or a folder of them."""
    out = out or Path("locomo-results") / (config or "default")
    result = _run(data, config, out, current_command(), options)
    click.echo(markdown(result, result.notes["ks"]))
    click.echo(f"result: {out / 'result.json'}")
    _exit_on_failures([result.failed])


@locomo_group.command("compare")
@DATA
@click.option(
    "--configs",
    default=",".join(COMPARE_CONFIGS),
    show_default=True,
    help="Named configs or files, comma-separated, run one after the other on the same data.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("locomo-results/compare"),
    show_default=True,
)
@run_options
def compare_command(data: Path, configs: str, out: Path, **options: object) -> None:
    """Run several configs on the same conversations; write compare.md side by side."""
    names = [c for c in configs.replace(",", " ").split() if c]
    if not names:
        raise click.UsageError("--configs names no config")
    if options["vector_cache"] is None:  # the configs embed the same chunks: once is enough
        options["vector_cache"] = out / "vectors.sqlite3"
    results = {}
    for name in names:
        label = Path(name).stem
        folder = out / label
        # Each config's result reruns on its own: record the equivalent `run` command.
        command = ["bench", "locomo", "run", str(data), "--config", name, "--out", str(folder)]
        results[label] = _run(data, name, folder, [*command, *_as_args(options)], options)
    ks = next(iter(results.values())).notes["ks"]
    text = compare_markdown(f"{data.name}: {', '.join(results)}", results, ks)
    (out / "compare.md").write_text(text, encoding="utf-8")
    click.echo(text)
    _exit_on_failures([r.failed for r in results.values()])


@locomo_group.command("configs")
def configs_command() -> None:
    """List the named configs."""
    for name, path in named_configs([CONFIG_DIR]).items():
        first = path.read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
        click.echo(f"{name:10} {first}")


def _run(data: Path, config: str | None, out: Path, command: list[str], options: dict):  # type: ignore[no-untyped-def]
    return run_benchmark(
        data,
        config=config,
        out=out,
        overrides=list(options["overrides"]),
        ks=_ints(str(options["ks"])),
        limit=options["limit"],
        ids=_ids(options["ids"]),
        workers=options["workers"],
        vector_cache=options["vector_cache"],
        progress=not options["no_progress"],
        command=command,
    )


def _as_args(options: dict) -> list[str]:  # type: ignore[type-arg]
    """The shared options as command-line arguments (for a per-config `run` command)."""
    args = ["--k", str(options["ks"])]
    if options["no_progress"]:
        args.append("--no-progress")
    for key in ("limit", "workers", "vector_cache"):
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
        click.echo(f"{count} conversation(s) failed; their errors are in the result", err=True)
        click.get_current_context().exit(1)
