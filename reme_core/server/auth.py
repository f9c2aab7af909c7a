"""Bearer tokens: each bound to a profile (read, write, admin) and to the workspaces it may use.

Tokens live in the default workspace's ``.reme/tokens.json`` (mode 0600). Only the SHA-256 of a
secret is stored, so the file leaks no usable token; a secret is shown once, when it is created.
The server re-reads the file when it changes, so ``reme token create|revoke`` takes effect on a
running server at once.

On first start the server creates an admin token for every workspace and writes its secret to
``.reme/token`` (mode 0600), where the CLI and hooks on this machine find it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
import threading
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from filelock import FileLock
from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from reme_core.errors import ConfigError, NotFoundError, RemeError
from reme_core.server.discovery import now
from reme_core.server.http_errors import error_response
from reme_core.server.principal import LOCAL_ADMIN, Principal, current_principal
from reme_core.service.operations import PROFILE_RANK, Profile

TOKENS_FILE = "tokens.json"
TOKEN_FILE = "token"
TOKEN_ENV = "REME_TOKEN"
ALL_WORKSPACES = "*"
LOCAL_TOKEN_NOTE = "local admin token (.reme/token)"


class TokenInfo(BaseModel):
    """A token as ``reme token list`` shows it: never the secret, nor its hash."""

    id: str
    profile: Profile
    workspaces: list[str]
    created: str
    note: str = ""


class _StoredToken(TokenInfo):
    sha256: str


class _TokenFile(BaseModel):
    version: int = 1
    tokens: list[_StoredToken] = []


class TokenStore:
    """``.reme/tokens.json`` of the server's default workspace."""

    def __init__(self, state_dir: Path):
        self.state_dir = state_dir
        self.path = state_dir / TOKENS_FILE
        self._cache: tuple[tuple[int, int, int], list[_StoredToken]] | None = None
        self._cache_lock = threading.Lock()

    def create(
        self,
        profile: str,
        workspaces: Iterable[str],
        note: str = "",
        *,
        known: Collection[str] | None = None,
    ) -> tuple[str, str]:
        """A new token; returns ``(id, secret)``. ``known`` lists the workspace names that exist
        (``"*"`` grants all of them, including ones added later)."""
        if profile not in PROFILE_RANK:
            raise RemeError(f"unknown profile {profile!r}; use one of {', '.join(PROFILE_RANK)}")
        names = sorted(set(workspaces))
        if not names:
            raise RemeError("a token needs at least one workspace (or '*' for all)")
        if known is not None:
            unknown = [n for n in names if n != ALL_WORKSPACES and n not in known]
            if unknown:
                raise NotFoundError(
                    f"no workspace named {', '.join(map(repr, unknown))}; known: {', '.join(known)}"
                )
        token, secret = _new_token(profile, names, note)
        with self._locked():
            self._save([*self._load(), token])
        return token.id, secret

    def list_tokens(self) -> list[TokenInfo]:
        return [TokenInfo.model_validate(t.model_dump(exclude={"sha256"})) for t in self._load()]

    def revoke(self, token_id: str) -> None:
        with self._locked():
            stored = self._load()
            kept = [t for t in stored if t.id != token_id]
            if len(kept) == len(stored):
                raise NotFoundError(f"no token {token_id!r} (see `reme token list`)")
            self._save(kept)

    def verify(self, secret: str) -> Principal | None:
        """The principal for ``secret``, or None. Every stored hash is compared in constant
        time, so timing does not tell how much of a guess matched."""
        found = self._match(self._current(), secret)
        if found is None:
            return None
        return Principal(found.id, found.profile, frozenset(found.workspaces))

    def ensure_local_token(self) -> Path | None:
        """Make sure ``.reme/token`` holds a valid admin token for every workspace, so the CLI
        and hooks on this machine can call the server. Creates one on first start (or when the
        file was deleted or its token revoked, replacing the earlier local token); returns the
        path when it wrote a new one, None when the file was already good."""
        path = self.state_dir / TOKEN_FILE
        with self._locked():
            stored = self._load()
            try:
                current = path.read_text(encoding="utf-8").strip()
            except OSError:
                current = ""
            if current and self._match(stored, current) is not None:
                return None
            token, secret = _new_token("admin", [ALL_WORKSPACES], LOCAL_TOKEN_NOTE)
            _write_private(path, secret + "\n")
            self._save([*(t for t in stored if t.note != LOCAL_TOKEN_NOTE), token])
        return path

    @staticmethod
    def _match(tokens: list[_StoredToken], secret: str) -> _StoredToken | None:
        digest = _digest(secret)
        found = None
        for token in tokens:  # no early exit: every hash is compared, whatever matches
            if hmac.compare_digest(digest, token.sha256):
                found = token
        return found

    # -- file ---------------------------------------------------------------------------------

    def _locked(self) -> FileLock:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        return FileLock(self.state_dir / (TOKENS_FILE + ".lock"))

    def _load(self) -> list[_StoredToken]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc}") from None
        try:
            return _TokenFile.model_validate(json.loads(raw)).tokens
        except (ValueError, ValidationError) as exc:
            # Fail closed: a damaged file authorises nobody, and says where the problem is.
            raise ConfigError(
                f"{self.path} is damaged ({exc.__class__.__name__}); fix it or delete it "
                "(the next start then creates a new admin token)"
            ) from None

    def _save(self, tokens: list[_StoredToken]) -> None:
        body = _TokenFile(tokens=tokens).model_dump(mode="json")
        _write_private(self.path, json.dumps(body, indent=2) + "\n")

    def _current(self) -> list[_StoredToken]:
        """The stored tokens, re-read only when the file changed."""
        try:
            info = self.path.stat()
            key = (info.st_mtime_ns, info.st_size, info.st_ino)
        except FileNotFoundError:
            return []
        with self._cache_lock:
            if self._cache is None or self._cache[0] != key:
                self._cache = (key, self._load())
            return self._cache[1]


