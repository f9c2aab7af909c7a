"""``reme forget``: archived by default (in history, revertible), or purged with confirmation,
leaving no trace that a search, a byte-level grep of every file under .reme/ and the workspace,
or any object of the history can find; bad input refused with nothing changed; admin only over
HTTP and MCP (issue 24)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client
from pydantic import ValidationError

from reme_core.cli import cli
from reme_core.errors import NotFoundError, PathOutsideWorkspaceError, UnsupportedFileError
from reme_core.plugins import Plugins
from reme_core.review import ReviewApi
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_core.server.mcp_server import build_mcp_server
from reme_core.server.principal import Principal, current_principal
from reme_core.service.forget import ForgetConfirmationError
from reme_core.service.operations import OPERATIONS
from tests.server.api_support import served

TOKEN = "qwzplover8841"
"""The unique string the proof looks for (one token, as the keyword index stores it)."""
SECRET = "daily/2026-11-01/vault.md"
SECRET_TEXT = (
    "---\nname: Vault\ntags: [security/vault]\n---\n\n# Vault\n\n"
    f"The depot vault code is {TOKEN} and opens the back door of the north depot.\n\n"
    "See [[digest/wiki/depot]].\n"
)
OTHER = "digest/wiki/depot.md"
OTHER_TEXT = "# Depot\n\nThe north depot has two doors and a loading bay.\n"
VECTORS = ["components.embedding.name=hash", "components.file_store.name=zvec", "timezone=UTC"]
ALL_STATUSES = SearchFilters(statuses=["active", "archived", "superseded"])


def forget(reme: Reme, **payload: Any) -> dict[str, Any]:
    return OPERATIONS["forget"].call(reme, payload)


@pytest.fixture
def reme(root: Path, default_plugins: Plugins) -> Iterator[Reme]:
    opened = Reme.open(root, plugins=default_plugins, env={}, overrides=VECTORS)
    opened.files.write(OTHER, OTHER_TEXT)
    opened.files.write(SECRET, SECRET_TEXT.replace("back door", "front door"))
    opened.files.edit(SECRET, "front door", "back door")  # two versions in the history
    # A proposal that quotes the note (a change to another note, citing it).
    ReviewApi(opened).propose(
        pipeline="dream",
        step=None,
        run_id="r1",
        verb="REFINE",
        target=OTHER,
        content=OTHER_TEXT + f"\nThe vault code is {TOKEN}.\n",
        before=OTHER_TEXT,
        base_hash=None,
        sources=[SECRET],
    )
    yield opened
    opened.close()


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] != ".reme"
    }


def grep(folder: Path, needle: str) -> list[str]:
    """``grep -r`` itself, binary files read as text: every file holding ``needle``."""
    done = subprocess.run(
        ["grep", "-rl", "--binary-files=text", needle, str(folder)], capture_output=True, text=True
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout.split()


def history_objects(root: Path) -> bytes:
    git = ["git", f"--git-dir={root / '.reme/history.git'}"]
    return subprocess.run(
        [*git, "cat-file", "--batch-all-objects", "--batch", "--unordered"],
        capture_output=True,
        check=True,
    ).stdout


def test_forget_archives_in_one_history_entry_and_revert_brings_it_back(reme: Reme) -> None:
    assert SECRET in {h.path for h in reme.search(TOKEN).hits}
    report = forget(reme, path=SECRET)
    assert report["mode"] == "archive" and report["paths"] == [SECRET]
    assert "status: archived" in (reme.root / SECRET).read_text()
    assert SECRET not in {h.path for h in reme.search(TOKEN).hits}
    archived = reme.search(TOKEN, filters=SearchFilters(statuses=["archived"]))
    assert [h.path for h in archived.hits] == [SECRET]
    entry = reme.history.entries(1)[0]
    assert entry.run == report["history"] and entry.files == [SECRET]
    assert forget(reme, path=SECRET)["unchanged"] == [SECRET]  # already archived
    reme.revert(report["history"])
    assert (reme.root / SECRET).read_text() == SECRET_TEXT
    assert SECRET in {h.path for h in reme.search(TOKEN).hits}


def test_forget_by_query_takes_the_notes_holding_its_words(reme: Reme) -> None:
    dry = forget(reme, query=TOKEN, dry_run=True)
    assert dry["paths"] == [SECRET] and "status" not in (reme.root / SECRET).read_text()[:40]
    assert forget(reme, query=TOKEN)["paths"] == [SECRET]


def test_purge_leaves_no_trace_anywhere(reme: Reme) -> None:
    root = reme.root
    assert grep(root / ".reme", TOKEN)  # the index holds it before (the proof can fail)
    assert TOKEN.encode() in history_objects(root)
    model = reme.vectors.model_id
    chunk_ids = {cid for cid, _, _ in reme.catalog.chunk_hashes([SECRET])}
    assert chunk_ids and chunk_ids <= reme.vectors.store.ids()
    history_before = len(reme.history.entries(100))

    report = forget(reme, path=SECRET, purge=True, confirm=True)

    removed = report["removed"]
    assert report["mode"] == "purge" and report["remaining"] == []
    assert removed["files"] == [SECRET] and removed["chunks"] == len(chunk_ids)
    assert removed["vectors"] == len(chunk_ids) and removed["cached_embeddings"] >= 1
    assert removed["links"] == 1 and removed["tags"] == 1
    assert len(removed["proposals"]) == 1 and removed["journal_entries"] >= 2
    assert removed["history_commits_rewritten"] >= 2
    assert "catalog.sqlite3" in removed["compacted"]
    # The proof, by other means than the command's own: search, grep, git, the vector store.
    after = reme.search(TOKEN, filters=ALL_STATUSES)
    # Only the vector arm's nearest notes (the fake embedding's), none of them it, no word left.
    assert all(h.path != SECRET and "keyword" not in h.arm_ranks for h in after.hits)
    assert after.meaning_only or after.hits == []
    for needle in (TOKEN, "opens the back door of the north depot", SECRET):
        assert grep(root, needle) == [], needle  # the workspace and every file under .reme/
        assert needle.encode() not in history_objects(root), needle
    assert not chunk_ids & reme.vectors.store.ids()
    assert not {cid for cid in reme.embedding_cache.stored(model) if cid.startswith(SECRET)}
    assert ReviewApi(reme).proposals() == []
    # The rest is intact: the other note, its search, the history (less no entry).
    assert (root / OTHER).read_text() == OTHER_TEXT
    assert [h.path for h in reme.search("loading bay").hits][:1] == [OTHER]
    assert len(reme.history.entries(100)) == history_before
    assert reme.status()["drift"]["found"] is False


def test_purge_through_a_reopened_workspace_still_finds_nothing(
    reme: Reme, default_plugins: Plugins
) -> None:
    forget(reme, path=SECRET, purge=True, confirm=True)
    root = reme.root
    reme.close()
    with Reme.open(root, plugins=default_plugins, env={}, overrides=VECTORS) as again:
        again.index()
        assert all(h.path != SECRET for h in again.search(TOKEN, filters=ALL_STATUSES).hits)
    assert grep(root, TOKEN) == []


@pytest.mark.parametrize(
    ("payload", "error", "message"),
    [
        ({"path": "../outside.md"}, PathOutsideWorkspaceError, "outside"),
        ({"path": ".reme/catalog.sqlite3"}, PathOutsideWorkspaceError, ""),
        ({"path": "daily/nowhere.md"}, NotFoundError, "no note daily/nowhere.md"),
        ({"query": "zzxqvbnoword"}, NotFoundError, "no note holds the words"),
        ({"path": SECRET, "purge": True}, ForgetConfirmationError, "cannot be undone"),
        ({"path": "digest/wiki"}, NotFoundError, ""),
    ],
)
def test_bad_input_is_refused_with_nothing_changed(
    reme: Reme, payload: dict[str, Any], error: type[Exception], message: str
) -> None:
    before, entries = tree(reme.root), reme.history.entries(100)
    proposals = ReviewApi(reme).proposals()
    with pytest.raises(error) as info:
        forget(reme, **payload)
    assert message in str(info.value)
    assert tree(reme.root) == before and reme.history.entries(100) == entries
    assert ReviewApi(reme).proposals() == proposals


def test_inputs_name_exactly_one_target(reme: Reme) -> None:
    for payload in ({}, {"path": SECRET, "query": "x"}, {"query": "  "}, {"path": SECRET, "x": 1}):
        with pytest.raises(ValidationError):
            forget(reme, **payload)


def test_a_file_that_is_not_a_note_can_only_be_purged(reme: Reme) -> None:
    (reme.root / "resource/list.txt").write_text(f"plain text {TOKEN}\n", encoding="utf-8")
    reme.index()
    with pytest.raises(UnsupportedFileError, match="--purge"):
        forget(reme, path="resource/list.txt")
    report = forget(reme, path="resource/list.txt", purge=True, confirm=True)
    assert not (reme.root / "resource/list.txt").exists()
    assert "resource/list.txt" not in reme.catalog.paths() and report["removed"]["chunks"] >= 1


# -- the surfaces ---------------------------------------------------------------------------


def test_http_admin_only_and_purge_needs_confirm(tmp_path: Path) -> None:
    with served(tmp_path) as api:
        note = "digest/procedure/deploy-process.md"
        before = (api.project / note).read_bytes()
        for token in ("read", "write"):
            refused = api.post("forget", {"path": note}, token=token)
            assert refused.status_code == 403, refused.text
        unconfirmed = api.post("forget", {"path": note, "purge": True})
        assert unconfirmed.status_code == 409, unconfirmed.text
        assert "cannot be undone" in unconfirmed.json()["error"]["message"]
        assert (api.project / note).read_bytes() == before
        archived = api.post("forget", {"path": note})
        assert archived.status_code == 200 and archived.json()["paths"] == [note]
        purged = api.post("forget", {"path": note, "purge": True, "confirm": True})
        assert purged.status_code == 200, purged.text
        assert not (api.project / note).exists()
        # Other notes still link to it and quote a line of it (their own text, indexed, and
        # their history): that is theirs, not a trace of it, so the proof is empty.
        quoted = b"sudo systemctl restart larkspur.service"
        naming = [p for p in api.project.rglob("*.md") if b"deploy-process]]" in p.read_bytes()]
        assert naming and [p for p in api.project.rglob("*.md") if quoted in p.read_bytes()]
        assert purged.json()["remaining"] == []


def test_mcp_lists_forget_for_admin_only(reme: Reme) -> None:
    server = build_mcp_server(lambda _: reme, ["default"])
    writer = Principal(token_id="w", profile="write", workspaces=frozenset({"default"}))
    admin = Principal(token_id="a", profile="admin", workspaces=frozenset({"*"}))

    async def scenario(principal: Principal) -> tuple[set[str], Any]:
        current_principal.set(principal)
        async with Client(server) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            return names, await client.call_tool("forget", {"path": SECRET})

    names, refused = anyio.run(scenario, writer)
    assert "forget" not in names and refused.is_error
    assert "needs the admin profile" in refused.content[0].text
    assert "status: archived" not in (reme.root / SECRET).read_text()
    names, done = anyio.run(scenario, admin)
    assert "forget" in names and not done.is_error
    assert "status: archived" in (reme.root / SECRET).read_text()


def test_cli_forget_json_and_purge_confirmation(reme: Reme) -> None:
    root = reme.root
    reme.close()

    def run(*args: str, input: str | None = None) -> Any:
        return CliRunner().invoke(cli, [*args, "--workspace", str(root)], input=input)

    env_vectors = [a for v in VECTORS for a in ("--set", v)]
    unconfirmed = run("forget", SECRET, "--purge", "--json", *env_vectors)
    assert unconfirmed.exit_code != 0
    error = json.loads(unconfirmed.stdout)["error"]
    assert error["type"] == "ForgetConfirmationError" and error["details"]["paths"] == [SECRET]
    declined = run("forget", SECRET, "--purge", *env_vectors, input="n\n")
    assert declined.exit_code != 0 and "cancelled" in declined.stderr
    assert (root / SECRET).exists()
    soft = json.loads(run("forget", SECRET, "--json", *env_vectors).stdout)
    assert soft["mode"] == "archive" and soft["history"]
    purged = run("forget", SECRET, "--purge", "--yes", *env_vectors)
    assert purged.exit_code == 0, purged.stderr
    assert "no file under .reme/, no workspace file and no history object holds it" in (
        purged.stdout
    )
    assert grep(root, TOKEN) == []


def test_cli_forget_goes_through_the_running_server(tmp_path: Path) -> None:
    from conftest import KEYWORD_ONLY_ENV

    from reme_core.workspace import init_workspace
    from tests.server.api_support import running_server

    root = tmp_path / "ws"
    init_workspace(root)
    (root / SECRET).parent.mkdir(parents=True)
    (root / SECRET).write_text(SECRET_TEXT, encoding="utf-8")
    with running_server(root):

        def run(*args: str) -> Any:
            return CliRunner().invoke(cli, [*args, "-w", str(root)], env=KEYWORD_ONLY_ENV)

        soft = run("forget", SECRET, "--json")
        assert soft.exit_code == 0, soft.output
        assert json.loads(soft.stdout)["paths"] == [SECRET]
        unconfirmed = run("forget", SECRET, "--purge", "--json")
        # The server's refusal, its message as the local one (the type is the client's own).
        assert unconfirmed.exit_code != 0 and (root / SECRET).exists()
        assert "cannot be undone" in json.loads(unconfirmed.stdout)["error"]["message"]
        purged = run("forget", SECRET, "--purge", "--yes", "--json")
        assert purged.exit_code == 0, purged.output
        assert json.loads(purged.stdout)["remaining"] == []
    assert not (root / SECRET).exists() and grep(root, TOKEN) == []


def test_purge_drops_the_note_from_every_pipeline_checkpoint_and_cursor(reme: Reme) -> None:
    from reme_plugins.auto_memory.cursor import SessionCursor, load_cursor, save_cursor
    from reme_plugins.dream.checkpoint import (
        Checkpoint,
        NoteMark,
        QueuedUnit,
        RejectedUnit,
        load_checkpoint,
        save_checkpoint,
    )
    from reme_plugins.dream.units import DreamUnit
    from reme_plugins.proactive.cursor import Cursor, Mark
    from reme_plugins.proactive.cursor import load_cursor as proactive_cursor
    from reme_plugins.proactive.cursor import save_cursor as save_proactive

    state = reme.state_dir
    keep = "daily/2026-11-02/standup.md"

    def unit(uid: str, sources: list[str]) -> DreamUnit:
        return DreamUnit(
            id=uid, name=uid, bucket="wiki", summary="s", sources=sources,
            source_hashes={s: "h" for s in sources},
        )  # fmt: skip

    save_checkpoint(
        state,
        Checkpoint(
            notes={SECRET: NoteMark(hash="a", at="t"), keep: NoteMark(hash="b", at="t")},
            queue=[
                QueuedUnit(unit=unit("u1", [SECRET, keep]), status="pending", since="t"),
                QueuedUnit(unit=unit("u2", [keep]), status="failed", since="t"),
            ],
            rejected={
                "u3": RejectedUnit(
                    name="u3", source_hashes={SECRET: "a"}, proposal="p", reason="r", at="t"
                )
            },
        ),
    )
    marks = [Mark(topics_hash=h, notes={SECRET: "a", keep: "b"}, at="t") for h in ("x", "y")]
    save_proactive(state, Cursor(marks=marks))
    (state / "auto_tag.json").write_text(json.dumps({"version": 1, "notes": {SECRET: "a"}}))
    save_cursor(state, "s1", SessionCursor(line=4, unsummarised={SECRET: [1], keep: [2]}))
    assert len(grep(state, SECRET)) >= 4  # the proof below can fail

    report = forget(reme, path=SECRET, purge=True, confirm=True)

    assert report["remaining"] == [] and grep(state, SECRET) == []
    assert report["removed"]["state"] == [
        ".reme/auto_memory/sessions/s1.json",
        ".reme/auto_tag.json",
        ".reme/dream/checkpoint.json",
        ".reme/proactive/cursor.json",
    ]
    assert report["removed"]["state_errors"] == []
    # What other notes left there stays: nothing is read or integrated again for them.
    checkpoint = load_checkpoint(state)
    assert list(checkpoint.notes) == [keep] and [q.unit.id for q in checkpoint.queue] == ["u2"]
    assert checkpoint.rejected == {}
    assert [m.notes for m in proactive_cursor(state).marks] == [{keep: "b"}, {keep: "b"}]
    assert load_cursor(state, "s1").unsummarised == {keep: [2]}
    assert json.loads((state / "auto_tag.json").read_text())["notes"] == {}
    # A second purge finds nothing to drop in them.
    reme.files.write(SECRET, SECRET_TEXT)
    assert forget(reme, path=SECRET, purge=True, confirm=True)["removed"]["state"] == []


def test_a_damaged_checkpoint_is_reported_and_the_purge_still_completes(reme: Reme) -> None:
    (reme.state_dir / "dream").mkdir(exist_ok=True)
    (reme.state_dir / "dream" / "checkpoint.json").write_text("{not json")
    report = forget(reme, path=SECRET, purge=True, confirm=True)
    assert not (reme.root / SECRET).exists()
    [error] = report["removed"]["state_errors"]
    assert error.startswith("dream_finish: ") and "damaged" in error
    assert (reme.state_dir / "dream" / "checkpoint.json").read_text() == "{not json"


NODE = "digest/wiki/vault-node.md"
NODE_TEXT = (
    "# Vault\n\nThe vault is opened at night.\n"
    "> note: contradicted by [[daily/2026-11-01/vault]]\n"
    "Per [[daily/2026-11-01/vault|the log]] the back door is used.\n\n"
    "## Sources\n\n- [[daily/2026-11-01/vault]]\n- [[digest/wiki/depot]]\n"
)
MINE = "notes/mine.md"
MINE_TEXT = "# Mine\n\nSee [[daily/2026-11-01/vault]] for the code.\n"


def test_purge_lists_each_citing_note_and_line_and_leaves_them_by_default(reme: Reme) -> None:
    reme.files.write(NODE, NODE_TEXT)
    reme.files.write(MINE, MINE_TEXT)
    dry = forget(reme, path=SECRET, purge=True, dry_run=True)
    report = forget(reme, path=SECRET, purge=True, confirm=True)
    expected = {
        MINE: [{"line": 3, "text": "See [[daily/2026-11-01/vault]] for the code."}],
        NODE: [
            {"line": 4, "text": "> note: contradicted by [[daily/2026-11-01/vault]]"},
            {"line": 5, "text": "Per [[daily/2026-11-01/vault|the log]] the back door is used."},
            {"line": 9, "text": "- [[daily/2026-11-01/vault]]"},
        ],
    }
    assert dry["citations"]["citing"] == report["citations"]["citing"] == expected
    assert report["citations"]["unlinked"] == [] and report["citations"]["history"] is None
    assert (reme.root / NODE).read_text() == NODE_TEXT
    assert (reme.root / MINE).read_text() == MINE_TEXT


def test_purge_with_digests_unlinks_the_digest_notes_only(reme: Reme) -> None:
    reme.files.write(NODE, NODE_TEXT)
    reme.files.write(MINE, MINE_TEXT)
    entries = len(reme.history.entries(100))
    report = forget(reme, path=SECRET, purge=True, confirm=True, with_digests=True)
    cited = report["citations"]
    assert cited["unlinked"] == [NODE] and cited["lines_removed"] == 2
    assert cited["kept"] == {
        NODE: [{"line": 4, "text": "Per a forgotten note the back door is used."}]
    }
    assert (reme.root / NODE).read_text() == (
        "# Vault\n\nThe vault is opened at night.\n"
        "Per a forgotten note the back door is used.\n\n"
        "## Sources\n\n- [[digest/wiki/depot]]\n"
    )
    assert (reme.root / MINE).read_text() == MINE_TEXT  # a person's note: listed, not edited
    # Only the person's note still links to it (and the graph keeps that link, unresolved).
    held = {Path(p).relative_to(reme.root).as_posix() for p in grep(reme.root, "2026-11-01/vault")}
    assert held == {MINE, ".reme/graph.sqlite3"}
    # One history entry of its own, naming the digest only; the purge's proof still holds.
    assert len(reme.history.entries(100)) == entries + 1
    entry = reme.history.entries(1)[0]
    assert entry.run == cited["history"] and entry.files == [NODE]
    assert report["remaining"] == []  # what the person's note still holds is its own
    reme.revert(cited["history"])  # the unlinking is revertible like any write
    assert (reme.root / NODE).read_text() == NODE_TEXT


def test_with_digests_goes_with_purge_only(reme: Reme) -> None:
    with pytest.raises(ValidationError, match="with_digests goes with purge"):
        forget(reme, path=SECRET, with_digests=True)
    assert (reme.root / SECRET).read_text() == SECRET_TEXT


def test_cli_purge_with_digests_prints_the_citing_lines(reme: Reme) -> None:
    reme.files.write(NODE, NODE_TEXT)
    root = reme.root
    reme.close()
    args = ["forget", SECRET, "--purge", "--with-digests", "--yes", "--workspace", str(root)]
    done = CliRunner().invoke(cli, [*args, *(a for v in VECTORS for a in ("--set", v))])
    assert done.exit_code == 0, done.stderr
    assert f"cited by {NODE} (unlinked):" in done.stdout
    assert "  9: - [[daily/2026-11-01/vault]]" in done.stdout
    assert "2 citing line(s) removed; history entry " in done.stdout
    assert "[[daily/2026-11-01/vault]]" not in (root / NODE).read_text()
    refused = CliRunner().invoke(cli, ["forget", OTHER, "--with-digests", "--workspace", str(root)])
    assert refused.exit_code != 0 and "with_digests goes with purge" in refused.output
    assert (root / OTHER).read_text() == OTHER_TEXT
