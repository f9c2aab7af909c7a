"""The token store (hashes only, mode 0600, the local admin token) and `reme token ...`."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reme_core.cli import cli
from reme_core.errors import ConfigError, NotFoundError, RemeError
from reme_core.server.auth import LOCAL_TOKEN_NOTE, TOKEN_FILE, TOKENS_FILE, TokenStore
from tests.server.api_support import Served, served


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def store(tmp_path: Path) -> TokenStore:
    return TokenStore(tmp_path / ".reme")


def test_created_token_verifies_and_only_its_hash_is_stored(store: TokenStore) -> None:
    token_id, secret = store.create("write", ["default", "notes"], "for the hook")
    principal = store.verify(secret)
    assert principal is not None
    assert (principal.token_id, principal.profile) == (token_id, "write")
    assert principal.workspaces == frozenset({"default", "notes"})
    assert store.verify(secret + "x") is None
    assert store.verify("") is None

    raw = store.path.read_text("utf-8")
    assert secret not in raw
    assert mode(store.path) == 0o600
    [listed] = store.list_tokens()
    assert listed.id == token_id and listed.note == "for the hook"
    assert "sha256" not in listed.model_dump()


def test_revoke(store: TokenStore) -> None:
    kept_id, kept = store.create("read", ["default"])
    gone_id, gone = store.create("admin", ["*"])
    store.revoke(gone_id)
    assert store.verify(gone) is None
    assert store.verify(kept) is not None
    with pytest.raises(NotFoundError, match="no token"):
        store.revoke(gone_id)
    assert [t.id for t in store.list_tokens()] == [kept_id]


@pytest.mark.parametrize(
    ("profile", "workspaces", "error"),
    [
        ("root", ["default"], "unknown profile"),
        ("read", [], "at least one workspace"),
        ("read", ["default", "elsewhere"], "no workspace named 'elsewhere'"),
    ],
)
def test_bad_requests_change_nothing(
    store: TokenStore, profile: str, workspaces: list[str], error: str
) -> None:
    store.create("read", ["default"])
    before = store.path.read_bytes()
    with pytest.raises(RemeError, match=error):
        store.create(profile, workspaces, known=["default", "notes"])
    assert store.path.read_bytes() == before


def test_local_token_is_created_once_and_replaced_when_lost(store: TokenStore) -> None:
    path = store.ensure_local_token()
    assert path == store.state_dir / TOKEN_FILE
    assert mode(path) == 0o600
    principal = store.verify(path.read_text("utf-8").strip())
    assert principal is not None and principal.profile == "admin" and "*" in principal.workspaces

    assert store.ensure_local_token() is None  # still valid: left alone
    first = path.read_text("utf-8")

    path.unlink()  # lost: a new one replaces the old local token, which stops working
    assert store.ensure_local_token() == path
    assert store.verify(first.strip()) is None
    assert [t.note for t in store.list_tokens()] == [LOCAL_TOKEN_NOTE]


def test_a_damaged_token_file_fails_closed(tmp_path: Path) -> None:
    with served(tmp_path) as api:
        (api.project / ".reme" / TOKENS_FILE).write_text("{not json", encoding="utf-8")
        with pytest.raises(ConfigError, match="damaged"):
            api.store.verify(api.tokens["admin"])
        response = api.post("status", token="admin")
        assert response.status_code == 503
        assert "damaged" in response.json()["error"]["message"]


def test_a_token_created_while_serving_works_at_once(tmp_path: Path) -> None:
    with served(tmp_path) as api:
        result = token_cli("create", "--profile", "read", "-w", str(api.project), "--json")
        secret = json.loads(result.stdout)["secret"]
        response = api.client.post(
            "/api/v1/status", json={}, headers={"Authorization": f"Bearer {secret}"}
        )
        assert response.status_code == 200
        assert_refuses_write(api, secret)


def assert_refuses_write(api: Served, secret: str) -> None:
    response = api.client.post(
        "/api/v1/write",
        json={"path": "x.md", "content": "x"},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 403


# -- CLI ----------------------------------------------------------------------------------------


def token_cli(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(cli, ["token", *args], catch_exceptions=False)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def test_cli_create_list_revoke(tmp_path: Path) -> None:
    (tmp_path / ".reme").mkdir()
    root = ["-w", str(tmp_path)]
    created = json.loads(
        token_cli(
            "create", "--profile", "read", "--workspace-name", "default", *root, "--json"
        ).stdout
    )
    assert created["profile"] == "read" and created["workspaces"] == ["default"]
    assert created["secret"].startswith("reme_")
    store = TokenStore(tmp_path / ".reme")
    assert store.verify(created["secret"]) is not None

    text = token_cli("create", "--profile", "admin", "--all-workspaces", *root).stdout
    assert "shown only now" in text

    listed = json.loads(token_cli("list", *root, "--json").stdout)
    assert [t["profile"] for t in listed] == ["read", "admin"]
    assert created["secret"] not in json.dumps(listed)
    assert created["id"] in token_cli("list", *root).stdout

    token_cli("revoke", created["id"], *root)
    assert store.verify(created["secret"]) is None
    missing = token_cli("revoke", created["id"], *root, code=1)
    assert "no token" in missing.stderr


def test_cli_refuses_unknown_workspaces_and_conflicting_flags(tmp_path: Path) -> None:
    (tmp_path / ".reme").mkdir()
    root = ["--workspace", str(tmp_path)]
    unknown = token_cli("create", "--profile", "read", "--workspace-name", "nope", *root, code=1)
    assert "no workspace named 'nope'" in unknown.stderr
    both = token_cli(
        "create",
        "--profile",
        "read",
        "--workspace-name",
        "default",
        "--all-workspaces",
        *root,
        code=2,
    )
    assert "not both" in both.stderr
    token_cli("create", "--profile", "root", *root, code=2)
    assert not (tmp_path / ".reme" / TOKENS_FILE).exists()

    other = tmp_path / "other"
    other.mkdir()
    named = token_cli(
        "create",
        "--profile",
        "write",
        "--workspace-name",
        "notes",
        *root,
        "--set",
        f"server.workspaces.notes={other}",
        "--json",
    )
    assert json.loads(named.stdout)["workspaces"] == ["notes"]


def test_cli_token_takes_the_workspace_folder_as_every_command_does(tmp_path: Path) -> None:
    """`-w/--workspace DIR` names the folder (as on every other command); the old -r/--root
    still works, hidden; a folder that is not a workspace is refused, nothing created."""
    help_text = token_cli("create", "--help").stdout
    assert "-w, --workspace" in help_text and "--workspace-name NAME" in help_text
    assert "--root" not in help_text
    (tmp_path / ".reme").mkdir()
    created = json.loads(
        token_cli("create", "--profile", "read", "-r", str(tmp_path), "--json").stdout
    )
    assert TokenStore(tmp_path / ".reme").verify(created["secret"]) is not None
    both = token_cli("list", "-w", str(tmp_path), "--root", str(tmp_path), code=2)
    assert "not both" in both.stderr

    plain = tmp_path / "plain"
    plain.mkdir()
    refused = token_cli("create", "--profile", "read", "-w", str(plain), code=1)
    assert "not a reme workspace" in refused.stderr and "reme init" in refused.stderr
    assert list(plain.iterdir()) == []
