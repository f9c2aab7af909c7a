"""`reme run NAME [--param k=v | k=@file.json ...]`: run a configured pipeline."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import yaml

from reme_core.cli.options import emit, workspace_options
from reme_core.cli.search_cmd import sync_before_search
from reme_core.errors import RemeError
from reme_core.runtime import Reme
from reme_core.workspace.history import SnapshotRevertError, refusal
from reme_core.workspace.history_entries import PurgeRevertError


def parse_param(item: str) -> tuple[str, Any]:
    """``k=v`` (v read as YAML: numbers, lists, booleans) or ``k=@file`` (a JSON or YAML file)."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise RemeError(f"--param {item!r}: expected key=value or key=@file")
    if raw.startswith("@"):
        path = Path(raw[1:]).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise RemeError(f"--param {key}: cannot read {path}: {exc.strerror}") from None
        try:
            return key.strip(), json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise RemeError(f"--param {key}: {path} is not valid JSON/YAML: {exc}") from None
    try:
        value = yaml.safe_load(raw) if raw else ""
    except yaml.YAMLError:
        value = raw  # plain text that merely looks like YAML
    if value is None or (isinstance(value, dict) and not raw.lstrip().startswith("{")):
        value = raw  # "what: now" is a question, not a mapping; write {a: 1} for one
    return key.strip(), value


@click.command("run")
@click.argument("pipeline")
@click.option(
    "--param",
    "items",
    multiple=True,
    metavar="KEY=VALUE|KEY=@FILE",
    help="A pipeline parameter (repeatable).",
)
@workspace_options(remote=True)
def run_command(
    opener: Callable[[], Reme], as_json: bool, pipeline: str, items: tuple[str, ...]
) -> None:
    """Run a configured pipeline (`pipelines.<NAME>.steps`), e.g. `reme run search --param query=x`."""
    params = dict(parse_param(item) for item in items)
    with opener() as reme:
        sync_before_search(reme)  # steps see edits made outside reme, as `reme search` does
        result = reme.run(pipeline, params)

    def text(r: Any) -> str:
        lines = [f"{r.pipeline}: {len(r.steps)} step(s) in {r.seconds:.2f}s"]
        lines += [f"  {s.name}: {', '.join(s.keys) or '-'} ({s.seconds:.2f}s)" for s in r.steps]
        if r.usage.calls:
            u = r.usage
            lines.append(
                f"  llm: {u.calls} call(s), {u.prompt_tokens} prompt + "
                f"{u.completion_tokens} completion tokens"
            )
        lines += [f"  {verb}" for verb in r.verbs]
        lines.append(json.dumps(r.outputs, indent=2, ensure_ascii=False, default=str))
        return "\n".join(lines)

    emit(result, as_json, text)


@click.command("history")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True)
@workspace_options(writes=False)
def history_command(opener: Callable[[], Reme], as_json: bool, limit: int) -> None:
    """Recorded entries, newest first, each with its kind: run, memory, writes (notes written
    through reme between runs), snapshot (changes made outside reme), revert.
    `reme revert RUN` undoes one; a snapshot only with --force."""
    with opener() as reme:
        entries = reme.history.entries(limit)
    emit(
        entries,
        as_json,
        lambda es: (
            "\n".join(
                f"{e.run}  {e.date}  {e.kind:<8}  {e.message}  ({len(e.files)} file(s))"
                + "".join(f"\n    {verb}" for verb in e.verbs)
                for e in es
            )
            or "no history yet"
        ),
    )


@click.command("revert")
@click.argument("run")
@click.option(
    "--dry-run", is_flag=True, help="Only list the files the revert would delete/modify/restore."
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask before deleting files.")
@click.option(
    "--force", is_flag=True, help="Revert a snapshot of changes made outside reme (undoes them)."
)
@workspace_options(busy="stop it first: a revert rewrites notes and reindexes them")
def revert_command(
    opener: Callable[[], Reme], as_json: bool, run: str, dry_run: bool, yes: bool, force: bool
) -> None:
    """Undo one recorded run (as a new history entry) and reindex the files it changed.

    A revert that deletes files, or undoes a snapshot (which needs --force), lists the files
    and asks first; --yes skips the question (under --json it is required: JSON never prompts).
    """
    with opener() as reme:
        plan = reme.revert_preview(run)
        if dry_run:
            emit(plan, as_json, lambda p: p.describe())
            return
        refused = refusal(plan, force=force, confirm=yes)
        if refused is not None and (
            as_json or isinstance(refused, (SnapshotRevertError, PurgeRevertError))
        ):
            raise refused  # JSON never prompts; a snapshot needs --force, a purge never reverts
        if not (yes or as_json) and (refused is not None or plan.kind == "snapshot"):
            click.echo(plan.describe(), err=True)  # deletes files, or undoes edits made by hand
            if not click.confirm("Revert?", default=False, err=True):
                raise RemeError(f"revert of {run} cancelled; nothing was changed")
        files = reme.revert(run, force=force, confirm=True)
    emit(
        {"run": run, "kind": plan.kind, "files": files, **plan.model_dump(include=_CHANGES)},
        as_json,
        lambda r: f"reverted {run}: " + ", ".join(r["files"]),
    )


_CHANGES = {"deleted", "modified", "restored"}


COMMANDS = [run_command, history_command, revert_command]
