"""Plugins for benchmark runs: every embedding gets a ``memo_<name>`` twin that caches by text.

Benchmarks build many throwaway workspaces over overlapping texts (LongMemEval haystacks share
sessions); the twin embeds each distinct text once per process and model.
"""

from __future__ import annotations

import types

import numpy as np

from reme_core import hookimpl
from reme_core.plugins import Plugins, load_plugins


def memoised_plugins() -> Plugins:
    """The installed plugins plus ``memo_<name>`` twins of every embedding that cache by text."""
    base = load_plugins()
    memo: dict[tuple[str, str], np.ndarray] = {}
    twins = []
    for entry in base.registry("embedding").entries():

        def embed_passages(self, texts, _parent=entry.cls):  # type: ignore[no-untyped-def]
            todo = [t for t in dict.fromkeys(texts) if (self.model_id, t) not in memo]
            if todo:
                for text, vector in zip(todo, _parent.embed_passages(self, todo), strict=True):
                    memo[(self.model_id, text)] = vector
            return (
                np.stack([memo[(self.model_id, t)] for t in texts])
                if texts
                else np.zeros((0, self.dim), dtype=np.float32)
            )

        twins.append(
            type(
                f"Memo{entry.cls.__name__}",
                (entry.cls,),
                {"name": f"memo_{entry.name}", "embed_passages": embed_passages},
            )
        )
    module = types.ModuleType("bench_memo_embeddings")

    @hookimpl
    def register_embeddings(register):  # type: ignore[no-untyped-def]
        for twin in twins:
            register(twin)

    module.register_embeddings = register_embeddings  # type: ignore[attr-defined]
    base.register(module, name="bench_memo_embeddings")
    base.collect()
    return base
