"""Connect a host to a workspace, tell whether it is connected, and undo it exactly.

Connecting creates a ``write`` token bound to the workspace (never the admin token), backs up
every file it is about to change under ``.reme/integrations/backups/``, applies the host's ops
and keeps a record (``.reme/integrations/<host>-<scope>.json``, mode 0600) of each file: whether
it existed, its backup, and the hash of what reme wrote, and of each folder it created for them.
``remove`` puts a file reme last wrote back byte for byte (or deletes it when it did not exist);
a file edited since loses only reme's keys; a folder reme created goes when nothing else is in it
(one the user put files in since stays). A rerun reads the token's secret back from the host's files: when it still verifies and
the files already hold everything, nothing changes ("already connected").
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reme_core.errors import ConfigError, NotFoundError
from reme_core.integrate import Host, Target
from reme_core.integrate.config_files import (
    MISSING,
    JsonFile,
    Op,
    file_mode,
    sha256,
    write_private,
)
from reme_core.integrate.text_files import load_config
from reme_core.runtime import STATE_DIR
from reme_core.server.auth import TOKENS_FILE, TokenStore
from reme_core.server.discovery import read_discovery
from reme_core.server.workspaces import DEFAULT
from reme_core.settings import Settings

RECORD_DIR = "integrations"
PROFILE = "write"
PLACEHOLDER = "reme_" + "0" * 43
"""Stands for the secret a dry run would create (printed masked like any other)."""
_SECRET = re.compile(r"reme_[A-Za-z0-9_-]{20,}")
_ANY_ADDRESS = ("0.0.0.0", "::", "")
DELETED = "(removed: it did not exist before)"


class NoTokenStoreError(ConfigError):
    """The workspace's server has no token store yet."""


class Workspace:
    """The workspace, where its server listens (or will) and the store of its tokens."""

    def __init__(self, settings: Settings):
        self.root = settings.workspace_path()
        info = read_discovery(self.root)
        state = self.root / STATE_DIR
        if info is not None:
            self.url, self.name = info.url, info.workspace
            if info.token_file:  # tokens live beside the server's first workspace's token
                state = Path(info.token_file).parent
        else:
            host = settings.server.host
            host = "127.0.0.1" if host in _ANY_ADDRESS else host
            self.url, self.name = f"http://{host}:{settings.server.port}", DEFAULT
        if not (state / TOKENS_FILE).is_file():
            raise NoTokenStoreError(
                f"no token store at {state / TOKENS_FILE}: start `reme serve -w {self.root}` "
                "once (it creates the store), then run this again"
            )
        self.store = TokenStore(state)

    def record_path(self, host: Host, scope: str, project: Path) -> Path:
        name = f"{host.name}-{scope}"
        if scope == "project":
            name += "-" + hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:10]
        return self.root / STATE_DIR / RECORD_DIR / f"{name}.json"


def connect(
    host: Host, settings: Settings, scope: str, project: Path, dry_run: bool
) -> dict[str, Any]:
    """Connect ``host`` to the workspace (or say what that would change, with ``dry_run``)."""
    ws = Workspace(settings)
    record_file = ws.record_path(host, scope, project)
    record = _read_record(record_file)

    def target(secret: str) -> Target:
        return Target(ws.root, ws.name, ws.url, secret, scope, project.resolve())

    files = _plan(host.operations(target(PLACEHOLDER)))  # a malformed file fails here, first
    token_id = _token_in_use(ws, record)
    secret = _secret_in(files, ws, token_id) if token_id else None
    report: dict[str, Any] = {
        "host": host.name,
        "scope": scope,
        "workspace": str(ws.root),
        "url": ws.url,
        "dry_run": dry_run,
    }
    if secret is not None:
        files = _plan(host.operations(target(secret)))
        changes = [c for f in files.values() for c in f.changes]
        if not changes:
            return report | {"status": "already connected", "token": token_id, "changes": []}
    elif not dry_run:
        token_id, secret = ws.store.create(PROFILE, [ws.name], host.label)
        files = _plan(host.operations(target(secret)))
    changes = [c.as_dict() for f in files.values() for c in f.changes]
    report |= {"token": token_id, "profile": PROFILE, "changes": changes}
    if dry_run:
        return report | {"status": "would connect"}
    old_token = record.get("token") if record else None
    if old_token and old_token != token_id:  # its secret is gone from the files: replace it
        _revoke(ws, old_token)
    _write(record_file, record, files, token_id, ops=host.operations(target(secret or "")))
    return report | {"status": "connected"}


