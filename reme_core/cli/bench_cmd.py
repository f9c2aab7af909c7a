"""`reme bench`: the group benchmark plugins nest their commands under, and `reme bench reproduce`.

``reproduce`` reads a result's manifest, asks the recorded command which manifest it would record
now (``reme_core.bench.capture_manifest``: it stops before doing any work), prints every
difference and exits 1 when there is one. When there is none it reruns the command into a new
folder and compares the headline figures.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reme_core.cli.group import RemeGroup
from reme_core.errors import RemeError

if TYPE_CHECKING:
    from reme_core.bench import Manifest

TOLERANCE = 1e-9
"""Figures closer than this count as equal (floating-point sums in another order)."""


class ReproduceError(RemeError):
    """The recorded run cannot be redone here, or it was redone and its figures differ."""


@click.group("bench", cls=RemeGroup)
def bench_group() -> None:
    """Benchmarks: `reme bench <benchmark> run ...` (from benchmark plugins), `reproduce`."""


@bench_group.command("reproduce")
@click.argument("result", type=click.Path(exists=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Only compare the manifest; do not rerun.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the rerun's result (default: <result folder>-reproduce).",
)
def reproduce_command(result: Path, dry_run: bool, out: Path | None) -> None:
    """Check the installed plugins, config and datasets against RESULT's manifest; rerun it."""
    # Imported here: reme_core.bench is a quarter of a second that `reme --help` need not pay.
    from reme_core.bench import RESULT_JSON, RunResult, diff_manifests, environment_notes

    recorded = RunResult.read(result)
    command = recorded.manifest.command
    if not command:
        raise ReproduceError(f"{result}: the manifest records no command to rerun")
    root = click.get_current_context().find_root().command
    current = _current_manifest(root, command)
    for note in environment_notes(recorded.manifest, current):
        click.echo(f"note: {note}")
    differences = diff_manifests(recorded.manifest, current)
    if differences:
        for line in differences:
            click.echo(f"differs: {line}")
        # The plugins that took part, each from where another machine can install it.
        from reme_core.bench.participants import install_line

        raise ReproduceError(
            f"{len(differences)} difference{'s' * (len(differences) > 1)} from the recorded run; "
            f"the recorded plugins install with: {install_line(recorded.manifest)}"
        )
    click.echo("manifest matches: plugins, config and datasets are as recorded")
    if dry_run:
        return
    folder = result.parent if result.is_file() else result
    target = out or folder.with_name(folder.name + "-reproduce")
    click.echo(f"rerunning: reme {' '.join(command)} --out {target}")
    code = root.main(args=[*command, "--out", str(target)], prog_name="reme", standalone_mode=False)
    if code not in (None, 0):
        raise ReproduceError(f"the rerun failed (exit code {code})")
    redone = RunResult.read(target / RESULT_JSON)
    changed = compare_figures(recorded.overall, redone.overall)
    for line in changed:
        click.echo(f"figure differs: {line}")
    if changed:
        raise ReproduceError(f"the rerun's figures differ from the recorded ones ({target})")
    click.echo(f"reproduced: {len(recorded.overall)} overall figures identical ({target})")


def compare_figures(recorded: dict[str, float], redone: dict[str, float]) -> list[str]:
    """``metric: recorded -> redone`` for every figure that differs (or is missing on a side)."""
    lines = []
    for key in sorted(recorded.keys() | redone.keys()):
        a, b = recorded.get(key), redone.get(key)
        if a is None or b is None:
            lines.append(f"{key}: {a} -> {b}")
        elif not (math.isclose(a, b, abs_tol=TOLERANCE) or (math.isnan(a) and math.isnan(b))):
            lines.append(f"{key}: {a:.6g} -> {b:.6g}")
    return lines


def _current_manifest(root: click.Command, command: list[str]) -> Manifest:
    """The manifest the recorded command would record now, without running its work. It gets
    a scratch ``--out`` (a compare records its runs' commands without theirs, and what a run
    prepares before its checkpoint must not land beside the recorded result)."""
    import tempfile

    from reme_core.bench import ManifestCaptured, capture_manifest

    try:
        with tempfile.TemporaryDirectory(prefix="reme-reproduce-") as scratch, capture_manifest():
            args = [*command, "--out", str(Path(scratch) / "out")]
            code = root.main(args=args, prog_name="reme", standalone_mode=False)
    except ManifestCaptured as captured:
        return captured.manifest
    except click.ClickException as exc:
        raise ReproduceError(
            f"the recorded command cannot start here: {exc.format_message()}"
        ) from None
    raise ReproduceError(
        f"the recorded command `reme {' '.join(command)}` ended (exit code {code}) without "
        "reporting its manifest; its benchmark plugin must call reme_core.bench.checkpoint"
    )


COMMANDS = [bench_group]
