"""Logging in to the studio with a token: from a login URL (``?token=``) or the login form, and
switching a live session to another token only once its owner confirms.

A URL can be put in front of a browser by anyone: an image in a note (``![x](/?token=READ)``),
a link on another site. So a URL token is accepted only from a top-level navigation that is not
cross-site (the server's ``security.url_login_refusal``), and when the browser already has a session for a
different token it is asked first ("you are signed in as X; switch?"): the switch happens only on
a POST carrying that session's CSRF token, which no other page can read.
"""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from reme_core.service.principal import Principal
from reme_core.studio.sessions import CSRF_FIELD, Session, same_secret, session_csrf_ok
from reme_core.studio.site import OpFailed, Studio, secure, without_token

SWITCH_FIELD = "switch"


def url_login(studio: Studio, request: Request) -> Response:
    """The answer to a GET whose URL carries ``?token=``; the token never reaches a page."""
    to = without_token(request)
    if not studio.auth:  # nothing to log in with: just take the token out of the address bar
        return _redirect(to)
    refusal = studio.host.url_login_refusal(request.headers)
    if refusal is not None:
        message = f"{refusal}: open the link yourself, or paste the token below."
        return studio.login_page(request, message, status=403)
    secret = request.query_params.get("token", "")
    principal = studio.sessions.principal_for(secret) if secret else None
    if principal is None:
        return studio.login_page(request, "That token is not valid (unknown or revoked).")
    current = _live_session(studio, request)
    if current is None:
        return studio.start_session(request, secret, to)
    session, who = current
    if same_secret(session, secret):
        return _redirect(to)
    return _ask_to_switch(studio, request, session, who, principal, secret, to)


def form_login(studio: Studio, request: Request, form: FormData) -> Response:
    """``POST /studio/login``: a pasted token, or the answer to a switch question."""
    current = _live_session(studio, request)
    switch_id = form.get(SWITCH_FIELD)
    if isinstance(switch_id, str) and switch_id:
        return _confirm_switch(studio, request, form, current, switch_id)
    token = form.get("token")
    secret = token if isinstance(token, str) else ""
    if current is None:
        return studio.start_session(request, secret, "/")
    # A login form posted while another session is live (a stale tab): ask, as for a link.
    principal = studio.sessions.principal_for(secret) if secret else None
    if principal is None:
        return studio.login_page(request, "That token is not valid (unknown or revoked).")
    session, who = current
    if same_secret(session, secret):
        return _redirect("/")
    return _ask_to_switch(studio, request, session, who, principal, secret, "/")


def _confirm_switch(
    studio: Studio,
    request: Request,
    form: FormData,
    current: tuple[Session, Principal] | None,
    switch_id: str,
) -> Response:
    if current is None:
        return studio.login_page(request, "Your session ended; open the login link again.")
    session, _ = current
    sent = form.get(CSRF_FIELD)
    if not (isinstance(sent, str) and session_csrf_ok(session, sent)):
        raise OpFailed(
            403,
            "Forbidden",
            "this switch was not confirmed from the studio (CSRF token missing or wrong); "
            "open the login link again",
        )
    switch = studio.sessions.take_switch(session, switch_id)
    if switch is None:
        raise OpFailed(400, "BadRequest", "this question expired; open the login link again")
    response = studio.start_session(request, switch.secret, switch.to)
    studio.sessions.logout(session)
    return response


def _ask_to_switch(
    studio: Studio,
    request: Request,
    session: Session,
    who: Principal,
    principal: Principal,
    secret: str,
    to: str,
) -> Response:
    switch = studio.sessions.offer_switch(session, secret, to)
    context = {
        "page": None,
        "logged_in": True,
        "current": who,
        "offered": principal,
        "switch": switch.id,
        "csrf": session.csrf,
        "stay": to,
    }
    return studio.html("switch.html", context)


def _live_session(studio: Studio, request: Request) -> tuple[Session, Principal] | None:
    """The browser's session cookie and who it is, when it holds one that still works."""
    session = studio.sessions.session(request)
    if session is None or session.secret is None:
        return None
    principal = studio.sessions.principal_for(session.secret)
    return (session, principal) if principal is not None else None


def _redirect(to: str) -> Response:
    return secure(RedirectResponse(to, status_code=303))
