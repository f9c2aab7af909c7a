"""``fetch_messages``: as many hits as it takes to show k distinct messages, or all there are."""

from __future__ import annotations

from dataclasses import dataclass, field

from reme_beam.retrieval import fetch_messages

from reme_core.schema import SearchHit, SearchResponse
from reme_core.search.engine import MAX_LIMIT


def hit(path: str, line: int) -> SearchHit:
    return SearchHit(
        chunk_id=f"{path}:{line}", path=path, start_line=line, end_line=line, score=1.0, text=""
    )


@dataclass
class FakeSearch:
    """Ranked hits cut at the limit asked for; records every limit."""

    ranked: list[SearchHit]
    limits: list[int] = field(default_factory=list)

    def search(self, query: str, limit: int) -> SearchResponse:
        self.limits.append(limit)
        return SearchResponse(query=query, hits=self.ranked[:limit], arms=["keyword"])


def ids_by_line(hits: list[SearchHit]) -> list[frozenset[str]]:
    # Line n shows message n // 3: three hits in a row show the same message (one long message
    # split into chunks, or a note and its overlap), and line 0 shows none.
    return [frozenset({str(h.start_line // 3)}) if h.start_line else frozenset() for h in hits]


def test_the_limit_grows_until_k_distinct_messages_are_shown() -> None:
    search = FakeSearch([hit("n.md", line) for line in range(0, 400)])
    hits, hit_ids = fetch_messages(search, "q", 20, ids_by_line)  # type: ignore[arg-type]
    # 20 hits show 7 messages, 40 show 14, 80 show 27: enough.
    assert search.limits == [20, 40, 80]
    assert len(hits) == 80 and len(frozenset().union(*hit_ids)) >= 20


def test_it_stops_when_the_search_runs_out_or_at_the_maximum_limit() -> None:
    short = FakeSearch([hit("n.md", line) for line in range(1, 31)])
    hits, _ = fetch_messages(short, "q", 50, ids_by_line)  # type: ignore[arg-type]
    assert short.limits == [50] and len(hits) == 30  # fewer hits than asked: no more to get
    endless = FakeSearch([hit("n.md", 0)] * 1000)  # hits that show nothing
    hits, hit_ids = fetch_messages(endless, "q", 10, ids_by_line)  # type: ignore[arg-type]
    assert endless.limits[-1] == MAX_LIMIT and len(hits) == MAX_LIMIT and not any(hit_ids)


def test_a_step_that_returns_more_hits_than_asked_stops_when_nothing_more_comes() -> None:
    class Wide(FakeSearch):
        # Like search_v2: each group gives several hits, and there are only 30 hits in all.
        def search(self, query: str, limit: int) -> SearchResponse:
            self.limits.append(limit)
            return SearchResponse(query=query, hits=self.ranked[: limit * 3], arms=["keyword"])

    wide = Wide([hit("n.md", 0)] * 30)
    fetch_messages(wide, "q", 10, ids_by_line)  # type: ignore[arg-type]
    assert wide.limits == [10, 20]  # 30 hits both times: exhausted
