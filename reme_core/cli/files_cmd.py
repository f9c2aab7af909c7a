"""File tools from the command line: read, write, edit, frontmatter, move, delete, ls, stat.

Each goes through the same FileTools as the Python API, so it is confined, atomic, journalled and
indexed before it returns.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click
import yaml

from reme_core.cli.options import emit, workspace_options
from reme_core.errors import RemeError
from reme_core.runtime import Reme
from reme_core.settings import parse_override

hash_option = click.option(
    "--expected-hash", help="Refuse (conflict) unless the file's current sha256 is this."
)


@click.command("read")
@click.argument("path")
@click.option("--start-line", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--end-line", type=click.IntRange(min=1))
@workspace_options(remote=True, writes=False)
def read_command(
    opener: Callable[[], Reme], as_json: bool, path: str, start_line: int, end_line: int | None
) -> None:
    """Print a file (or a line range); long output stops at files.max_read_bytes with a hint."""
    with opener() as reme:
        result = reme.files.read(path, start_line=start_line, end_line=end_line)

    def text(r: Any) -> str:
        return r.content.rstrip("\n") + (f"\n[{r.hint}]" if r.truncated and r.hint else "")

    emit(result, as_json, text)


@click.command("write")
@click.argument("path")
@click.option("--content", help="The note's full text (default: read standard input).")
@hash_option
@workspace_options(remote=True)
def write_command(
    opener: Callable[[], Reme],
    as_json: bool,
    path: str,
    content: str | None,
    expected_hash: str | None,
) -> None:
    """Create or overwrite a note atomically."""
    if content is None:
        content = sys.stdin.read()
    with opener() as reme:
        result = reme.files.write(path, content, expected_hash=expected_hash)
    verb = "created" if result.created else ("wrote" if result.changed else "unchanged")
    emit(result, as_json, lambda r: f"{verb} {r.path} sha256={r.content_hash}")


@click.command("edit")
@click.argument("path")
@click.option("--old", required=True, help="Exact text to find.")
@click.option("--new", required=True, help="Replacement text.")
@click.option(
    "--count",
    "expected_count",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="How many occurrences must be found (all are replaced).",
)
@hash_option
@workspace_options(remote=True)
def edit_command(
    opener: Callable[[], Reme],
    as_json: bool,
    path: str,
    old: str,
    new: str,
    expected_count: int,
    expected_hash: str | None,
) -> None:
    """Find and replace exact text in a note."""
    with opener() as reme:
        result = reme.files.edit(
            path, old, new, expected_count=expected_count, expected_hash=expected_hash
        )
    emit(
        result,
        as_json,
        lambda r: f"edited {r.path}: {r.replacements} replacement(s) sha256={r.content_hash}",
    )


@click.command("frontmatter")
@click.argument("path")
@click.option(
    "--field",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a frontmatter key (value parsed as YAML). Repeatable.",
)
@click.option(
    "--remove", "removals", multiple=True, metavar="KEY", help="Remove a key. Repeatable."
)
@hash_option
@workspace_options(remote=True)
def frontmatter_command(
    opener: Callable[[], Reme],
    as_json: bool,
    path: str,
    assignments: tuple[str, ...],
    removals: tuple[str, ...],
    expected_hash: str | None,
) -> None:
    """Show a note's frontmatter, or change only the keys named (order, comments kept)."""
    updates: dict[str, Any] = {}
    for item in assignments:
        keys, value = parse_override(item)
        if len(keys) != 1:
            raise RemeError(
                f"--field {item!r}: frontmatter keys are top-level names, not dotted paths"
            )
        updates[keys[0]] = value
    with opener(writes=bool(updates or removals)) as reme:
        if not updates and not removals:
            stat = reme.files.stat(path)
            emit(
                {"path": stat.path, "frontmatter": stat.frontmatter or {}},
                as_json,
                lambda r: yaml.safe_dump(
                    r["frontmatter"], sort_keys=False, allow_unicode=True
                ).rstrip(),
            )
            return
        result = reme.files.update_frontmatter(path, updates, removals, expected_hash=expected_hash)
    emit(
        result,
        as_json,
        lambda r: f"{'updated' if r.changed else 'unchanged'} {r.path} sha256={r.content_hash}",
    )


@click.command("move")
@click.argument("src")
@click.argument("dst")
@hash_option
@workspace_options(remote=True)
def move_command(
    opener: Callable[[], Reme], as_json: bool, src: str, dst: str, expected_hash: str | None
) -> None:
    """Move a note and rewrite the links that point at it."""
    with opener() as reme:
        result = reme.files.move(src, dst, expected_hash=expected_hash)
    emit(
        result,
        as_json,
        lambda r: (
            f"moved {r.path} -> {r.to}; rewrote links in {len(r.rewritten)} note(s)"
            + "".join(f"\n  {p}" for p in r.rewritten)
        ),
    )


@click.command("delete")
@click.argument("path")
@hash_option
@workspace_options(remote=True)
def delete_command(
    opener: Callable[[], Reme], as_json: bool, path: str, expected_hash: str | None
) -> None:
    """Delete a note; prints the notes whose links to it now dangle."""
    with opener() as reme:
        result = reme.files.delete(path, expected_hash=expected_hash)
    emit(
        result,
        as_json,
        lambda r: (
            f"deleted {r.path}"
            + ("; still linked from:" + "".join(f"\n  {p}" for p in r.inbound) if r.inbound else "")
        ),
    )


@click.command("ls")
@click.argument("path", required=False, default="")
@click.option("--recursive", "-r", is_flag=True)
@workspace_options(remote=True, writes=False)
def ls_command(opener: Callable[[], Reme], as_json: bool, path: str, recursive: bool) -> None:
    """List files and folders (skips .reme, .git and hidden files)."""
    with opener() as reme:
        result = reme.files.ls(path, recursive=recursive)
    emit(
        result,
        as_json,
        lambda r: "\n".join(
            e.path + ("/" if e.kind == "dir" else f"  {e.size}") for e in r.entries
        ),
    )


@click.command("stat")
@click.argument("path")
@workspace_options(remote=True, writes=False)
def stat_command(opener: Callable[[], Reme], as_json: bool, path: str) -> None:
    """Size, hash, modification time, line count and frontmatter of a file."""
    with opener() as reme:
        result = reme.files.stat(path)
    emit(
        result,
        as_json,
        lambda r: "\n".join(
            f"{k}: {v}" for k, v in r.model_dump(mode="json").items() if v is not None
        ),
    )


COMMANDS = [
    read_command,
    write_command,
    edit_command,
    frontmatter_command,
    move_command,
    delete_command,
    ls_command,
    stat_command,
]
