"""The review operations over HTTP and MCP's registry, with the token profiles enforced, and the
`reme review` commands in-process and through a running server."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV, copy_example

from reme_core.cli import cli
from reme_core.review import Proposal, ReviewApi
from reme_core.runtime import Reme
from reme_core.service.operations import OPERATIONS
from reme_core.workspace import frontmatter as fm
from reme_core.workspace.hashing import content_hash
from tests.server.api_support import plugins, running_server, served

NOTE = "digest/procedure/db-migrations.md"
OTHER = "digest/wiki/larkspur-architecture.md"


def tag_proposal(reme: Reme, path: str, tag: str) -> Proposal:
    """A TAG proposal, as auto_tag with `review: queue` makes one."""
    before = (reme.root / path).read_text(encoding="utf-8")
    tags = fm.parse_frontmatter(before, path)[0]["tags"]
    after = fm.update_frontmatter(before, {"tags": [*tags, tag]}, path=path)
    return ReviewApi(reme).propose(
        pipeline="auto_tag",
        step="auto_tag",
        run_id="run1",
        verb="TAG",
        target=path,
        content=after,
        before=before,
        base_hash=content_hash(before.encode("utf-8")),
        note=f"add tags: {tag}",
        payload={"tags": [*tags, tag]},
    )


def test_operations_profiles_and_shapes_over_http(tmp_path: Path):
    with served(tmp_path) as api:
        with api.registry.use("default") as reme:
            first = tag_proposal(reme, NOTE, "sql")
            second = tag_proposal(reme, OTHER, "fastapi")
        before = (api.project / NOTE).read_bytes()

        listed = api.post("review_list", {}, token="read")
        assert listed.status_code == 200, listed.text
        body = listed.json()
        assert [p["id"] for p in body["proposals"]] == [first.id, second.id]
        assert body["counts"]["pending"] == 2 and body["total"] == 2
        row = body["proposals"][0]
        assert (row["verb"], row["target"], row["status"], row["target_changed"]) == (
            "TAG",
            NOTE,
            "pending",
            False,
        )
        assert row["added_lines"] >= 1 and "content" not in row
        shown = api.post("review_show", {"id": first.id[:6]}, token="read").json()
        assert shown["content"] == first.content and shown["diff"] == first.diff

        # A read token cannot decide; a write token may reject but not approve.
        for op, payload in [
            ("review_approve", {"ids": [first.id]}),
            ("review_reject", {"ids": [first.id], "reason": "no"}),
        ]:
            refused = api.post(op, payload, token="read")
            assert refused.status_code == 403 and "needs a" in refused.text
        refused = api.post("review_approve", {"ids": [first.id]}, token="write")
        assert refused.status_code == 403 and "'admin'" in refused.text
        assert (api.project / NOTE).read_bytes() == before

        rejected = api.post(
            "review_reject", {"ids": [second.id], "reason": "off topic"}, token="write"
        )
        assert rejected.status_code == 200, rejected.text
        (outcome,) = rejected.json()["succeeded"]
        assert outcome["status"] == "rejected" and outcome["reason"] == "off topic"
        token_id = api.store.verify(api.tokens["write"]).token_id
        decided = api.post("review_show", {"id": second.id}, token="read").json()
        assert decided["decided_by"] == f"token:{token_id}"

        approved = api.post("review_approve", {"verb": "TAG", "by": "ana"})
        assert approved.status_code == 200, approved.text
        result = approved.json()
        assert result["action"] == "approve" and result["refused"] == []
        (outcome,) = result["succeeded"]
        assert outcome["id"] == first.id and outcome["history"]
        assert (api.project / NOTE).read_text(encoding="utf-8") == first.content
        admin_id = api.store.verify(api.tokens["admin"]).token_id
        shown = api.post("review_show", {"id": first.id}, token="read").json()
        assert shown["decided_by"] == f"ana (token:{admin_id})"
        # Indexed: the new tag is searchable at once.
        hits = api.post("search", {"query": "migrations", "tags": ["sql"]}, token="read").json()
        assert [h["path"] for h in hits["hits"]][:1] == [NOTE]

        # Bad input is a 422, unknown ids a 404.
        assert api.post("review_show", {"id": "../token"}, token="read").status_code == 422
        assert api.post("review_approve", {}).status_code == 422
        both = api.post("review_approve", {"ids": [first.id], "verb": "TAG"})
        assert both.status_code == 422
        assert api.post("review_show", {"id": "abcdef012345"}, token="read").status_code == 404
        assert api.post("review_reject", {"ids": [first.id]}, token="write").status_code == 422


def test_the_operations_are_mcp_tools_with_hints():
    assert OPERATIONS["review_list"].read_only and OPERATIONS["review_show"].read_only
    assert OPERATIONS["review_approve"].destructive
    assert not OPERATIONS["review_reject"].read_only


def reme_cli(workspace: Path, *args: str, **env: str) -> tuple[int, str]:
    environment = {**KEYWORD_ONLY_ENV, "REME_TOKEN": "", "REME_LOCAL": "", **env}
    result = CliRunner().invoke(cli, [*args, "-w", str(workspace)], env=environment)
    return result.exit_code, result.output


def test_cli_in_process(tmp_path: Path, monkeypatch):
    workspace = copy_example(tmp_path / "ws")
    monkeypatch.setattr("reme_core.plugins._plugins", plugins())
    with Reme.open(workspace, env=KEYWORD_ONLY_ENV, plugins=plugins()) as reme:
        first = tag_proposal(reme, NOTE, "sql")
        second = tag_proposal(reme, OTHER, "fastapi")

    code, out = reme_cli(workspace, "review", "list")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "VERB", "TARGET", "STATUS", "DIFF", "CREATED", "NOTE"]
    assert lines[1].split()[:4] == [first.id, "TAG", NOTE, "pending"]
    assert "add tags: sql" in lines[1] and "(2 pending)" in out

    code, out = reme_cli(workspace, "review", "show", first.id, "--json")
    assert code == 0 and json.loads(out)["content"] == first.content
    code, out = reme_cli(workspace, "review", "show", first.id)
    assert f"proposal {first.id}: TAG {NOTE} [pending]" in out and f"+++ b/{NOTE}" in out

    (workspace / OTHER).write_text("---\nname: changed\n---\n# Changed by hand\n", "utf-8")
    code, out = reme_cli(workspace, "review", "approve", "--verb", "tag", "--by", "ana", "--json")
    assert code == 1  # one was refused (stale)
    result = json.loads(out.split("\n1 proposal(s) refused")[0])
    assert [o["id"] for o in result["succeeded"]] == [first.id]
    assert [(o["id"], o["status"]) for o in result["refused"]] == [(second.id, "stale")]
    assert (workspace / NOTE).read_text(encoding="utf-8") == first.content

    code, out = reme_cli(workspace, "review", "reject", first.id, "--reason", "late")
    assert code == 1 and f"refused {first.id} TAG {NOTE} [approved]: already approved" in out
    code, out = reme_cli(workspace, "review", "reject", "zz", "--reason", "x", "--json")
    assert code != 0 and "not a proposal id" in json.loads(out)["error"]["message"]
    code, out = reme_cli(workspace, "review", "list", "--status", "all", "--json")
    statuses = {p["id"]: p["status"] for p in json.loads(out)["proposals"]}
    assert statuses == {first.id: "approved", second.id: "stale"}


def test_cli_goes_through_a_running_server(tmp_path: Path):
    workspace = copy_example(tmp_path / "ws")
    with Reme.open(workspace, env=KEYWORD_ONLY_ENV, plugins=plugins()) as reme:
        proposal = tag_proposal(reme, NOTE, "sql")
    with running_server(workspace):
        code, out = reme_cli(workspace, "review", "list", "--json")
        assert code == 0, out
        assert [p["id"] for p in json.loads(out)["proposals"]] == [proposal.id]
        code, out = reme_cli(workspace, "review", "approve", proposal.id, "--json")
        assert code == 0, out
        (outcome,) = json.loads(out)["succeeded"]
        assert outcome["status"] == "approved"
        code, out = reme_cli(workspace, "review", "show", proposal.id, "--json")
        # Decided on the server, on behalf of the admin token the CLI found.
        assert json.loads(out)["decided_by"].startswith("token:")
    assert (workspace / NOTE).read_text(encoding="utf-8") == proposal.content