def _new_token(profile: str, workspaces: list[str], note: str) -> tuple[_StoredToken, str]:
    secret = "reme_" + secrets.token_urlsafe(32)
    token = _StoredToken(
        id="tok_" + secrets.token_hex(6),
        profile=profile,  # type: ignore[arg-type]  # the caller checked it
        workspaces=workspaces,
        created=now(),
        note=note,
        sha256=_digest(secret),
    )
    return token, secret


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _write_private(path: Path, text: str) -> None:
    """Write atomically with mode 0600 from the start (mkstemp), never briefly world-readable."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class AuthMiddleware:
    """Resolves the caller: a valid bearer token, or (auth off, loopback only) the local owner.

    The principal goes into ``scope["state"]["principal"]`` (``request.state.principal``) and the
    ``current_principal`` context variable for the rest of the request.

    Paths under ``own_auth_prefixes`` (the studio: a session cookie or a bearer token) pass
    through unchecked: their routes authenticate every request themselves.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        store: TokenStore | None,
        public_paths: Collection[str],
        own_auth_prefixes: tuple[str, ...] = (),
    ):
        self.app = app
        self.store = store
        self.public_paths = frozenset(public_paths)
        self.own_auth_prefixes = own_auth_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or path in self.public_paths
            or path.startswith(self.own_auth_prefixes)
        ):
            await self.app(scope, receive, send)
            return
        if self.store is None:
            principal: Principal | None = LOCAL_ADMIN
        else:
            secret = _bearer(scope)
            if secret is None:
                await _unauthorized(
                    "missing bearer token: send 'Authorization: Bearer <token>' "
                    f"(the first token is in the server's .reme/{TOKEN_FILE}; "
                    "create others with `reme token create`)"
                )(scope, receive, send)
                return
            try:
                principal = self.store.verify(secret)
            except ConfigError as exc:
                await error_response(503, "ConfigError", str(exc))(scope, receive, send)
                return
            if principal is None:
                await _unauthorized("invalid or revoked token")(scope, receive, send)
                return
        scope.setdefault("state", {})["principal"] = principal
        reset = current_principal.set(principal)
        try:
            await self.app(scope, receive, send)
        finally:
            current_principal.reset(reset)


def _bearer(scope: Scope) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                return credentials.strip()
            return None
    return None


def _unauthorized(message: str) -> Any:
    return error_response(401, "Unauthorized", message, headers={"WWW-Authenticate": "Bearer"})
