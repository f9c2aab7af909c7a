"""A toy benchmark command written the way benchmark plugins write theirs (for reproduce tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from reme_core.bench import (
    RunResult,
    build_manifest,
    checkpoint,
    resolve_config,
    run_items,
)
from reme_core.plugins import load_plugins


def score(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "category": "odd" if item["x"] % 2 else "even",
        "metrics": {"hit": float(item["x"] > 1)},
    }


@click.group("toy")
def toy_group() -> None:
    """A toy benchmark."""


@toy_group.command("run")
@click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--set", "overrides", multiple=True)
def toy_run(data: Path, out: Path, overrides: tuple[str, ...]) -> None:
    resolved = resolve_config(None, overrides=overrides)
    manifest = build_manifest(
        settings=resolved.settings,
        plugins=load_plugins(),
        datasets=[data],
        overrides=overrides,
    )
    checkpoint(manifest)
    items = [{"id": str(i), "x": x} for i, x in enumerate(json.loads(data.read_text()))]
    rows = run_items(items, score, out_dir=out, workers=1, progress=False)
    RunResult.from_items("toy", manifest, rows).save(out)
