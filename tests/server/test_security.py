"""What the server refuses: no token, the wrong profile, another workspace, cross-origin browser
requests, foreign Host headers, paths outside the workspace, oversize bodies, caller-supplied
confinement. Every refusal is checked to have changed nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from reme_core.cli import cli
from reme_core.errors import ConfigError
from reme_core.server.security import check_bind
from reme_core.settings import ServerConfig
from tests.server.api_support import SHARED_NOTE, Served, served

DEPLOY = "digest/procedure/deploy-process.md"
LIMIT = 4096


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("security")
    with served(
        base,
        f"server.max_body_bytes={LIMIT}",
        "server.allowed_hosts=[memory.lan]",
        "server.allowed_origins=['http://app.example']",
    ) as found:
        yield found


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".reme" not in p.parts
    }


def refused(response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    for word in words:
        assert word in message, message


# -- authentication -----------------------------------------------------------------------------


def test_no_token_is_401(api: Served) -> None:
    response = api.post("search", {"query": "deploy"}, token=None)
    refused(response, 401, "Authorization: Bearer")
    assert response.headers["WWW-Authenticate"] == "Bearer"
    refused(api.client.get("/status"), 401)
    refused(api.client.post("/mcp", json={}), 401)


def test_a_wrong_or_revoked_token_is_401(api: Served) -> None:
    wrong = api.client.post(
        "/api/v1/status", json={}, headers={"Authorization": "Bearer reme_not-a-token"}
    )
    refused(wrong, 401, "invalid or revoked")
    basic = api.client.post("/api/v1/status", json={}, headers={"Authorization": "Basic abc"})
    refused(basic, 401)

    token_id, secret = api.store.create("read", ["default"])
    headers = {"Authorization": f"Bearer {secret}"}
    assert api.client.post("/api/v1/status", json={}, headers=headers).status_code == 200
    api.store.revoke(token_id)  # the running app sees the changed file at once
    refused(api.client.post("/api/v1/status", json={}, headers=headers), 401, "revoked")


# -- profiles -----------------------------------------------------------------------------------


def test_read_token_cannot_write_or_delete(api: Served) -> None:
    before = snapshot(api.project)
    write = api.post("write", {"path": "digest/wiki/x.md", "content": "# x\n"}, token="read")
    refused(write, 403, "'write'", "'read'")
    delete = api.post("delete", {"path": DEPLOY}, token="read")
    refused(delete, 403, "'admin'")
    # Refused before validation: a malformed request still gets the profile answer.
    refused(api.post("edit", {"bogus": 1}, token="read"), 403, "'write'")
    assert snapshot(api.project) == before


@pytest.mark.parametrize(
    ("op", "body"),
    [
        ("delete", {"path": DEPLOY}),
        ("move", {"src": DEPLOY, "dst": "digest/procedure/moved.md"}),
        ("reindex", {}),
        ("dream", {"dry_run": True}),
    ],
)
def test_write_token_cannot_do_admin_operations(api: Served, op: str, body: dict) -> None:
    before = snapshot(api.project)
    refused(api.post(op, body, token="write"), 403, "'admin'")
    assert snapshot(api.project) == before


def test_write_token_can_write(api: Served) -> None:
    response = api.post(
        "write", {"path": "digest/wiki/allowed.md", "content": "# ok\n"}, token="write"
    )
    assert response.status_code == 200
    assert (api.project / "digest/wiki/allowed.md").read_text("utf-8") == "# ok\n"


# -- workspaces ---------------------------------------------------------------------------------


def test_token_for_one_workspace_cannot_use_another(api: Served) -> None:
    header = {"X-Reme-Workspace": "global"}
    refused(api.post("read", {"path": SHARED_NOTE}, token="read", headers=header), 403, "global")
    by_query = api.post("read", {"path": SHARED_NOTE}, token="read", params={"workspace": "global"})
    refused(by_query, 403)
    # And the other way round: a token for `global` cannot read the project.
    refused(api.post("read", {"path": DEPLOY}, token="global_read"), 403, "'default'")
    allowed = api.post("read", {"path": SHARED_NOTE}, token="global_read", headers=header)
    assert allowed.status_code == 200


def test_an_unknown_workspace_is_403_for_a_bound_token(api: Served) -> None:
    # No probing for names: a bound token gets the same answer for names that exist or not.
    missing = api.post("status", token="read", headers={"X-Reme-Workspace": "secret-project"})
    refused(missing, 403)


def test_status_lists_only_allowed_workspaces(api: Served) -> None:
    only_own = api.client.get("/status", headers=api.headers("read")).json()
    assert set(only_own["workspaces"]) == {"default"}
    only_global = api.client.get("/status", headers=api.headers("global_read")).json()
    assert set(only_global["workspaces"]) == {"global"}


def test_status_shows_server_paths_only_to_an_admin(api: Served) -> None:
    # Issue 20: the workspace root, index and store paths are the admin's business; a read or
    # write token sees them workspace-relative (or hidden), over the operation and GET /status.
    root = str(api.project.resolve())
    for token in ("read", "write"):
        over_op = api.post("status", token=token)
        assert over_op.status_code == 200, over_op.text
        over_get = api.client.get("/status", headers=api.headers(token))
        for answer in (over_op.text, over_get.text):
            assert root not in answer, token
            assert '"/' not in answer, token  # no absolute path at all
    assert root in api.post("status", token="admin").text


def test_admin_of_one_workspace_is_not_admin_of_another(api: Served) -> None:
    before = snapshot(api.shared)
    headers = {"X-Reme-Workspace": "global"}
    delete = api.post("delete", {"path": SHARED_NOTE}, token="admin_project", headers=headers)
    refused(delete, 403)
    assert snapshot(api.shared) == before


# -- browsers and DNS rebinding -----------------------------------------------------------------


def test_cross_origin_browser_post_is_rejected(api: Served) -> None:
    before = snapshot(api.project)
    attack = {"path": "digest/wiki/csrf.md", "content": "# pwned\n"}
    for origin in ("http://evil.example", "null", "http://127.0.0.1.evil.example"):
        response = api.post("write", attack, token="admin", headers={"Origin": origin})
        refused(response, 403, "cross-origin")
        assert "access-control-allow-origin" not in response.headers
    # A "simple" request (no preflight): text/plain, no token; refused all the same.
    simple = api.client.post(
        "/api/v1/write",
        content=b'{"path": "digest/wiki/csrf.md", "content": "x"}',
        headers={"Origin": "http://evil.example", "Content-Type": "text/plain"},
    )
    refused(simple, 403)
    assert snapshot(api.project) == before


def test_configured_and_same_origins_are_allowed(api: Served) -> None:
    allowed = api.post("status", token="read", headers={"Origin": "http://app.example"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://app.example"
    preflight = api.client.options(
        "/api/v1/search",
        headers={
            "Origin": "http://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert preflight.status_code == 200
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    # The server's own pages (the API docs) call it from its own origin.
    same = api.post("status", token="read", headers={"Origin": "http://127.0.0.1"})
    assert same.status_code == 200


def test_foreign_host_header_is_rejected(api: Served) -> None:
    # Malformed headers whose front looks like ours (issue 20, defect 12) are refused whole.
    malformed = ("127.0.0.1:2333@evil.example", "localhost:2333/x", "localhost evil", "[::1")
    for host in ("evil.example", "evil.example:2333", "127.0.0.1.nip.io", *malformed):
        response = api.post("status", token="read", headers={"Host": host})
        refused(response, 403, "Host")
    refused(api.client.get("/health", headers={"Host": "evil.example"}), 403)
    for host in ("localhost:2333", "memory.lan", "[::1]:2333"):
        assert api.post("status", token="read", headers={"Host": host}).status_code == 200


# -- paths and bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "body"),
    [
        ("read", {"path": "../outside.md"}),
        ("read", {"path": "/etc/passwd"}),
        ("write", {"path": "../../escaped.md", "content": "x"}),
        ("write", {"path": "digest/../../escaped.md", "content": "x"}),
        ("move", {"src": DEPLOY, "dst": "../escaped.md"}),
        ("list", {"path": ".."}),
        ("read", {"path": ".reme/tokens.json"}),
    ],
)
def test_path_traversal_is_rejected(api: Served, op: str, body: dict) -> None:
    before = snapshot(api.project.parent)
    response = api.post(op, body, token="admin")
    assert response.status_code in (403, 400), response.text
    assert response.json()["error"]["type"] in ("PathOutsideWorkspaceError", "WorkspaceError")
    assert snapshot(api.project.parent) == before
    assert "sha256" not in response.text


def test_caller_supplied_allowed_paths_is_an_error(api: Served) -> None:
    before = snapshot(api.project)
    body = {"path": "digest/wiki/y.md", "content": "# y\n", "allowed_paths": ["digest/"]}
    refused(api.post("write", body, token="admin"), 422, "allowed_paths", "server")
    assert snapshot(api.project) == before


def test_oversize_body_is_rejected(api: Served) -> None:
    before = snapshot(api.project)
    body = {"path": "digest/wiki/big.md", "content": "x" * (LIMIT + 1)}
    refused(api.post("write", body, token="admin"), 413, str(LIMIT))

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"path": "digest/wiki/big.md", "content": "'
        for _ in range(LIMIT // 512 + 1):
            yield b"y" * 512
        yield b'"}'

    chunked = api.client.post(
        "/api/v1/write",
        content=chunks(),
        headers=api.headers("admin", **{"Content-Type": "application/json"}),
    )
    refused(chunked, 413)
    assert snapshot(api.project) == before
    # Just under the limit is fine.
    small = {"path": "digest/wiki/small.md", "content": "z" * (LIMIT - 200)}
    assert api.post("write", small, token="admin").status_code == 200


# -- auth off -----------------------------------------------------------------------------------


def test_auth_off_serves_loopback_as_the_local_owner(tmp_path: Path) -> None:
    with served(tmp_path, "server.auth=false", auth=False) as api:
        assert api.post("status", token=None).status_code == 200
        refused(api.post("status", token=None, headers={"Host": "evil.example"}), 403)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "memory.lan"])
def test_non_loopback_bind_without_auth_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match="refusing to bind"):
        check_bind(ServerConfig(host=host, auth=False))
    check_bind(ServerConfig(host=host, auth=True))
    check_bind(ServerConfig(host="127.0.0.1", auth=False))
    check_bind(ServerConfig(host="localhost", auth=False))


def test_serve_refuses_a_public_bind_without_auth(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["serve", "-w", str(tmp_path), "--host", "0.0.0.0", "--set", "server.auth=false"],
        catch_exceptions=False,
    )
    assert result.exit_code == 2
    assert "refusing to bind '0.0.0.0'" in result.stderr
    assert not (tmp_path / ".reme").exists()  # refused before taking any lock
