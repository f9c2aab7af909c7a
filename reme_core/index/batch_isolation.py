"""Embedding and storing in batches, so that what the model or the store refuses costs only itself.

A batch is tried whole first (the fast path). When the model or the store refuses it, each item
is tried alone: the ones that fail alone are refused and reported (``reme status``), the rest go
on. When every item fails alone too, it is the model or the store failing, not the items: that
error is raised and the whole batch stays pending, retried later.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from reme_core.components import FileStore, VectorRecord
from reme_core.errors import RemeError


def embed_each(
    embed: Callable[[list[str]], np.ndarray], texts: Mapping[str, str]
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The vectors of ``texts`` (content hash -> text), by content hash, and the texts the model
    refused alone (content hash -> why). Raises when the model fails every text."""
    try:
        embedded = embed(list(texts.values()))
    except RemeError:
        if len(texts) == 1:
            raise
    else:
        return dict(zip(texts, embedded, strict=True)), {}
    done: dict[str, np.ndarray] = {}
    failed: dict[str, str] = {}
    first: RemeError | None = None
    for digest, text in texts.items():
        try:
            done[digest] = embed([text])[0]
        except RemeError as exc:
            failed[digest] = str(exc)
            first = first or exc
    if not done and first is not None:
        raise first
    return done, failed


def upsert_each(
    store: FileStore,
    records: list[VectorRecord],
    hashes: dict[str, str],
    refused: dict[str, tuple[str, str]],
) -> list[VectorRecord]:
    """Store ``records``; when the store refuses the batch, one at a time, adding those it
    refuses alone to ``refused`` (chunk id -> (content hash, why)). Every record failing alone is
    the store failing: raised. Returns the records stored."""
    if not records:
        return []
    try:
        store.upsert(records)
        return records
    except RemeError:
        if len(records) == 1:
            raise
    stored: list[VectorRecord] = []
    first: RemeError | None = None
    for record in records:
        try:
            store.upsert([record])
        except RemeError as exc:
            refused[record.chunk_id] = (
                hashes[record.chunk_id],
                f"the vector store refused it: {exc}",
            )
            first = first or exc
        else:
            stored.append(record)
    if not stored and first is not None:
        for record in records:
            refused.pop(record.chunk_id, None)
        raise first
    return stored
