"""Studio logins: a bearer token turned into an HttpOnly, SameSite=Strict session cookie, and a
per-session CSRF token for every state-changing request made with that cookie.

The cookie holds a random session id only. The server keeps, per session, the token secret it
was opened with (to re-check it on every request, so ``reme token revoke`` logs the browser out
at once), the CSRF token and an expiry. Sessions live in memory: a restarted server asks for the
login URL again.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import Request

from reme_core.errors import ConfigError
from reme_core.service.principal import LOCAL_ADMIN, Principal

if TYPE_CHECKING:
    from reme_core.server.auth import TokenStore

COOKIE_PREFIX = "reme_studio_"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
SESSION_SECONDS = 7 * 24 * 3600
MAX_SESSIONS = 1000
"""Oldest sessions are dropped beyond this (each login makes one)."""
SWITCH_SECONDS = 600
"""How long a "switch to the token in this link?" question stays answerable."""


@dataclass
class Session:
    id: str
    secret: str | None
    """The bearer token the session was opened with; None when auth is off."""
    csrf: str
    expires: float


@dataclass(frozen=True)
class Switch:
    """A login link opened while a session was live: held here until the visitor confirms, so
    the token never appears in the confirmation page and only that session can answer it."""

    id: str
    session_id: str
    secret: str
    to: str
    """Where to go after switching (a local path, taken from the link, never from the form)."""
    expires: float


@dataclass(frozen=True)
class Visitor:
    """Who is looking at a studio page, and how they proved it."""

    principal: Principal
    session: Session | None
    """The cookie session; None when the request carried a bearer token instead."""

    @property
    def csrf(self) -> str:
        return self.session.csrf if self.session is not None else ""

    def may(self, profile: str) -> bool:
        return self.principal.may_call(profile)  # type: ignore[arg-type]


class InvalidToken(Exception):
    """A login with a token that is unknown or revoked."""


class Sessions:
    """In-memory cookie sessions over a ``TokenStore`` (None: auth is off, everyone is owner)."""

    def __init__(self, store: TokenStore | None):
        self.store = store
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._switches: OrderedDict[str, Switch] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def cookie_name(request: Request) -> str:
        # Cookies ignore ports: two servers on one host need two names.
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        return f"{COOKIE_PREFIX}{port}"

    def principal_for(self, secret: str) -> Principal | None:
        if self.store is None:
            return LOCAL_ADMIN
        try:
            return self.store.verify(secret)
        except ConfigError:
            return None  # a damaged token file authorises nobody

    def login(self, secret: str | None) -> Session:
        """Open a session for ``secret`` (ignored when auth is off), or raise InvalidToken."""
        if self.store is not None and (not secret or self.principal_for(secret) is None):
            raise InvalidToken("invalid or revoked token")
        session = Session(
            id=secrets.token_urlsafe(32),
            secret=secret if self.store is not None else None,
            csrf=secrets.token_urlsafe(32),
            expires=time.time() + SESSION_SECONDS,
        )
        with self._lock:
            self._sessions[session.id] = session
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        return session

    def logout(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)

    def offer_switch(self, session: Session, secret: str, to: str) -> Switch:
        """Hold ``secret`` until ``session`` confirms replacing itself with it."""
        switch = Switch(
            id=secrets.token_urlsafe(32),
            session_id=session.id,
            secret=secret,
            to=to,
            expires=time.time() + SWITCH_SECONDS,
        )
        with self._lock:
            self._switches[switch.id] = switch
            while len(self._switches) > MAX_SESSIONS:
                self._switches.popitem(last=False)
        return switch

    def take_switch(self, session: Session, switch_id: str) -> Switch | None:
        """The switch ``session`` was offered as ``switch_id`` (used up), or None when there is
        none, it expired, or another session was offered it."""
        with self._lock:
            switch = self._switches.get(switch_id)
            if switch is None or not hmac.compare_digest(switch.session_id, session.id):
                return None
            del self._switches[switch_id]
        return switch if switch.expires >= time.time() else None

    def visitor(self, request: Request) -> Visitor | None:
        """The visitor a request proves to be: a bearer token first, else the session cookie;
        None when neither holds (or the token behind the session was revoked)."""
        bearer = _bearer(request)
        if bearer is not None:
            principal = self.principal_for(bearer)
            return Visitor(principal, None) if principal is not None else None
        session = self.session(request)
        if session is None:
            return None
        if session.secret is None:
            principal = LOCAL_ADMIN if self.store is None else None
        else:
            principal = self.principal_for(session.secret)
        if principal is None:
            self.logout(session)
            return None
        return Visitor(principal, session)

    def session(self, request: Request) -> Session | None:
        sid = request.cookies.get(self.cookie_name(request))
        if not sid:
            return None
        with self._lock:
            session = self._sessions.get(sid)
            if session is None:
                return None
            if session.expires < time.time():
                del self._sessions[sid]
                return None
            return session


def same_secret(session: Session, secret: str) -> bool:
    """Whether ``session`` was opened with ``secret`` (a login link for the session one has)."""
    return session.secret is not None and hmac.compare_digest(
        session.secret.encode(), secret.encode()
    )


def csrf_ok(visitor: Visitor, sent: str | None) -> bool:
    """A cookie-authenticated change must carry the session's CSRF token; a bearer token cannot
    be sent by another site, so it needs none."""
    if visitor.session is None:
        return True
    return session_csrf_ok(visitor.session, sent)


def session_csrf_ok(session: Session, sent: str | None) -> bool:
    """Whether ``sent`` is ``session``'s CSRF token."""
    return bool(sent) and hmac.compare_digest(sent.encode(), session.csrf.encode())


def _bearer(request: Request) -> str | None:
    value = request.headers.get("authorization")
    if value is None:
        return None
    scheme, _, credentials = value.partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return None
