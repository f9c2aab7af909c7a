"""The default keyword index: BM25 over chunks with bm25s, made incremental with two segments.

bm25s builds an immutable index, so this plugin keeps:

- a *main* segment: a bm25s index over every chunk as of the last merge, with its chunk ids;
- a *delta* segment: a small bm25s index over chunks written since, rebuilt from its own tokens
  when it changed: by ``refresh()``, which the indexer calls after each write, or else lazily by
  the next search;
- *tombstones*: main chunks deleted or replaced since.

Searches read a published *view* (main, a tombstone mask that writes copy before changing, the
delta) with no lock held, so many score at once; a write withdraws the view and ``refresh()`` (or
the next search) publishes a new one. A search scores each segment over the chunks that hold a
query token and pass the masks, then merges the segments' hits by score; scoring needs numpy
alone, bm25s (and scipy behind it) is imported only to build a segment. A merge (``optimize()``,
or automatically when the delta or the tombstones outgrow
``max(delta_merge_min, delta_merge_ratio * live main chunks)``) rebuilds main from the live chunk
texts. While main is empty, writes only accumulate, so a bulk index of many notes builds main
once, at the first search or flush; one edited note never rebuilds main.

The modules, each with the details of its part:

- ``index``: ``Bm25sKeywordIndex``, the component: writes, views, merges, loading;
- ``segments``: the in-memory state: segments, main's tombstone mask, the delta, the view;
- ``scoring``: one segment's scores and top k, and the filter masks;
- ``build``: building segments with bm25s, the delta with the live corpus's statistics
  (``corpus_stats`` holds the bm25s subclass that scores it so);
- ``storage``: the rows database and main's files under ``<state_dir>/bm25s/``, memory-mapped
  when loaded (``terms``: the vocabulary as a table searched in place; ``saved_ids``: the chunk
  ids, decoded where read);
- ``migration``: moving a format-2 index's rows into the rows database.
"""

from __future__ import annotations

from collections.abc import Callable

from reme_core import hookimpl
from reme_core.api import KeywordIndex
from reme_plugins.keyword_bm25s.index import Bm25sKeywordIndex
from reme_plugins.keyword_bm25s.storage import (
    FORMAT_VERSION,
    SCHEMA,
    SCHEMA_VERSION,
    Row,
    text_hash,
)

__all__ = [
    "FORMAT_VERSION",
    "SCHEMA",
    "SCHEMA_VERSION",
    "Bm25sKeywordIndex",
    "Row",
    "register_keyword_indexes",
    "text_hash",
]


@hookimpl
def register_keyword_indexes(register: Callable[[type[KeywordIndex]], None]) -> None:
    register(Bm25sKeywordIndex)
