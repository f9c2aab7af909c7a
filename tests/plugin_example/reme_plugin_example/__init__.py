"""A third-party reme plugin: one chunker (whole file as one chunk) and one CLI command."""

from __future__ import annotations

import click

from reme_core.api import Chunk, Chunker, hookimpl


class WholeFileChunker(Chunker):
    name = "whole_file"

    def chunk(self, path: str, text: str) -> list[Chunk]:
        if not text.strip():
            return []
        return [
            Chunk(
                path=path, ordinal=0, start_line=1, end_line=max(1, text.count("\n") + 1), text=text
            )
        ]


@click.command("example-hello")
def hello() -> None:
    """Say hello from the example plugin."""
    click.echo("hello from reme-plugin-example")


@hookimpl
def register_chunkers(register):
    register(WholeFileChunker)


@hookimpl
def register_commands(register):
    register(hello)
