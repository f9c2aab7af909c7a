"""The studio's pages (GET): Browse, Edit, Search, Graph, History, Status, Review, and the
fragments htmx loads into them. Each reads through the operations as the visitor."""

from __future__ import annotations

import posixpath
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.responses import JSONResponse, Response

from reme_core.studio import tree
from reme_core.studio.lifecycle import note_lifecycle
from reme_core.studio.render import render_note
from reme_core.studio.review import review_page, review_show
from reme_core.studio.web import OpFailed, Page, Studio, open_page, secure
from reme_core.workspace.frontmatter import split_frontmatter

NOTE_SUFFIXES = (".md",)
TEXT_SUFFIXES = (".md", ".txt", ".jsonl")
SEARCH_LIMIT = 20
STATUS_POLL_SECONDS = (3, 15)
"""How often the Status page refreshes: while vectors are being embedded (progress moves), and
otherwise (a status call checks the index for drift: ~0.2 s of CPU at 10,000 notes)."""

Text = Annotated[str, Query()]
Texts = Annotated[list[str] | None, Query()]


def router(studio: Studio) -> APIRouter:
    pages = APIRouter(include_in_schema=False)

    async def page(request: Request) -> Page:
        return await open_page(studio, request)

    async def page_for(request: Request, operation: str, doing: str) -> Page:
        """A page whose only purpose is ``operation`` (a form that changes a note): a token
        that may not call it gets a 403 page here, not a form whose button then fails."""
        here = await page(request)
        if not here.may(operation):
            raise OpFailed(
                403,
                "Forbidden",
                f"{doing} needs a token that may call {operation!r}; yours is {here.profile!r}",
            )
        return here

    @pages.get("/")
    @pages.get("/studio")
    @pages.get("/studio/browse")
    async def browse(request: Request, path: Text = "") -> Response:
        here = await page(request)
        path = path.strip("/")
        folders = {}
        for folder in tree.ancestors(path):
            folders[folder] = await _folder(here, folder)
        parent = folders[posixpath.dirname(path)] if path else None
        kind = "dir" if not path else _kind_in(parent, path)
        if kind == "dir":
            if path:
                folders[path] = await _folder(here, path)
            return here.render(
                "browse.html", path=path, kind="dir", folders=folders, listing=folders[path]
            )
        note = await _note(here, path)
        return here.render("browse.html", path=path, kind="file", folders=folders, note=note)

    @pages.get("/studio/tree")
    async def tree_fragment(request: Request, path: Text = "") -> Response:
        here = await page(request)
        folder = await _folder(here, path.strip("/"))
        return here.render("_tree.html", folder=folder, folders={}, current="")

    @pages.get("/studio/note-history")
    async def note_history(request: Request, path: Text) -> Response:
        here = await page(request)
        found = await here.op("history", path=path, limit=20)
        return here.render("_note_history.html", entries=found["entries"], path=path)

    @pages.get("/studio/edit")
    async def edit(request: Request, path: Text) -> Response:
        here = await page_for(request, "write", "editing a note")
        read = await here.op("read", path=path, end_line=None)
        if read["truncated"]:
            raise OpFailed(
                413, "TooLarge", f"{path} is too large to edit here ({read['size']} bytes)"
            )
        return here.render(
            "edit.html",
            path=read["path"],
            content=read["content"],
            expected_hash=read["content_hash"],
            conflict=None,
        )

    @pages.get("/studio/new")
    async def new(request: Request, folder: Text = "") -> Response:
        here = await page_for(request, "write", "making a note")
        folder = folder.strip("/")
        suggestion = f"{folder}/new-note.md" if folder else "digest/wiki/new-note.md"
        return here.render("new.html", path=suggestion, content="# New note\n", error=None)

    @pages.get("/studio/move")
    async def move(request: Request, path: Text) -> Response:
        here = await page_for(request, "move", "moving a note")
        stat = await here.op("stat", path=path)
        links = await _links(here, stat["path"])
        return here.render("move.html", stat=stat, inbound=links["inbound"], error=None)

    @pages.get("/studio/delete")
    async def delete(request: Request, path: Text) -> Response:
        here = await page_for(request, "delete", "deleting a note")
        stat = await here.op("stat", path=path)
        links = await _links(here, stat["path"])
        dangling = sorted({link["source"] for link in links["inbound"]} - {stat["path"]})
        return here.render("delete.html", stat=stat, dangling=dangling)

    @pages.get("/studio/search")
    async def search(
        request: Request,
        q: Text = "",
        tag: Texts = None,
        status: Texts = None,
        path: Texts = None,
        since: Text = "",
        until: Text = "",
        tag_mode: Text = "any",
    ) -> Response:
        here = await page(request)
        tags = [t.strip() for t in tag or [] if t.strip()]
        statuses = [s for s in status or [] if s]
        paths = [p.strip() for p in path or [] if p.strip()]
        form = {
            "q": q,
            "tags": ", ".join(tags),
            "statuses": statuses,
            "paths": ", ".join(paths),
            "since": since,
            "until": until,
            "tag_mode": tag_mode,
        }
        result, error = None, None
        if q.strip():
            payload: dict[str, Any] = {"query": q, "limit": SEARCH_LIMIT, "tag_mode": tag_mode}
            for key, value in (
                ("tags", _split(tags)),
                ("statuses", statuses),
                ("paths", _split(paths)),
                ("since", since),
                ("until", until),
            ):
                if value:
                    payload[key] = value
            try:
                result = await here.op("search", **payload)
            except OpFailed as exc:
                if exc.status >= 500:
                    raise
                error = exc
        template = "_search_results.html" if here.htmx else "search.html"
        status_code = error.status if error is not None else 200
        return here.render(template, status_code, form=form, result=result, error=error)

    @pages.get("/studio/graph")
    async def graph(request: Request, path: Text = "", depth: int = 1) -> Response:
        here = await page(request)
        depth = min(3, max(1, depth))
        found = None
        if path:
            found = await here.op("traverse", path=path, depth=depth, max_nodes=150)
        return here.render("graph.html", path=path, depth=depth, found=found)

    @pages.get("/studio/graph.json")
    async def graph_json(request: Request, path: Text, depth: int = 1) -> Response:
        here = await page(request)
        depth = min(3, max(1, depth))
        found = await here.op("traverse", path=path, depth=depth, max_nodes=150)
        nodes = [
            {
                "data": {
                    "id": n["path"],
                    "label": _label(n["path"]),
                    "depth": n["depth"],
                    "href": here.note(n["path"]),
                }
            }
            for n in found["nodes"]
        ]
        known = {n["path"] for n in found["nodes"]}
        edges = [
            {"data": {"id": f"e{i}", "source": e["from"], "target": e["to"]}}
            for i, e in enumerate(found["edges"])
            if e["from"] in known and e["to"] in known
        ]
        body = {"start": found["start"], "truncated": found["truncated"]}
        return secure(JSONResponse({**body, "elements": nodes + edges}))

    @pages.get("/studio/history")
    async def history(request: Request, run: Text = "") -> Response:
        here = await page(request)
        found = await here.op("history", limit=50)
        return here.render("history.html", entries=found["entries"], selected=run)

    @pages.get("/studio/history/show")
    async def history_show(request: Request, run: Text) -> Response:
        here = await page(request)
        shown = await here.op("history_show", run=run)
        return here.render("_history_show.html", shown=shown)

    @pages.get("/studio/history/revert")
    async def revert_preview(request: Request, run: Text) -> Response:
        here = await page_for(request, "revert", "reverting a change")
        found = await here.op("revert", run=run, dry_run=True)
        never = found["not_revertible"]
        return here.render("revert.html", plan=found["plan"], error=None, not_revertible=never)

    @pages.get("/studio/status")
    async def status(request: Request) -> Response:
        here = await page(request)
        found = await _status(here)
        return here.render("status.html", status=found, poll=_poll(found))

    @pages.get("/studio/status/live")
    async def status_live(request: Request) -> Response:
        here = await page(request)
        found = await _status(here)
        return here.render("_status_live.html", status=found, poll=_poll(found))

    @pages.get("/studio/review")
    async def review(request: Request, verb: Text = "") -> Response:
        here = await page(request)
        return await review_page(here, verb)

    @pages.get("/studio/review/show")
    async def review_item(request: Request, id: Text) -> Response:
        here = await page(request)
        return await review_show(here, id)

    @pages.get("/studio/login")
    async def login(request: Request) -> Response:
        if studio.sessions.visitor(request) is not None:
            return secure(Response(status_code=303, headers={"Location": "/"}))
        return studio.login_page(request, "", status=200)

    return pages