def remove(
    host: Host, settings: Settings, scope: str, project: Path, dry_run: bool
) -> dict[str, Any]:
    """Put back every file as it was before ``connect`` and revoke its token."""
    ws = Workspace(settings)
    record_file = ws.record_path(host, scope, project)
    record = _read_record(record_file)
    report: dict[str, Any] = {
        "host": host.name,
        "scope": scope,
        "workspace": str(ws.root),
        "dry_run": dry_run,
    }
    if record is None:
        return report | {"status": "not connected", "changes": []}
    changes: list[dict[str, Any]] = []
    for entry in record["files"]:
        changes.extend(_restore(entry, record["ops"], dry_run))
    gone = {c["file"] for c in changes if c["new"] == DELETED}
    changes.extend(_remove_folders(record.get("created_dirs", []), gone, dry_run))
    report |= {"token": record["token"], "changes": changes}
    if dry_run:
        return report | {"status": "would remove"}
    _revoke(ws, record["token"])
    for entry in record["files"]:
        if entry["backup"]:
            Path(entry["backup"]).unlink(missing_ok=True)
    record_file.unlink()
    return report | {"status": "removed"}


def connected_scopes(host: Host, settings: Settings, project: Path) -> list[str]:
    """The scopes in which ``host`` is connected to the workspace (its token still valid)."""
    ws = Workspace(settings)
    live = {t.id for t in ws.store.list_tokens()}
    found = []
    for scope in host.scopes:
        record = _read_record(ws.record_path(host, scope, project))
        if record is not None and record["token"] in live:
            found.append(scope)
    return found


# -- planning -----------------------------------------------------------------------------------


def _plan(ops: list[Op]) -> dict[Path, JsonFile]:
    files: dict[Path, JsonFile] = {}
    for op in ops:
        if op.path not in files:
            files[op.path] = load_config(op.path)
    for op in ops:
        files[op.path].apply(op)
    return files


def _token_in_use(ws: Workspace, record: dict[str, Any] | None) -> str | None:
    if record is None:
        return None
    live = {t.id for t in ws.store.list_tokens()}
    return record["token"] if record["token"] in live else None


def _secret_in(files: dict[Path, JsonFile], ws: Workspace, token_id: str) -> str | None:
    """The secret of ``token_id`` as the host's files hold it, if they still do."""
    for file in files.values():
        # The text as it is on disk (``apply`` already changed ``data``), whatever its format.
        for candidate in _SECRET.findall((file.raw or b"").decode("utf-8", "replace")):
            principal = ws.store.verify(candidate)
            if principal is not None and principal.token_id == token_id:
                return candidate
    return None


def file_before(file: JsonFile) -> Any:
    """The file's content as it is on disk (``apply`` already changed ``data``)."""
    return json.loads(file.raw.decode("utf-8")) if file.raw and file.raw.strip() else {}


# -- writing and restoring ------------------------------------------------------------------------


def _write(
    record_file: Path,
    record: dict[str, Any] | None,
    files: dict[Path, JsonFile],
    token_id: str | None,
    ops: list[Op],
) -> None:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    backups = record_file.parent / "backups"
    entries = {e["path"]: e for e in (record or {}).get("files", [])}
    created: list[str] = list((record or {}).get("created_dirs", []))
    for path, file in files.items():
        if not file.changes:
            continue
        created += [d for d in _missing_folders(path) if d not in created]
        entry = entries.get(str(path))
        if entry is None:  # the first time reme changes this file: keep what was there
            backup = None
            if file.raw is not None:
                backup = backups / f"{path.name}.reme-backup-{stamp}"
                write_private(backup, file.raw)
            entry = entries[str(path)] = {
                "path": str(path),
                "existed": file.raw is not None,
                "backup": str(backup) if backup else None,
                "mode": file_mode(path),
            }
        data = file.render()
        write_private(path, data, file_mode(path))
        entry["written"] = sha256(data)
    body = {
        "token": token_id,
        "created": (record or {}).get("created") or stamp,
        "files": list(entries.values()),
        "created_dirs": created,
        "ops": [_op_record(op, files[op.path]) for op in ops],
    }
    if record:  # what reme set on the first run is what a surgical undo must put back
        body["ops"] = record["ops"]
    write_private(record_file, (json.dumps(body, indent=2) + "\n").encode("utf-8"))


