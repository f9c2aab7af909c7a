"""Issue 20's probe families against a real `reme serve`, part two: ``?token=`` logins, Host
headers, /docs offline and tokens in the server's log; ``run_all`` runs every family of both
parts on one target, in order (history first: its hostile files must be there before anything
snapshots; the log last: every URL login before it is in the log). Nothing here imports pytest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.adversarial import probes as P
from tests.adversarial.families import (
    CROSS_SITE,
    IMAGE,
    SAME_ORIGIN_LINK,
    TYPED,
    Family,
    _browser,
    _disk,
    _field,
    _profile,
    _session,
    history_family,
    names_family,
    non_utf8_family,
)

# -- studio login ---------------------------------------------------------------------------


def login_family(target: P.Target) -> Family:
    family = Family("studio login (?token=)")
    # A subresource and a cross-site navigation, in a browser without a session: no login.
    for label, headers in [("image", IMAGE), ("cross-site navigation", CROSS_SITE)]:
        with _browser(target) as client:
            answer = client.get(f"/?token={target.admin}", headers=headers)
            logged_in = "set-cookie" in answer.headers or _profile(client) is not None
            family.check(
                label,
                answer.status_code,
                answer.text,
                target.canaries,
                changed=logged_in,
                refused=True,
            )
    with _browser(target) as client:
        signed = client.get(f"/?token={target.admin}", headers=TYPED)
        family.check(
            "typed admin login (control)",
            signed.status_code,
            signed.text,
            target.canaries,
            refused=False,
        )
        session, switch, csrf = _session(client), "", ""
        if session is None or _profile(client) != "admin":
            family.failures.append("a typed login URL did not sign in: the probes prove nothing")
        # Signed in: an image, a cross-site link and a same-origin link never swap the session.
        for label, headers in [
            ("image while signed in", IMAGE),
            ("cross-site link while signed in", CROSS_SITE),
            ("same-origin link while signed in", SAME_ORIGIN_LINK),
        ]:
            answer = client.get(f"/studio/browse?token={target.reader}", headers=headers)
            swapped = _session(client) != session or _profile(client) != "admin"
            family.check(
                label,
                answer.status_code,
                answer.text,
                target.canaries,
                changed=swapped or "set-cookie" in answer.headers,
            )
            if label.startswith("same-origin"):
                switch, csrf = _field(answer.text, "switch"), _field(answer.text, "csrf")
        forged = client.post("/studio/login", data={"switch": switch})
        family.check(
            "switch POST without CSRF",
            forged.status_code,
            forged.text,
            target.canaries,
            changed=_profile(client) != "admin",
            refused=True,
        )
        done = client.post("/studio/login", data={"switch": switch, "csrf": csrf})
        family.check(
            "confirmed switch (control)",
            done.status_code,
            done.text,
            target.canaries,
            refused=False,
        )
        if _profile(client) != "read":
            family.failures.append("the confirmed switch did not switch: the ask page is broken")
    return family


# -- Host -----------------------------------------------------------------------------------


def host_values(port: int) -> list[str]:
    return [
        f"127.0.0.1:{port}@evil.example",
        f"evil.example@127.0.0.1:{port}",
        f"127.0.0.1:{port}/evil.example",
        f"127.0.0.1 evil.example:{port}",
        f"127.0.0.1:{port},evil.example",
        f"127.0.0.1:{port}\\evil.example",
        "evil.example",
        f"localhost.evil.example:{port}",
        f"127.0.0.1:{port}:80",
        f"127.0.0.1:{port}#evil.example",
    ]


def host_family(target: P.Target) -> Family:
    family = Family("Host header")
    port = httpx.URL(target.url).port or 80
    body = json.dumps({"path": P.EXISTING})
    auth = {"Authorization": f"Bearer {target.admin}", "Content-Type": "application/json"}
    control = httpx.post(f"{target.url}/api/v1/read", content=body, headers=auth, timeout=60)
    family.check(
        "own Host (control)", control.status_code, control.text, target.canaries, refused=False
    )
    for value in host_values(port):
        before = _disk(target)
        headers = {**auth, "Host": value}
        for method, path in [("POST", "/api/v1/write"), ("GET", "/studio/browse")]:
            content = json.dumps({"path": "digest/wiki/host-probe.md", "content": "# h\n"})
            try:
                answer = httpx.request(
                    method,
                    f"{target.url}{path}",
                    headers=headers,
                    content=content if method == "POST" else None,
                    timeout=60,
                )
                status, text = answer.status_code, answer.text
            except httpx.HTTPError as exc:  # the client refusing to send it is a refusal too
                status, text = 400, f"client: {exc}"
            family.check(
                f"{method} {path} Host={value!r}",
                status,
                text,
                target.canaries,
                changed=_disk(target) != before,
                refused=True,
            )
        target.post("delete", {"path": "digest/wiki/host-probe.md"})
    return family


# -- tokens in logs, /docs ------------------------------------------------------------------


def logs_family(target: P.Target, log: Path | None) -> Family:
    family = Family("tokens in logs")
    if log is None:
        family.failures.append("the server's log was not captured")
        return family
    with _browser(target) as client:
        for token in (target.admin, target.reader, "reme_" + "x" * 40):
            client.get(f"/?token={token}", headers=TYPED)
            client.get(f"/studio/search?q=deploy&token={token}", headers=TYPED)
            client.get(f"/studio/browse?token={token}", headers=IMAGE)
    httpx.get(f"{target.url}/status?token={target.reader}", timeout=60)
    logged = log.read_text(errors="replace")
    logs = target.workspace / ".reme" / "logs"
    if logs.is_dir():
        logged += "".join(p.read_text(errors="replace") for p in logs.rglob("*") if p.is_file())
    family.probes = 10  # the URL logins above, each a line the access log writes
    if "GET /" not in logged:
        family.failures.append("no access log line was captured: the probe proves nothing")
    leaks = P._leaks(logged, [target.admin, target.reader, "reme_" + "x" * 40])
    if leaks:
        family.leaked += 1
        family.failures.append(f"log holds tokens {leaks}")
    return family


EXTERNAL = re.compile(
    r"""(?:src|href|action|content)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//|"""
    r"""@import|cdn\.|jsdelivr|unpkg""",
    re.I,
)


