"""Login tokens never reach a log line (issue 20, defect 7): uvicorn's access log printed
``GET /?token=reme_...`` for every URL login."""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

import httpx
import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example
from uvicorn.logging import AccessFormatter

from reme_core.runtime import STATE_DIR
from reme_core.server import log_mask
from reme_core.server.auth import TOKEN_FILE
from reme_core.server.serve import Server
from reme_core.settings import load_settings
from tests.server.api_support import plugins

SECRET = "reme_" + "Ab3-_x" * 7  # the shape of token_urlsafe(32)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"GET /?token={SECRET} HTTP/1.1", "GET /?token=*** HTTP/1.1"),
        (
            f"/studio/browse?path=a.md&token={SECRET}&ws=x",
            "/studio/browse?path=a.md&token=***&ws=x",
        ),
        ("/?token=not-reme-shaped", "/?token=***"),
        ("/?TOKEN=abc&access_token=def", "/?TOKEN=***&access_token=***"),
        (f"token {SECRET} was revoked", "token reme_*** was revoked"),
        ("Authorization: Bearer abc.def-ghi.jkl-mno", "Authorization: Bearer ***"),
        ("no bearer token was sent", "no bearer token was sent"),
        ("cookie reme_studio_2333 set", "cookie reme_studio_2333 set"),
        ("reme_core.server started", "reme_core.server started"),
    ],
)
def test_mask_hides_tokens_and_nothing_else(line: str, expected: str) -> None:
    assert log_mask.mask(line) == expected
    assert log_mask.mask(expected) == expected  # masking twice changes nothing


def test_an_access_record_is_masked_and_still_formats() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", f"/?token={SECRET}", "1.1", 303),
        None,
    )
    assert log_mask.TokenMask().filter(record) is True
    line = AccessFormatter(use_colors=False).format(record)
    assert SECRET not in line
    assert '"GET /?token=*** HTTP/1.1" 303' in line


@pytest.mark.parametrize(
    ("msg", "args"),
    [
        ("refused /?token=%s", (SECRET,)),
        ("refused /?token=%s", ("short-value",)),
        ("refused %s", (f"/?ws=a&token={SECRET}",)),
        (f"refused /?token={SECRET}", ()),
    ],
)
def test_a_placeholder_after_token_keeps_formatting(msg: str, args: tuple) -> None:
    record = logging.LogRecord("reme.server", logging.WARNING, __file__, 1, msg, args, None)
    log_mask.TokenMask().filter(record)
    assert record.getMessage().startswith("refused /?")
    assert record.getMessage().endswith("token=***")


def test_a_traceback_and_mapping_args_are_masked() -> None:
    try:
        raise ValueError(f"bad login /?token={SECRET}")
    except ValueError:
        record = logging.getLogger("reme.server").makeRecord(
            "reme.server", logging.ERROR, __file__, 1, "%(url)s", None, sys.exc_info()
        )
    record.args = {"url": f"/?token={SECRET}"}
    log_mask.TokenMask().filter(record)
    assert SECRET not in logging.Formatter().format(record)


def test_a_served_login_url_leaves_no_token_in_the_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = copy_example(tmp_path / "ws")
    settings = load_settings(
        overrides=[f"workspace={workspace}", "server.port=0"], env=KEYWORD_ONLY_ENV
    )
    server = Server(
        settings, plugins=plugins(), echo=lambda _: None, log_level="info", with_mcp=False
    )
    access: list[logging.LogRecord] = []
    thread = threading.Thread(target=server.run)
    caplog.set_level(logging.INFO)
    thread.start()
    try:
        assert server.ready.wait(30) and server.url is not None
        grab = _Grab(access)
        logging.getLogger("uvicorn.access").addHandler(grab)
        try:
            secret = (workspace / STATE_DIR / TOKEN_FILE).read_text(encoding="utf-8").strip()
            with httpx.Client(base_url=server.url, timeout=30) as http:
                assert http.get(f"/?token={secret}", follow_redirects=False).status_code == 303
            logging.getLogger("reme.server.probe").warning("refused /?token=%s", secret)
        finally:
            logging.getLogger("uvicorn.access").removeHandler(grab)
    finally:
        server.stop()
        thread.join(30)
    lines = [AccessFormatter(use_colors=False).format(r) for r in access]
    assert any('"GET /?token=*** HTTP/1.1" 303' in line for line in lines), lines
    assert not any(secret in line for line in lines)
    probe = [r.getMessage() for r in caplog.records if r.name == "reme.server.probe"]
    assert probe == ["refused /?token=***"]
    assert secret not in caplog.text


class _Grab(logging.Handler):
    def __init__(self, into: list[logging.LogRecord]):
        super().__init__()
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record)
