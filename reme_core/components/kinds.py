"""The component types a plugin can register, by the name config and hookspecs use."""

from __future__ import annotations

from typing import Literal

from reme_core.components.agents import AgentWrapper
from reme_core.components.base import Component
from reme_core.components.indexes import Chunker, Graph, KeywordIndex, TagIndex
from reme_core.components.llm import Llm, Tokenizer
from reme_core.components.steps import Step
from reme_core.components.vectors import Embedding, FileStore

COMPONENT_TYPES: dict[str, type[Component]] = {
    "llm": Llm,
    "embedding": Embedding,
    "file_store": FileStore,
    "chunker": Chunker,
    "graph": Graph,
    "keyword_index": KeywordIndex,
    "tag_index": TagIndex,
    "agent_wrapper": AgentWrapper,
    "tokenizer": Tokenizer,
    "step": Step,
}
"""Component type name -> base class. ``command`` is handled apart: it registers click commands."""

Kind = Literal[
    "llm",
    "embedding",
    "file_store",
    "chunker",
    "graph",
    "keyword_index",
    "tag_index",
    "agent_wrapper",
    "tokenizer",
    "step",
]
