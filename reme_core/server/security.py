"""Checks every request passes before auth: Host (DNS rebinding), Origin (cross-site browser
requests) and body size. Also the bind rule: no non-loopback address without auth.

A web page can make a browser send requests to 127.0.0.1, and DNS rebinding can make its own
hostname resolve there. The Host check stops the second (the page's hostname is not ours), the
Origin check the first (a browser always names the page's origin on a cross-origin POST).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reme_core.errors import ConfigError
from reme_core.server.http_errors import error_response
from reme_core.settings import ServerConfig

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(server: ServerConfig) -> None:
    """Refuse to listen beyond this machine without tokens."""
    if not server.auth and not is_loopback(server.host):
        raise ConfigError(
            f"server.auth is off, so reme serves only loopback addresses; refusing to bind "
            f"{server.host!r} (turn auth on, or bind 127.0.0.1)"
        )


def _hostname(value: str) -> str:
    """``Host``-style ``name[:port]`` or ``[v6]:port`` -> the lower-case name."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value  # a bare IPv6 address, or no port


# A Host header is a name or address and an optional port, nothing else: "127.0.0.1:2333@evil"
# once passed as 127.0.0.1 (userinfo, paths and spaces are refused whole).
_HOST_HEADER = re.compile(r"(?:\[[0-9a-f:.]+\]|[a-z0-9_.\-]+)(?::[0-9]{1,5})?")


def host_header_name(value: str) -> str | None:
    """The lower-case name of a well-formed ``Host`` header, or None when it is malformed."""
    value = value.strip().lower()
    if _HOST_HEADER.fullmatch(value) is None:
        return None
    return _hostname(value)


URL_LOGIN_SITES = frozenset({"none", "same-origin"})
"""``Sec-Fetch-Site`` values a ``?token=`` login is accepted from: the visitor opened the URL
(typed, pasted, a bookmark, a terminal's link) or this server's own page led there."""


def url_login_refusal(headers: Mapping[str, str]) -> str | None:
    """Why a token in this request's URL may not log in, or None when it may.

    Only a top-level navigation that is not cross-site may: never an image, script, frame or
    fetch (a note's ``![x](/?token=...)`` would otherwise log its reader in as that token),
    and never a navigation started by another site (login CSRF). Browsers since 2021-23 send
    fetch metadata; a client that sends none (curl, an older browser) is judged by ``Accept``
    alone, and a live session is never replaced without a confirmation whatever it sends.
    """
    site = headers.get("sec-fetch-site")
    mode = headers.get("sec-fetch-mode")
    dest = headers.get("sec-fetch-dest")
    if site is not None and site.lower() not in URL_LOGIN_SITES:
        return "a login link opened from another site is not accepted"
    if (mode is not None and mode.lower() != "navigate") or (
        dest is not None and dest.lower() != "document"
    ):
        return "a token in the address of an image, script, frame or fetch is not accepted"
    if site is None and mode is None and dest is None:
        accept = headers.get("accept", "").lower()
        if "text/html" not in accept and any(kind in accept for kind in ("image/", "text/css")):
            return "a token in the address of an image or stylesheet is not accepted"
    return None


class SecurityMiddleware:
    """Host allow-list, Origin allow-list (same-origin always allowed), body size limit."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        bound_host: str,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        max_body_bytes: int,
    ):
        self.app = app
        hosts = set(LOOPBACK_NAMES) | {_hostname(h) for h in allowed_hosts}
        if bound_host not in WILDCARD_HOSTS:
            hosts.add(_hostname(bound_host))
        self.hosts = frozenset(hosts)
        self.origins = frozenset(o.rstrip("/").lower() for o in allowed_origins)
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websocket endpoints: refuse rather than pass unchecked
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = _headers(scope)
        host = headers.get("host")
        if host is None or host_header_name(host) not in self.hosts:
            await error_response(
                403,
                "Forbidden",
                f"Host {host!r} is not accepted (add it to server.allowed_hosts if it is really "
                "this server's name)",
            )(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, host):
            await error_response(
                403,
                "Forbidden",
                f"cross-origin request from {origin!r} refused "
                "(allow a browser origin with server.allowed_origins)",
            )(scope, receive, send)
            return
        await self._with_body_limit(scope, receive, send, headers.get("content-length"))

    def _origin_allowed(self, origin: str, host: str) -> bool:
        origin = origin.rstrip("/").lower()
        if origin in self.origins:
            return True
        # The server's own pages (the OpenAPI docs): the origin is this very Host, which has
        # passed the Host check, so no other site can claim it.
        return urlsplit(origin).netloc == host.lower() and origin.startswith(
            ("http://", "https://")
        )

    async def _with_body_limit(
        self, scope: Scope, receive: Receive, send: Send, length: str | None
    ) -> None:
        limit = self.max_body_bytes
        if length is not None and (not length.isdigit() or int(length) > limit):
            await _too_large(limit)(scope, receive, send)
            return
        # Read the whole body first (it is bounded by the limit): a chunked body that turns out
        # too large is refused before any handler has seen a byte of it.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _too_large(limit)(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect, as usual

        await self.app(scope, replay, send)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}


def _too_large(limit: int) -> ASGIApp:
    return error_response(
        413,
        "PayloadTooLarge",
        f"request body over {limit} bytes (server.max_body_bytes)",
        headers={"Connection": "close"},
    )
