"""Base classes for every component type a plugin can register.

An implementation is a class with a ``name`` and a pydantic ``Settings`` model. Registration hands
over the class; it is constructed only when config selects it, so registering stays cheap.

The contracts live in submodules by what they cover (``base``: the shared shape, settings and
context; ``indexes``: chunker, keyword index, graph, tag index; ``vectors``: embedding, vector
record, file store; ``llm``: chat model, usage, tokenizer; ``agents``; ``steps``; ``kinds``: the
type names). Import them from here: this package's names are the stable ones.
"""

from reme_core.components.agents import AgentResult, AgentTask, AgentToolCall, AgentWrapper
from reme_core.components.base import (
    Component,
    ComponentContext,
    ComponentSettings,
    required_settings,
    settings_path,
)
from reme_core.components.indexes import Chunker, Graph, KeywordIndex, TagIndex, TextSource
from reme_core.components.kinds import COMPONENT_TYPES, Kind
from reme_core.components.llm import Llm, LlmUsage, ModelT, Tokenizer, estimate_tokens
from reme_core.components.steps import Step
from reme_core.components.vectors import Embedding, FileStore, VectorRecord

__all__ = [
    "COMPONENT_TYPES",
    "AgentResult",
    "AgentTask",
    "AgentToolCall",
    "AgentWrapper",
    "Chunker",
    "Component",
    "ComponentContext",
    "ComponentSettings",
    "Embedding",
    "FileStore",
    "Graph",
    "KeywordIndex",
    "Kind",
    "Llm",
    "LlmUsage",
    "ModelT",
    "Step",
    "TagIndex",
    "TextSource",
    "Tokenizer",
    "VectorRecord",
    "estimate_tokens",
    "required_settings",
    "settings_path",
]
