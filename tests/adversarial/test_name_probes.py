"""Hostile note names against a real `reme serve` (issue 20, defects 3-5).

Control, tab, newline, bidi, zero-width and lone-surrogate names and names over NAME_MAX are
refused with a 4xx by write and move and change nothing; names of 242-255 bytes (84 CJK
characters) are written and moved, never a 500; a non-UTF-8 name made on disk leaves list,
status, the studio tree and reindex answering. The probes are tests/adversarial/families.py's,
which `benchmarks/adversarial.py` reports.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.adversarial import families as F
from tests.adversarial import probes as P


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[P.Target]:
    with P.served(tmp_path_factory.mktemp("name-probes")) as served:
        yield served


def test_the_family_counts_an_accepted_bad_name_as_a_failure() -> None:
    # Guards the suite itself: a refused-expected probe answered 200 or 500 is a failure.
    family = F.Family("self-check")
    family.check("accepted", 200, "{}", [], refused=True)
    family.check("crashed", 500, "", [])
    family.check("leaked", 200, "x canary-7 y", ["canary-7"])
    assert (family.probes, family.broken, family.leaked, len(family.failures)) == (3, 1, 1, 3)


def test_bad_names_are_refused_over_http_and_change_nothing(target: P.Target) -> None:
    table = [p for p in F.name_probes() if p.expect == "refused"]
    assert len(table) == 2 * len(F.bad_names())
    outcomes = P.run_http(target, table)
    assert P.failures(outcomes) == []
    assert all(o.status == 422 for o in outcomes if o.probe.op == "write")
    assert not (target.workspace / "digest" / "wiki" / "new\nline.md").exists()


def test_names_up_to_255_bytes_are_written_and_moved(target: P.Target) -> None:
    table = [p for p in F.name_probes() if p.expect == "harmless"]
    outcomes = P.run_http(target, table)
    assert P.failures(outcomes) == []
    assert all(o.status == 200 for o in outcomes), [(o.probe.label, o.status) for o in outcomes]
    for _, path in F.long_names():
        assert (target.workspace / path).is_file()
        assert target.post("delete", {"path": path}).status_code == 200


@pytest.mark.slow
def test_names_over_mcp(target: P.Target) -> None:
    family = F.Family("names over MCP")
    sendable = [p for p in F.name_probes() if p.label != "lone surrogate"]
    F._from_outcomes(family, "mcp", P.run_mcp(target, sendable))
    for _, path in F.long_names():
        target.post("delete", {"path": path})
    assert family.failures == []


def test_a_non_utf8_name_on_disk_breaks_no_surface(target: P.Target) -> None:
    # Last in the module: it leaves the badly named file in the workspace.
    family = F.non_utf8_family(target)
    assert family.failures == [] and family.probes >= 10
