"""Host headers, ``?token=`` logins, /docs and the server's log against a real `reme serve`
(issue 20, defects 2, 7, 8 and 12), with the server's stdout and stderr kept in a file.

A malformed Host (userinfo, a path, a space, a comma) is refused whole; a URL token never logs
in from an image or another site and never swaps a live session without the confirmed POST;
/docs names no outside host; no token reaches the log. The probes are
tests/adversarial/families.py's, which `benchmarks/adversarial.py` reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adversarial import families_web as W
from tests.adversarial import probes as P


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("host-log") / "server.log"


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory, log: Path) -> Iterator[P.Target]:
    with P.served(tmp_path_factory.mktemp("host-probes"), log=log) as served:
        yield served


def test_malformed_host_headers_are_refused(target: P.Target) -> None:
    family = W.host_family(target)
    assert family.failures == []
    assert family.probes == 1 + 2 * len(W.host_values(1))


def test_url_logins_never_come_from_a_subresource_or_swap_a_session(target: P.Target) -> None:
    family = W.login_family(target)
    assert family.failures == [] and family.probes == 8


def test_docs_name_no_outside_host(target: P.Target) -> None:
    assert W.docs_family(target).failures == []


def test_no_token_reaches_the_log(target: P.Target, log: Path) -> None:
    # After the login probes above, and its own URL logins.
    family = W.logs_family(target, log)
    assert family.failures == []
    assert "token=***" in log.read_text(errors="replace")
