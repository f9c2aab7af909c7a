"""`reme search`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import click
from pydantic import ValidationError

from reme_core.cli.options import emit, workspace_options
from reme_core.client import RemoteReme
from reme_core.errors import SearchError
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters, SearchResponse
from reme_core.server.discovery import lock_held


def _date(_: click.Context, param: click.Parameter, value: str | None) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)", param=param) from None


@click.command("search")
@click.argument("query")
@click.option("--limit", "-n", type=int, help="Number of hits (default: search.limit).")
@click.option("--min-score", type=float, help="Drop hits below this fused score (0..1).")
@click.option(
    "--path", "paths", multiple=True, help="Only under this folder or matching this glob."
)
@click.option("--tag", "tags", multiple=True, help="Only notes with this tag (repeat for more).")
@click.option("--all-tags", is_flag=True, help="Require every --tag instead of any.")
@click.option("--since", callback=_date, help="Only notes dated on or after YYYY-MM-DD.")
@click.option("--until", callback=_date, help="Only notes dated on or before YYYY-MM-DD.")
@click.option(
    "--status", "statuses", multiple=True, help="Note status to include (default: active)."
)
@click.option(
    "--as-of",
    callback=_date,
    help="The day the question is asked, YYYY-MM-DD: dates in it count from it (default today).",
)
@click.option("--no-expand", is_flag=True, help="Skip one-hop link expansion.")
@click.option("--no-sync", is_flag=True, help="Skip the incremental index pass before searching.")
@workspace_options(remote=True, writes=False)
def search_command(
    opener: Callable[[], Reme],
    as_json: bool,
    query: str,
    limit: int | None,
    min_score: float | None,
    paths: tuple[str, ...],
    tags: tuple[str, ...],
    all_tags: bool,
    since: dt.date | None,
    until: dt.date | None,
    statuses: tuple[str, ...],
    as_of: dt.date | None,
    no_expand: bool,
    no_sync: bool,
) -> None:
    """Hybrid search of the workspace: keyword (BM25) and vector arms fused (search.fusion;
    scores 0..1, 1 = ranked first by every arm that ran); filters are applied inside each arm.
    Says when nothing relevant was found (no_match in --json); the hits are listed anyway."""
    with opener() as reme:
        try:
            filters = SearchFilters(
                paths=list(paths),
                tags=list(tags),
                tag_mode="all" if all_tags else "any",
                since=since,
                until=until,
                statuses=list(statuses) if statuses else list(reme.settings.search.statuses),
            )
        except ValidationError as exc:
            raise SearchError("; ".join(e["msg"] for e in exc.errors())) from None
        if not no_sync:
            sync_before_search(reme)
        response = reme.search(
            query,
            limit=limit,
            min_score=min_score,
            filters=filters,
            expand=not no_expand,
            as_of=as_of,
        )
    emit(response, as_json, _text)


# Embedding a few edited notes before answering is quick; a first pass over a large workspace is
# not: then search answers at once and says how much is embedded (run `reme index` to finish).
SEARCH_EMBED_BUDGET = 256


def sync_before_search(reme: Reme) -> None:
    """Catch up with edits made outside reme; embed them too when that is cheap."""
    if isinstance(reme, RemoteReme) or lock_held(reme.root):
        # The server's watcher keeps its index current; in-process beside it (REME_LOCAL=1)
        # this command only reads: the server is the one writer.
        return
    reme.index(vectors="skip")
    if reme.vectors is not None and reme.vectors.available:
        done, total = reme.vectors.coverage()
        if total - done <= SEARCH_EMBED_BUDGET:
            reme.vectors.reconcile()


def _text(response: SearchResponse) -> str:
    lines = [
        f"arms: {', '.join(response.arms)}"
        + (f"  degraded: {response.degraded}" if response.degraded else "")
    ]
    if response.no_match and response.hits:
        why = (
            " (no note holds a word of the query: by meaning only)" if response.meaning_only else ""
        )
        lines.append(f"nothing relevant found{why}: the hits below are only the nearest notes")
    elif response.meaning_only and response.hits:
        lines.append("no note holds a word of the query: these hits are by meaning only")
    if not response.hits:
        lines.append("no hits")
    for hit in response.hits:
        snippet = " ".join(hit.text.split())[:160]
        arms = ", ".join(
            f"{arm} #{rank} {hit.arm_scores.get(arm, 0):.2f}" for arm, rank in hit.arm_ranks.items()
        )
        lines.append(
            f"{hit.score:.3f}  {hit.path}:{hit.start_line}-{hit.end_line}  [{arms}]  {snippet}"
        )
    for linked in response.linked:
        arrow = "->" if linked.direction == "outbound" else "<-"
        lines.append(f"   linked {arrow} {linked.path} (via {linked.via})")
    return "\n".join(lines)


COMMANDS = [search_command]