def docs_family(target: P.Target) -> Family:
    family = Family("/docs offline")
    for token in (None, target.admin):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        answer = httpx.get(f"{target.url}/docs", headers=headers, timeout=60)
        family.check(
            f"GET /docs token={bool(token)}", answer.status_code, answer.text, target.canaries
        )
        external = sorted(set(m.group(0) for m in EXTERNAL.finditer(answer.text)))
        policy = answer.headers.get("content-security-policy", "")
        if external or (answer.is_success and ("http" in policy or not policy)):
            family.failures.append(f"/docs references outside hosts {external} or CSP {policy!r}")
    for page in ("/redoc", "/docs/oauth2-redirect"):
        answer = httpx.get(f"{target.url}{page}", timeout=60)
        family.check(f"GET {page}", answer.status_code, answer.text, target.canaries)
        if answer.is_success and EXTERNAL.search(answer.text):
            family.failures.append(f"{page} loads assets from an outside host")
    return family


FAMILIES: list[tuple[str, Callable[..., Family]]] = [
    ("history", history_family),
    ("login", login_family),
    ("names", names_family),
    ("non-utf8", non_utf8_family),
    ("host", host_family),
    ("docs", docs_family),
]


def run_all(target: P.Target, log: Path | None) -> list[Family]:
    """Every family on one target, the log last (with ``log``, the file ``served`` wrote)."""
    found = [run(target) for _, run in FAMILIES]
    return [*found, logs_family(target, log)]  # last: every URL login above is in the log