async def _folder(here: Page, path: str) -> tree.Folder:
    listed = await here.op("list", path=path)
    return tree.folder(path, listed["entries"])


def _kind_in(parent: tree.Folder | None, path: str) -> str:
    """``dir`` or ``file``, from the parent folder's listing (``file`` when not listed: the
    read then says what is wrong)."""
    for node in parent.nodes if parent is not None else []:
        if node.path == path:
            return node.kind
        for date in node.children:
            if path == date.folder:
                return "dir"
    return "dir" if parent is not None and parent.path == "daily" and _is_date(path) else "file"


def _is_date(path: str) -> bool:
    return bool(tree._DATE.match(posixpath.basename(path)))


async def _note(here: Page, path: str) -> dict[str, Any]:
    read = await here.op("read", path=path)
    stat = await here.op("stat", path=read["path"])
    # Every note has backlinks: a Markdown note's [[resource/scan.txt]] links a text file too.
    links = await _links(here, read["path"])
    note: dict[str, Any] = {"read": read, "stat": stat, "html": None, "text": None}
    note["links"] = links
    note["lifecycle"] = await note_lifecycle(here, read, links["outbound"])
    if read["path"].lower().endswith(NOTE_SUFFIXES):
        content = read["content"]
        block = (
            split_frontmatter(content, read["path"]) if stat["frontmatter"] is not None else None
        )
        body = content[block.body_start :] if block is not None else content
        note["html"] = render_note(body, read["path"], links["outbound"], here.note)
    else:
        note["text"] = read["content"]
    return note


async def _links(here: Page, path: str) -> dict[str, Any]:
    try:
        found = await here.op("links", path=path)
    except OpFailed as exc:
        if exc.status >= 500 or exc.kind == "ConfigError":  # graph off: say so, show the note
            return {"outbound": [], "inbound": [], "unavailable": exc.message}
        raise
    return {**found, "unavailable": None}


async def _status(here: Page) -> dict[str, Any]:
    # run_operation already made server paths relative (or hid them) for anyone but an admin.
    return await here.op("status")


def _poll(status: dict[str, Any]) -> int:
    busy = (status.get("vectors") or {}).get("state") in ("building", "incomplete")
    return STATUS_POLL_SECONDS[0] if busy else STATUS_POLL_SECONDS[1]


def _split(values: list[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _label(path: str) -> str:
    name = posixpath.basename(path)
    return name[:-3] if name.endswith(".md") else name