def _op_record(op: Op, file: JsonFile) -> dict[str, Any]:
    change = next((c for c in file.changes if c.key == ".".join(op.keys)), None)
    old = MISSING if change is None else change.old
    return {
        "path": str(op.path),
        "keys": list(op.keys),
        "kind": op.kind,
        "value": None if op.secret else op.value,
        "value_sha": _value_sha(op.value),
        "old": None if old is MISSING or op.kind == "append" else old,
        "had_old": old is not MISSING and op.kind != "append",
    }


def _value_sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _restore(
    entry: dict[str, Any], ops: list[dict[str, Any]], dry_run: bool
) -> list[dict[str, Any]]:
    path = Path(entry["path"])
    try:
        current: bytes | None = path.read_bytes()
    except FileNotFoundError:
        current = None
    if current is not None and sha256(current) == entry.get("written"):
        if not entry["existed"]:
            if not dry_run:
                path.unlink()
            return [
                {
                    "file": str(path),
                    "key": "",
                    "old": "(written by reme)",
                    "new": DELETED,
                }
            ]
        if not dry_run:
            write_private(path, Path(entry["backup"]).read_bytes(), entry.get("mode", 0o600))
        return [
            {
                "file": str(path),
                "key": "",
                "old": "(written by reme)",
                "new": "(restored from backup)",
            }
        ]
    if current is None:
        return []
    file = load_config(path)  # edited since: take out only what reme put there
    removed: list[str] = []
    for op in (o for o in ops if o["path"] == str(path)):
        keys = tuple(op["keys"])
        now = file.get(keys)
        if op["kind"] == "set" and (now is MISSING or _value_sha(now) != op["value_sha"]):
            continue  # changed by someone else since: theirs now
        value = op["value"] if op["kind"] == "append" else None
        file.undo(Op(path, keys, value, op["kind"]), op["old"] if op["had_old"] else MISSING)
        removed.append(".".join(keys))
    if not dry_run and removed:
        write_private(path, file.render(), file_mode(path))
    return [
        {"file": str(path), "key": k, "old": "(set by reme)", "new": "(taken out)"} for k in removed
    ]


def _missing_folders(path: Path) -> list[str]:
    """The folders above ``path`` that do not exist yet, deepest first: writing it creates them."""
    missing: list[str] = []
    folder = path.parent
    while not folder.exists() and folder.parent != folder:
        missing.append(str(folder))
        folder = folder.parent
    return missing


def _remove_folders(folders: list[str], gone: set[str], dry_run: bool) -> list[dict[str, Any]]:
    """Remove each folder reme created that holds nothing but what this remove takes away
    (``gone``: the files it deletes; with ``dry_run`` they are still there), deepest first."""
    changes: list[dict[str, Any]] = []
    removed: set[str] = set()
    for name in sorted(folders, key=lambda f: len(Path(f).parts), reverse=True):
        folder = Path(name)
        if not folder.is_dir():
            continue  # removed by hand already
        left = [
            p
            for p in folder.iterdir()
            if str(p) not in gone | removed and not _own_bytecode(p, gone)
        ]
        change = {"file": name, "key": "", "old": "(folder created by reme)"}
        if left:
            changes.append(change | {"new": "(kept: it holds files reme did not write)"})
            continue
        if not dry_run:
            shutil.rmtree(folder)  # only reme's files' bytecode is left in it
        removed.add(name)
        changes.append(change | {"new": "(removed: it did not exist before)"})
    return changes


def _own_bytecode(path: Path, gone: set[str]) -> bool:
    """``path`` is a ``__pycache__`` holding only the compiled form of files in ``gone`` (the
    host imported the plugin reme wrote)."""
    if path.name != "__pycache__" or not path.is_dir():
        return False
    return all(
        p.is_file()
        and p.suffix == ".pyc"
        and str(path.parent / (p.name.split(".", 1)[0] + ".py")) in gone
        for p in path.iterdir()
    )


def _revoke(ws: Workspace, token_id: str) -> None:
    with contextlib.suppress(NotFoundError):  # revoked by hand already
        ws.store.revoke(token_id)


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{path} is damaged ({exc}); restore the host's files from its backups"
        ) from None
    return data if isinstance(data, dict) else None
