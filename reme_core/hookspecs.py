"""The hooks a reme plugin can implement: one per component type, each taking a ``register`` callback.

Every hook fires once, when plugins load (``reme_core.plugins.load_plugins``). Call ``register``
with implementation classes (not instances); reme constructs one only when config selects it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from reme_core.components import (
        AgentWrapper,
        Chunker,
        Embedding,
        FileStore,
        Graph,
        KeywordIndex,
        Llm,
        Step,
        TagIndex,
        Tokenizer,
    )

hookspec = pluggy.HookspecMarker("reme")
hookimpl = pluggy.HookimplMarker("reme")


@hookspec
def register_llms(register: Callable[[type[Llm]], None]) -> None:
    """Register language-model classes (subclasses of ``reme_core.components.Llm``)."""


@hookspec
def register_embeddings(register: Callable[[type[Embedding]], None]) -> None:
    """Register embedding-model classes (subclasses of ``Embedding``)."""


@hookspec
def register_file_stores(register: Callable[[type[FileStore]], None]) -> None:
    """Register vector-store classes (subclasses of ``FileStore``)."""


@hookspec
def register_chunkers(register: Callable[[type[Chunker]], None]) -> None:
    """Register chunker classes (subclasses of ``Chunker``); config maps file suffixes to them."""


@hookspec
def register_graphs(register: Callable[[type[Graph]], None]) -> None:
    """Register link-graph classes (subclasses of ``Graph``)."""


@hookspec
def register_keyword_indexes(register: Callable[[type[KeywordIndex]], None]) -> None:
    """Register full-text index classes (subclasses of ``KeywordIndex``)."""


@hookspec
def register_tag_indexes(register: Callable[[type[TagIndex]], None]) -> None:
    """Register tag-index classes (subclasses of ``TagIndex``)."""


@hookspec
def register_agent_wrappers(register: Callable[[type[AgentWrapper]], None]) -> None:
    """Register agent-wrapper classes (subclasses of ``AgentWrapper``)."""


@hookspec
def register_tokenizers(register: Callable[[type[Tokenizer]], None]) -> None:
    """Register token counters (subclasses of ``Tokenizer``); ``components.tokenizer`` picks one."""


@hookspec
def register_steps(register: Callable[[type[Step]], None]) -> None:
    """Register pipeline steps (subclasses of ``Step``); pipelines name them in config."""


@hookspec
def register_commands(register: Callable[..., None]) -> None:
    """Register CLI commands: ``register(command: click.Command, group: str | None = None)``.

    ``group`` names an existing or new command group (``"bench"``) to nest the command under.
    """


HOOK_NAMES: tuple[str, ...] = tuple(
    name
    for name, value in list(globals().items())
    if name.startswith("register_") and callable(value)
)
"""Every hook a plugin may implement (used by docs and tests)."""
