"""Search over the example workspace: scores, limits, filters, validation, link expansion."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV, copy_example

from reme_core.errors import SearchError
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_core.search.arms import KeywordArm
from reme_core.search.engine import Searcher

ALL = ["active", "archived", "superseded"]
HEROKU = "digest/wiki/old-hosting-heroku.md"  # archived
OLD_TUNING = "digest/wiki/postgres-tuning.md"  # superseded
ARCHITECTURE = "digest/wiki/larkspur-architecture.md"
PREFERENCES = "digest/personal/mira-preferences.md"  # no date anywhere


def make_plugins() -> Plugins:
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    plugins.collect()
    return plugins


@pytest.fixture(scope="module")
def reme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reme]:
    """One indexed copy of the example workspace, shared by the read-only tests below."""
    root = tmp_path_factory.mktemp("search") / "ws"
    copy_example(root)
    with Reme.open(root, plugins=make_plugins(), env=KEYWORD_ONLY_ENV) as opened:
        report = opened.index()
        assert report.problems == {}
        yield opened


def paths(response: object) -> set[str]:
    return {hit.path for hit in response.hits}  # type: ignore[attr-defined]


def search(reme: Reme, query: str, **filters: object) -> set[str]:
    return paths(reme.search(query, limit=50, filters=SearchFilters(**filters), expand=False))


# -- scores, arms, limits ----------------------------------------------------------------------


def test_scores_are_normalised_and_the_keyword_arm_ran(reme: Reme) -> None:
    response = reme.search("postgres connections", limit=20)
    assert response.arms == ["keyword"]
    assert response.degraded == []
    assert response.query == "postgres connections"
    hits = response.hits
    assert len(hits) >= 5
    assert hits[0].score == 1.0
    assert all(0.0 <= hit.score <= 1.0 for hit in hits)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert [hit.arm_ranks for hit in hits] == [{"keyword": i} for i in range(1, len(hits) + 1)]
    top = hits[0]
    assert top.text and top.start_line <= top.end_line
    assert top.chunk_id.startswith(top.path + "#")
    assert top.name  # from the note's frontmatter


def test_limit_and_default_limit(reme: Reme) -> None:
    assert len(reme.search("postgres", limit=3).hits) == 3
    assert len(reme.search("postgres", limit=1).hits) == 1
    assert len(reme.search("postgres").hits) == reme.settings.search.limit == 10
    assert len(reme.search("postgres", limit=200).hits) > 10


def test_min_score_drops_hits(reme: Reme) -> None:
    everything = reme.search("postgres", limit=50).hits
    kept = reme.search("postgres", limit=50, min_score=0.95).hits
    assert 0 < len(kept) < len(everything)
    assert all(hit.score >= 0.95 for hit in kept)
    assert [h.chunk_id for h in kept] == [h.chunk_id for h in everything if h.score >= 0.95]
    assert [h.chunk_id for h in reme.search("postgres", min_score=1.0).hits] == [
        everything[0].chunk_id
    ]


def test_no_match_is_an_empty_answer_not_an_error(reme: Reme) -> None:
    response = reme.search("zzzyqxw")
    assert response.hits == [] and response.linked == []
    assert response.arms == ["keyword"]


def test_cjk_query_finds_the_chinese_paragraph(reme: Reme) -> None:
    response = reme.search("数据库连接池", expand=False)
    assert response.hits[0].path == "daily/2026-11-10/session-perf-tuning.md"
    assert "数据库连接池" in response.hits[0].text


# -- filters ---------------------------------------------------------------------------------


def test_path_prefix_filter(reme: Reme) -> None:
    unfiltered = search(reme, "postgres")
    assert any(p.startswith("daily/") for p in unfiltered)
    for prefix in ("digest", "digest/", "./digest"):
        found = search(reme, "postgres", paths=[prefix])
        assert found and all(p.startswith("digest/") for p in found), prefix
    assert search(reme, "postgres", paths=["digest/wiki/postgres-tuning-2026.md"]) == {
        "digest/wiki/postgres-tuning-2026.md"
    }
    # A prefix is a folder, not a string prefix.
    assert search(reme, "postgres", paths=["dig"]) == set()


def test_path_glob_filter(reme: Reme) -> None:
    assert search(reme, "migration", paths=["daily/**"]) == {
        "daily/2026-11-03.md",
        "daily/2026-11-03/session-db-migration.md",
    }
    # "*" stays within one folder: the day pages, not the sessions below them.
    assert search(reme, "migration", paths=["daily/*.md"]) == {"daily/2026-11-03.md"}
    assert search(reme, "postgres", paths=["**/*-2026.md"]) == {
        "digest/wiki/postgres-tuning-2026.md"
    }
    several = search(reme, "postgres", paths=["resource", "digest/procedure/**"])
    assert several == {"resource/runbook-incident-2026-11.md", "digest/procedure/db-migrations.md"}


def test_tag_filters_any_and_all(reme: Reme) -> None:
    any_of = search(reme, "postgres", tags=["performance", "incident"])
    assert any_of == {
        "daily/2026-11-10/session-perf-tuning.md",
        "digest/wiki/postgres-tuning-2026.md",
        "resource/runbook-incident-2026-11.md",
    }
    all_of = search(reme, "postgres", tags=["performance", "wiki"], tag_mode="all")
    assert all_of == {"digest/wiki/postgres-tuning-2026.md"}
    # Tags compare case-insensitively; an unknown tag matches nothing.
    assert search(reme, "postgres", tags=["Incident"]) == {"resource/runbook-incident-2026-11.md"}
    assert search(reme, "postgres", tags=["no-such-tag"]) == set()


def test_date_filters(reme: Reme) -> None:
    since = search(reme, "postgres", since=dt.date(2026, 11, 8))
    assert since == {
        "daily/2026-11-10/session-perf-tuning.md",
        "digest/wiki/postgres-tuning-2026.md",
        ARCHITECTURE,
    }
    assert ARCHITECTURE in search(reme, "migration")  # dated 2026-11-12
    until = search(reme, "migration", until=dt.date(2026, 11, 3))
    assert until == {
        "daily/2026-11-03.md",
        "daily/2026-11-03/session-db-migration.md",  # date from frontmatter
        "digest/procedure/db-migrations.md",
        "digest/procedure/deploy-process.md",  # 2026-11-02
    }
    window = search(reme, "postgres", since=dt.date(2026, 11, 7), until=dt.date(2026, 11, 7))
    assert window == {"resource/runbook-incident-2026-11.md"}


def test_notes_without_a_date_are_excluded_by_date_filters(reme: Reme) -> None:
    assert PREFERENCES in search(reme, "mira")
    assert reme.catalog.note(PREFERENCES).date is None
    assert PREFERENCES not in search(reme, "mira", since=dt.date(1970, 1, 1))
    assert PREFERENCES not in search(reme, "mira", until=dt.date(2999, 1, 1))


def test_status_filters(reme: Reme) -> None:
    default = paths(reme.search("heroku postgres", limit=50, expand=False))
    assert HEROKU not in default and OLD_TUNING not in default
    assert default  # active notes still match
    assert search(reme, "heroku postgres", statuses=["archived"]) == {HEROKU}
    assert search(reme, "heroku postgres", statuses=["superseded"]) == {OLD_TUNING}
    everything = search(reme, "heroku postgres", statuses=ALL)
    assert {HEROKU, OLD_TUNING} | default == everything


def test_default_statuses_come_from_config(reme: Reme) -> None:
    searcher = Searcher(
        reme.catalog,
        [KeywordArm(reme.keyword)],
        {"keyword": 1.0},
        reme.settings.search.model_copy(update={"statuses": ["archived"]}),
        graph=reme.graph,
        tags=reme.tags,
    )
    assert paths(searcher.search("heroku", limit=50, expand=False)) == {HEROKU}


# -- invalid requests ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "empty query"),
        ({"query": "   \n"}, "empty query"),
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"limit": -1}, "limit"),
        ({"min_score": 1.5}, "min_score"),
        ({"min_score": -0.1}, "min_score"),
        (
            {"filters": SearchFilters(since=dt.date(2026, 11, 10), until=dt.date(2026, 11, 1))},
            "after",
        ),
        ({"filters": SearchFilters(statuses=[])}, "status"),
    ],
)
def test_invalid_requests_raise(reme: Reme, kwargs: dict, message: str) -> None:
    query = kwargs.pop("query", "postgres")
    with pytest.raises(SearchError, match=message):
        reme.search(query, **kwargs)


def test_limit_bounds_are_inclusive(reme: Reme) -> None:
    reme.search("postgres", limit=200)
    reme.search("postgres", min_score=0.0)
    reme.search("postgres", min_score=1.0)


def test_tag_filter_without_a_tag_index_is_an_error(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    copy_example(root)
    with Reme.open(
        root, plugins=make_plugins(), env=KEYWORD_ONLY_ENV, overrides=["components.tag_index=null"]
    ) as reme:
        assert reme.tags is None
        reme.index()
        assert "daily/2026-11-10/session-perf-tuning.md" in paths(reme.search("shared_buffers"))
        with pytest.raises(SearchError, match="tag index"):
            reme.search("postgres", filters=SearchFilters(tags=["postgres"]))


def test_without_a_graph_search_has_no_expansion(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    copy_example(root)
    with Reme.open(
        root, plugins=make_plugins(), env=KEYWORD_ONLY_ENV, overrides=["components.graph=null"]
    ) as reme:
        reme.index()
        response = reme.search("postgres")
        assert response.hits and response.linked == []
        assert reme.status()["unresolved_links"] == 0
        # Deleting still reports inbound links, found by reading the notes.
        result = reme.files.delete("daily/2026-11-10/session-perf-tuning.md")
        assert "digest/wiki/postgres-tuning-2026.md" in result.inbound


# -- link expansion --------------------------------------------------------------------------


def test_link_expansion_both_directions_with_via(reme: Reme) -> None:
    response = reme.search("gunicorn uvicorn workers", limit=1)
    (hit,) = response.hits
    assert hit.path == ARCHITECTURE
    linked = {(n.path, n.direction) for n in response.linked}
    assert all(n.via == ARCHITECTURE for n in response.linked)
    outbound = {link.target for link in reme.graph.outbound(ARCHITECTURE) if link.target}
    inbound = {link.source for link in reme.graph.inbound(ARCHITECTURE)}
    assert ("digest/procedure/deploy-process.md", "outbound") in linked
    assert ("daily/2026-11-02/session-deploy-failure.md", "inbound") in linked
    assert {p for p, d in linked if d == "outbound"} <= outbound
    assert {p for p, d in linked if d == "inbound"} <= inbound
    # The archived note it links to is filtered out, like it would be as a hit.
    assert HEROKU in outbound and HEROKU in inbound
    assert HEROKU not in {n.path for n in response.linked}
    # Names and descriptions come from the catalog.
    deploy = next(n for n in response.linked if n.path == "digest/procedure/deploy-process.md")
    assert deploy.name == "Deploying Larkspur to production"
    assert deploy.description


def test_link_expansion_includes_excluded_statuses_when_asked(reme: Reme) -> None:
    response = reme.search("gunicorn uvicorn workers", limit=1, filters=SearchFilters(statuses=ALL))
    assert HEROKU in {n.path for n in response.linked}


def test_link_expansion_leaves_out_the_hits_themselves(reme: Reme) -> None:
    response = reme.search("postgres", limit=10)
    hit_paths = paths(response)
    assert response.linked
    assert not hit_paths & {n.path for n in response.linked}
    assert len({n.path for n in response.linked}) == len(response.linked)
    assert all(n.via in hit_paths for n in response.linked)


def test_link_expansion_respects_the_path_filter(reme: Reme) -> None:
    response = reme.search(
        "gunicorn uvicorn workers", limit=1, filters=SearchFilters(paths=["digest"])
    )
    assert response.linked
    assert all(n.path.startswith("digest/") for n in response.linked)


def test_link_expansion_can_be_turned_off(reme: Reme) -> None:
    assert reme.search("postgres", expand=False).linked == []


def test_link_expansion_caps_each_direction(reme: Reme) -> None:
    def linked_with(limit: int) -> list:
        config = reme.settings.search.model_copy(update={"expansion_limit": limit})
        searcher = Searcher(
            reme.catalog,
            [KeywordArm(reme.keyword)],
            {"keyword": 1.0},
            config,
            graph=reme.graph,
            tags=reme.tags,
        )
        return searcher.search("postgres", limit=10).linked

    uncapped = linked_with(10)
    directions = [n.direction for n in uncapped]
    assert directions.count("outbound") >= 2 and directions.count("inbound") >= 2
    capped = linked_with(1)
    assert sorted(n.direction for n in capped) == ["inbound", "outbound"]
    assert linked_with(0) == []


# -- hits found by meaning alone ---------------------------------------------------------------


class EverythingArm:
    """A vector arm stand-in: every allowed chunk is somewhat near, as with real embeddings."""

    name = "vector"

    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]:
        return [(chunk_id, 0.5) for chunk_id in sorted(allowed_ids)[:limit]]


def hybrid(reme: Reme) -> Searcher:
    return Searcher(
        reme.catalog,
        [KeywordArm(reme.keyword), EverythingArm()],
        {"keyword": 0.7, "vector": 0.3},
        reme.settings.search,
        graph=reme.graph,
        tags=reme.tags,
    )


def test_hits_without_any_keyword_match_are_flagged_meaning_only(reme: Reme) -> None:
    response = hybrid(reme).search("zzzxqv", expand=False)
    assert response.hits, "the vector arm always has nearest neighbours"
    assert response.meaning_only is True


def test_a_keyword_match_is_not_meaning_only(reme: Reme) -> None:
    assert hybrid(reme).search("postgres", expand=False).meaning_only is False
    # Keyword-only: nothing found is just no hits, not a meaning-only answer.
    response = reme.search("zzzxqv")
    assert response.hits == [] and response.meaning_only is False


def test_the_cli_and_the_studio_say_when_hits_are_by_meaning_only(reme: Reme) -> None:
    import types

    import jinja2

    from reme_core.cli.search_cmd import _text
    from reme_core.studio import web
    from reme_core.studio.render import highlight

    response = hybrid(reme).search("zzzxqv", expand=False)
    keyword_match = hybrid(reme).search("postgres", expand=False)
    assert "by meaning only" in _text(response)
    assert "by meaning only" not in _text(keyword_match)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(web.HERE / "templates"))
    env.filters["highlight"] = highlight
    results = env.get_template("_search_results.html")
    page = types.SimpleNamespace(
        note=lambda path: f"/studio/note?path={path}", may=lambda action: False
    )
    assert "found by meaning alone" in results.render(result=response, page=page)
    assert "found by meaning alone" not in results.render(result=keyword_match, page=page)
