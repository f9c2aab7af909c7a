"""auto_resource: each file in resource/ becomes one resource note, kept in step with the file."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV

from reme_core.cli import cli
from reme_core.components import estimate_tokens
from reme_core.errors import (
    ConfigError,
    NotFoundError,
    PathOutsideWorkspaceError,
    RemeError,
)
from reme_core.pipelines.budget import fit
from reme_core.pipelines.engine import PipelineError
from reme_core.runtime import Reme
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.notes import Note, parse_note
from reme_plugins.auto_resource.split import pack
from tests.fake_llm import TEXT, RecordingLlm, plugins_with, prompt_tokens

DATA = Path(__file__).parent / "data" / "resource"


class FakeLlm(RecordingLlm):
    """Works each answer out from the response model (a replayed script cannot: how many calls a
    resource takes, and of which kind, is what the tests check), numbering them by call."""

    name = "fake_resource_llm"

    def __init__(self, settings: Any = None, context: Any = None):
        super().__init__(settings, context)
        self.fail = 0
        """Calls that raise LlmError before answers resume."""
        self.partial_words = 12

    def respond(self, kind: str, messages: list[dict[str, str]]) -> Any:
        assert kind != TEXT, "auto_resource uses structured output only"
        if self.fail:
            self.fail -= 1
            return {"error": "fake outage"}
        n = len(self.calls)
        if kind == "ResourceSummary":
            return {
                "name": f"Resource summary {n}",
                "description": "What the file holds.",
                "summary": f"Summary number {n}.",
                "key_points": ["first point", "second point"],
            }
        words = " ".join(f"w{n}x{i}" for i in range(self.partial_words))
        return {"summary": words, "key_points": [f"point {n}"]}

    def kinds(self) -> list[str]:
        """Which prompt each call used, told apart by the user message's wording."""
        out = []
        for user in self.prompts():
            if "; this is part" in user:
                out.append("map")
            elif "partial summaries of parts" in user:
                out.append("merge")
            elif "summaries of all of them" in user:
                out.append("reduce")
            else:
                out.append("single")
        return out


def open_workspace(root: Path, *overrides: str, llm: str | None = "fake_resource_llm") -> Reme:
    plugins = plugins_with(FakeLlm)
    settings = [
        "timezone=UTC",
        "pipelines.auto_resource.steps=[{name: auto_resource, settings: {}}]",
        *([f"components.llm={{name: {llm}}}"] if llm else []),
        *overrides,
    ]
    return Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=settings)


@pytest.fixture
def reme(root: Path) -> Iterator[Reme]:
    with open_workspace(root) as opened:
        yield opened


def today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


def read_note(root: Path, path: str) -> Note:
    return parse_note(path, (root / path).read_text(encoding="utf-8"))


def daily_notes(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "daily").rglob("*.md"))


def write(root: Path, rel: str, data: bytes | str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)


def make_pdf(pages: Sequence[str]) -> bytes:
    """A minimal valid PDF with one line of Helvetica text per page (no binary fixture)."""
    count = len(pages)
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids ["
        + " ".join(f"{4 + 2 * i} 0 R" for i in range(count))
        + f"] /Count {count} >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET"
        objects.append(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out + trailer.encode()


# -- each file type ------------------------------------------------------------------------------

FILE_TYPES: list[tuple[str, bytes | str, list[str], list[str]]] = [
    # (file name, content, text the model must see, text it must not see)
    ("notes.md", "# Deploy notes\n\nBlue-green deploys since March.\n", ["Blue-green"], []),
    ("plain.txt", "Backups run nightly at 02:00 UTC.\n", ["nightly at 02:00"], []),
    (
        "config.json",
        '{"service": "larkspur", "replicas": 3, "regions": ["eu", "us"]}',
        ["object with 3 key(s): service, replicas, regions", '"replicas": 3'],
        [],
    ),
    (
        "events.jsonl",
        '{"event": "deploy", "ok": true}\n\n{"event": "rollback", "ok": false}\n',
        ['line 1: {"event": "deploy"', 'line 3: {"event": "rollback"'],
        [],
    ),
    (
        "cities.csv",
        "city,population\nParis,2100000\nLyon,520000\n",
        ["CSV with 2 row(s); columns: city, population", "row 2: city: Lyon; population: 520000"],
        [],
    ),
    (
        "settings.yaml",
        "database:\n  host: db.internal\n  pool: 20\nowner: mira\n",
        ["object with 2 key(s): database, owner", "host: db.internal"],
        [],
    ),
    (
        "page.html",
        "<html><head><title>t</title></head><body><h1>Runbook</h1>"
        "<p>Restart the <b>queue</b> worker first.</p></body></html>",
        ["# Runbook", "Restart the **queue** worker first."],
        ["<p>", "<h1>"],
    ),
    (
        "report.pdf",
        make_pdf(["Quarterly revenue grew 12 percent", "Churn fell to 3 percent"]),
        ["[page 1]\nQuarterly revenue grew 12 percent", "[page 2]\nChurn fell to 3 percent"],
        ["%PDF", "endobj"],
    ),
]


@pytest.mark.parametrize(("name", "content", "seen", "unseen"), FILE_TYPES)
def test_each_file_type_becomes_one_note(
    reme: Reme, root: Path, name: str, content: bytes | str, seen: list[str], unseen: list[str]
):
    write(root, f"resource/{name}", content)
    result = reme.run("auto_resource")
    stem = name.rsplit(".", 1)[0]
    path = f"daily/{today()}/resource-{stem}.md"
    assert result.outputs["notes"] == [
        {"resource": f"resource/{name}", "note": path, "action": "created"}
    ]
    assert result.outputs["changed"] == [path] and result.outputs["skipped"] == []
    assert daily_notes(root) == [path]
    note = read_note(root, path)
    data = (root / "resource" / name).read_bytes()
    assert note.frontmatter["source_resource"] == f"[[resource/{name}]]"
    assert note.frontmatter["resource_hash"] == content_hash(data)
    assert note.name == "Resource summary 1" and note.description == "What the file holds."
    assert f"Source: [[resource/{name}]]" in note.body and "- first point" in note.body
    assert result.verbs == [f"CREATE {path}"]
    llm = reme.llm
    assert isinstance(llm, FakeLlm) and llm.kinds() == ["single"]  # a small file: one call
    prompt = llm.calls[0][1][-1]["content"]
    for text in seen:
        assert text in prompt
    for text in unseen:
        assert text not in prompt
    # The note is indexed before the run returns: searchable at once.
    assert path in {h.path for h in reme.search("Resource summary").hits}


# -- skips ---------------------------------------------------------------------------------------


def test_files_that_cannot_become_notes_are_skipped_with_a_reason(root: Path):
    write(root, "resource/blob.txt", b"abc\x00\x01\x02def")
    write(root, "resource/latin1.txt", "caf\u00e9 cr\u00e8me".encode("latin-1"))
    write(root, "resource/empty.md", "  \n\n")
    write(root, "resource/big.txt", "x" * 2000)
    write(root, "resource/image.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    write(root, "resource/broken.json", '{"a": 1,')
    write(root, "resource/scan.pdf", make_pdf([""]))
    settings = (
        "pipelines.auto_resource.steps=[{name: auto_resource, settings: {max_file_bytes: 1000}}]"
    )
    with open_workspace(root, settings) as reme:
        result = reme.run("auto_resource")
        assert isinstance(reme.llm, FakeLlm) and reme.llm.calls == []
    reasons = {s["path"]: s["reason"] for s in result.outputs["skipped"]}
    assert "looks binary" in reasons["resource/blob.txt"]
    assert "not valid UTF-8" in reasons["resource/latin1.txt"]
    assert "empty" in reasons["resource/empty.md"]
    assert "2000 bytes, over the 1000-byte limit" in reasons["resource/big.txt"]
    assert "the image cannot be decoded" in reasons["resource/image.png"]  # a truncated PNG
    assert "not valid JSON (line 1" in reasons["resource/broken.json"]
    assert "no extractable text" in reasons["resource/scan.pdf"]
    assert len(reasons) == 7
    assert result.outputs["notes"] == [] and result.outputs["changed"] == []
    assert not (root / "daily").exists() or daily_notes(root) == []
    assert result.history is None  # nothing written, nothing recorded


def test_a_file_needing_too_many_parts_is_skipped_before_any_call(root: Path):
    write(root, "resource/long.txt", "\n\n".join(f"paragraph {i} " + "y" * 800 for i in range(20)))
    settings = (
        "pipelines.auto_resource.steps=[{name: auto_resource, "
        "settings: {max_prompt_tokens: 800, max_parts: 3}}]"
    )
    with open_workspace(root, settings) as reme:
        result = reme.run("auto_resource")
        assert isinstance(reme.llm, FakeLlm) and reme.llm.calls == []
    [skip] = result.outputs["skipped"]
    assert skip["path"] == "resource/long.txt" and "over max_parts 3" in skip["reason"]


# -- edits, deletes, renames ---------------------------------------------------------------------


def test_editing_the_file_updates_the_same_note_and_keeps_other_keys(reme: Reme, root: Path):
    write(root, "resource/plan.txt", "Phase one: migrate the queue.\n")
    path = reme.run("auto_resource").outputs["changed"][0]
    reme.files.update_frontmatter(path, {"tags": ["Queue"], "reviewed": True})

    write(root, "resource/plan.txt", "Phase one: migrate the queue.\nPhase two: drop Redis.\n")
    result = reme.run("auto_resource")

    assert result.outputs["notes"] == [
        {"resource": "resource/plan.txt", "note": path, "action": "updated"}
    ]
    assert result.verbs == [f"UPDATE {path}"]
    assert daily_notes(root) == [path]
    note = read_note(root, path)
    assert note.frontmatter["resource_hash"] == content_hash(
        (root / "resource/plan.txt").read_bytes()
    )
    assert note.name == "Resource summary 2" and "Summary number 2." in note.body
    assert "Summary number 1." not in note.body
    assert note.frontmatter["tags"] == ["Queue"] and note.frontmatter["reviewed"] is True
    assert "drop Redis" in reme.llm.calls[-1][1][-1]["content"]  # type: ignore[union-attr]

    again = reme.run("auto_resource")
    assert again.outputs["notes"] == [] and again.outputs["unchanged"] == 1
    assert len(reme.llm.calls) == 2  # type: ignore[union-attr]


def test_deleting_the_file_archives_the_note_with_the_reason(reme: Reme, root: Path):
    write(root, "resource/old.csv", "a,b\n1,2\n")
    path = reme.run("auto_resource").outputs["changed"][0]
    body = read_note(root, path).body
    (root / "resource/old.csv").unlink()

    result = reme.run("auto_resource")
    assert result.outputs["notes"] == [
        {"resource": "resource/old.csv", "note": path, "action": "archived"}
    ]
    assert result.verbs == [f"ARCHIVE {path}"]
    note = read_note(root, path)
    assert note.status == "archived"
    assert note.frontmatter["archived_reason"] == f"source resource/old.csv deleted on {today()}"
    assert note.body == body
    assert reme.run("auto_resource").outputs["notes"] == []  # archived once, not again

    # The file coming back brings the note back, without a model call (same bytes).
    write(root, "resource/old.csv", "a,b\n1,2\n")
    restored = reme.run("auto_resource")
    assert restored.outputs["notes"][0]["action"] == "restored"
    note = read_note(root, path)
    assert note.status == "active" and "archived_reason" not in note.frontmatter
    assert len(reme.llm.calls) == 1  # type: ignore[union-attr]


def test_a_note_archived_by_hand_stays_archived(reme: Reme, root: Path):
    write(root, "resource/keep.txt", "Keep this archived.\n")
    path = reme.run("auto_resource").outputs["changed"][0]
    reme.files.update_frontmatter(path, {"status": "archived", "archived_reason": "outdated"})
    assert reme.run("auto_resource").outputs["unchanged"] == 1
    assert read_note(root, path).status == "archived"


def test_a_renamed_file_repoints_the_same_note(reme: Reme, root: Path):
    write(root, "resource/draft.md", "# Plan\n\nShip in May.\n")
    path = reme.run("auto_resource").outputs["changed"][0]
    (root / "resource/draft.md").rename(root / "resource/final.md")

    result = reme.run("auto_resource")
    assert result.outputs["notes"] == [
        {"resource": "resource/final.md", "note": path, "action": "renamed"}
    ]
    note = read_note(root, path)
    assert note.status == "active"
    assert note.frontmatter["source_resource"] == "[[resource/final.md]]"
    assert "[[resource/final.md]]" in note.body and "draft.md" not in note.body
    assert daily_notes(root) == [path]
    assert len(reme.llm.calls) == 1  # type: ignore[union-attr]


def test_a_hand_edit_during_summarising_is_a_conflict_left_pending(reme: Reme, root: Path):
    write(root, "resource/plan.txt", "v1\n")
    path = reme.run("auto_resource").outputs["changed"][0]
    write(root, "resource/plan.txt", "v2\n")
    llm = reme.llm
    assert isinstance(llm, FakeLlm)
    llm.on_call = lambda _kind: (root / path).write_text(
        (root / path).read_text(encoding="utf-8") + "\nmy own line\n", encoding="utf-8"
    )
    result = reme.run("auto_resource")
    [pending] = result.outputs["pending"]
    assert pending["path"] == "resource/plan.txt" and "changed while" in pending["reason"]
    assert result.outputs["notes"] == []
    assert "my own line" in (root / path).read_text(encoding="utf-8")

    llm.on_call = None
    reme.index()
    retried = reme.run("auto_resource")
    assert retried.outputs["notes"][0]["action"] == "updated"
    assert "my own line" not in (root / path).read_text(encoding="utf-8")  # body regenerated


# -- map-reduce ----------------------------------------------------------------------------------


def big_text(paragraphs: int) -> str:
    return "\n\n".join(f"P{i:03d} " + " ".join(["lorem"] * 90) for i in range(paragraphs))


def test_a_large_file_is_mapped_in_parts_then_reduced_within_the_budget(root: Path):
    budget = 700
    write(root, "resource/manual.txt", big_text(30))
    settings = (
        "pipelines.auto_resource.steps=[{name: auto_resource, "
        f"settings: {{max_prompt_tokens: {budget}}}}}]"
    )
    with open_workspace(root, settings) as reme:
        result = reme.run("auto_resource")
        llm = reme.llm
        assert isinstance(llm, FakeLlm)
    kinds = llm.kinds()
    maps = kinds.count("map")
    assert maps >= 5 and kinds == ["map"] * maps + ["reduce"]  # parts + one reduce
    assert result.usage.calls == maps + 1
    assert all(prompt_tokens(messages) <= budget for _, messages in llm.calls)
    # Every paragraph was read, in exactly one part, and no part holds the whole file.
    map_prompts = [messages[-1]["content"] for _, messages in llm.calls[:maps]]
    for i in range(30):
        assert sum(f"P{i:03d} " in p for p in map_prompts) == 1
    assert all(f"of {maps}" in p for p in map_prompts)
    assert max(p.count("P0") for p in map_prompts) < 30  # no part holds the whole file
    reduce_prompt = llm.calls[-1][1][-1]["content"]
    assert all(f"## [{i}]" in reduce_prompt for i in range(1, maps + 1))
    assert result.outputs["notes"][0]["action"] == "created"


def test_partials_too_large_for_one_prompt_are_merged_in_rounds(root: Path):
    budget = 600
    write(root, "resource/manual.txt", big_text(40))
    settings = (
        "pipelines.auto_resource.steps=[{name: auto_resource, "
        f"settings: {{max_prompt_tokens: {budget}}}}}]"
    )
    with open_workspace(root, settings) as reme:
        llm = reme.llm
        assert isinstance(llm, FakeLlm)
        llm.partial_words = 60  # long partials: they no longer fit one reduce prompt
        result = reme.run("auto_resource")
    kinds = llm.kinds()
    maps, merges = kinds.count("map"), kinds.count("merge")
    assert merges >= 2 and kinds == ["map"] * maps + ["merge"] * merges + ["reduce"]
    assert result.usage.calls == maps + merges + 1
    assert all(prompt_tokens(messages) <= budget for _, messages in llm.calls)
    for name, messages in llm.calls:
        if "partial summaries of parts" in messages[-1]["content"]:
            assert name == "PartSummary" and messages[-1]["content"].count("## [") >= 2
    assert llm.calls[-1][0] == "ResourceSummary"
    assert result.outputs["notes"][0]["action"] == "created"


def test_pack_keeps_order_and_budget_and_cuts_long_lines():
    sections = ["alpha " * 50, "beta", "gamma " * 400, "\u4e2d\u6587" * 300]
    parts = pack(sections, 100)
    assert all(estimate_tokens(p) <= 100 for p in parts)
    joined = "".join(parts).replace("\n", "").replace(" ", "")
    assert joined == "".join(sections).replace(" ", "")
    assert fit("\u4e2d" * 50, 10) == "\u4e2d" * 10
    with pytest.raises(ValueError, match="positive"):
        pack(["x"], 0)


# -- failures and refusals -----------------------------------------------------------------------


def test_a_model_failure_writes_nothing_and_the_file_stays_pending(root: Path):
    script = [
        {"error": "upstream 503"},
        {"name": "Backup policy", "description": "How backups run.", "summary": "Nightly."},
    ]
    (root / "script.json").write_text(json.dumps(script), encoding="utf-8")
    write(root, "resource/policy.txt", "Backups run nightly.\n")
    llm = "components.llm={name: scripted, settings: {path: script.json}}"
    with open_workspace(root, llm, llm=None) as reme:
        first = reme.run("auto_resource")
        [pending] = first.outputs["pending"]
        assert pending["path"] == "resource/policy.txt" and "upstream 503" in pending["reason"]
        assert first.outputs["notes"] == [] and first.history is None
        assert not (root / "daily").exists() or daily_notes(root) == []

        second = reme.run("auto_resource")
    assert second.outputs["pending"] == []
    [done] = second.outputs["notes"]
    assert done["action"] == "created"
    assert read_note(root, done["note"]).name == "Backup policy"


def test_without_a_model_the_step_says_so_and_writes_nothing(root: Path):
    write(root, "resource/a.txt", "text\n")
    with open_workspace(root, llm=None) as reme, pytest.raises(RemeError) as caught:
        reme.run("auto_resource")
    error = caught.value
    assert isinstance(error if isinstance(error, ConfigError) else error.__cause__, ConfigError)
    assert "auto_resource needs a model" in str(error)
    assert not (root / "daily").exists() or daily_notes(root) == []


def test_path_param_handles_one_file_and_refuses_others(reme: Reme, root: Path):
    write(root, "resource/one.txt", "first\n")
    write(root, "resource/two.txt", "second\n")
    result = reme.run("auto_resource", {"path": "resource/one.txt"})
    assert [n["resource"] for n in result.outputs["notes"]] == ["resource/one.txt"]
    (root / "outside.txt").write_text("secret\n")
    for bad, error in [
        ("../outside.txt", PathOutsideWorkspaceError),
        ("resource/../outside.txt", PathOutsideWorkspaceError),
        ("daily/x.md", PathOutsideWorkspaceError),
        ("resource/missing.txt", NotFoundError),
    ]:
        with pytest.raises(PipelineError) as caught:
            reme.run("auto_resource", {"path": bad})
        assert isinstance(caught.value.__cause__, error), bad
    assert len(reme.llm.calls) == 1  # type: ignore[union-attr]

    (root / "resource/one.txt").unlink()
    archived = reme.run("auto_resource", {"path": "resource/one.txt"})
    assert archived.outputs["notes"][0]["action"] == "archived"


def test_reme_run_auto_resource_from_the_cli(root: Path):
    script = [{"name": "Team list", "description": "Who is on call.", "summary": "Two people."}]
    (root / "script.json").write_text(json.dumps(script), encoding="utf-8")
    shutil.copy(DATA / "oncall.csv", root / "resource" / "oncall.csv")
    args = [
        "run",
        "auto_resource",
        "-w",
        str(root),
        "--set",
        "pipelines.auto_resource.steps=[{name: auto_resource}]",
        "--set",
        "components.llm={name: scripted, settings: {path: script.json}}",
        "--json",
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    [done] = data["outputs"]["notes"]
    assert done["resource"] == "resource/oncall.csv" and done["action"] == "created"
    assert data["usage"]["calls"] == 1
    note = read_note(root, done["note"])
    assert note.name == "Team list" and note.frontmatter["resource_type"] == "csv"


def test_notes_follow_the_configured_language(root: Path):
    write(root, "resource/a.txt", "数据库连接池上限为 40。\n")
    with open_workspace(root, "language=zh") as reme:
        path = reme.run("auto_resource").outputs["changed"][0]
        assert isinstance(reme.llm, FakeLlm)
        system = reme.llm.calls[0][1][0]["content"]
    assert "用中文写作" in system
    body = read_note(root, path).body
    assert "## 要点" in body and "来源：[[resource/a.txt]]" in body


def test_a_long_or_multiline_title_is_trimmed_not_rejected(root: Path):
    script = [
        {"name": "Very long title\n" + "x" * 300, "description": "Two\nlines.", "summary": "S"}
    ]
    (root / "script.json").write_text(json.dumps(script), encoding="utf-8")
    write(root, "resource/a.txt", "text\n")
    llm = "components.llm={name: scripted, settings: {path: script.json}}"
    with open_workspace(root, llm, llm=None) as reme:
        path = reme.run("auto_resource").outputs["changed"][0]
    note = read_note(root, path)
    assert note.name.startswith("Very long title xxx") and note.name.endswith("...")
    assert len(note.name) == 120 and note.description == "Two lines."


def test_files_excluded_from_the_index_are_not_sent_to_the_model(root: Path):
    write(root, "resource/private/salaries.csv", "name,pay\nMira,1\n")
    write(root, "resource/public.txt", "Open notes.\n")
    with open_workspace(root, "index.exclude=['resource/private/**']") as reme:
        result = reme.run("auto_resource")
        assert isinstance(reme.llm, FakeLlm)
        prompts = " ".join(m[-1]["content"] for _, m in reme.llm.calls)
    assert [n["resource"] for n in result.outputs["notes"]] == ["resource/public.txt"]
    assert result.outputs["skipped"] == [] and "Mira" not in prompts


# -- agentic mode ----------------------------------------------------------------------------------

AGENTIC = "pipelines.auto_resource.steps=[{name: auto_resource, settings: {mode: agentic}}]"
AGENT_NOTE = (
    "---\nname: Deploy runbook\ndescription: How prod is deployed.\n---\n\n# Deploy\n\nSteps.\n"
)


def agentic_workspace(root: Path, script: list[Any], *overrides: str) -> Reme:
    """auto_resource in agentic mode with the built-in toolloop, driven by a scripted model."""
    plugins = plugins_with()
    script_file = root.parent / "script.json"
    script_file.write_text(json.dumps(script), encoding="utf-8")
    settings = [
        "timezone=UTC",
        AGENTIC,
        f"components.llm={{name: scripted, settings: {{path: {script_file}}}}}",
        "components.agent_wrapper={name: toolloop}",
        *overrides,
    ]
    return Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=settings)


def note_path_for(rel: str) -> str:
    return f"daily/{today()}/resource-{Path(rel).stem}.md"


def test_agentic_mode_writes_the_note_through_confined_tools(root: Path):
    write(
        root, "resource/runbook.md", "# Runbook\n\nDeploy with `make ship` after the tests pass.\n"
    )
    path = note_path_for("resource/runbook.md")
    script = [
        # Refused: the agent may write only its note (not the resource, not elsewhere).
        {"tool": "write", "args": {"path": "resource/runbook.md", "content": "# gone\n"}},
        {"tool": "write", "args": {"path": path, "content": AGENT_NOTE}},
        {"answer": "done"},
    ]
    with agentic_workspace(root, script) as reme:
        out = reme.run("auto_resource", {}).outputs
    assert out["notes"] == [{"resource": "resource/runbook.md", "note": path, "action": "created"}]
    assert "make ship" in (root / "resource/runbook.md").read_text(encoding="utf-8")
    front = read_note(root, path).frontmatter
    assert front["name"] == "Deploy runbook"
    # The provenance keys are the code's, so the next run knows the note is this file's.
    assert front["source_resource"] == "[[resource/runbook.md]]"
    assert front["resource_hash"] == content_hash((root / "resource/runbook.md").read_bytes())
    with agentic_workspace(root, []) as reme:
        assert reme.run("auto_resource", {}).outputs["unchanged"] == 1  # no model call


def test_an_agent_note_without_a_description_is_not_kept(root: Path):
    write(root, "resource/runbook.md", "# Runbook\n\nDeploy with `make ship`.\n")
    path = note_path_for("resource/runbook.md")
    script = [
        {"tool": "write", "args": {"path": path, "content": "---\nname: N\n---\n\nBody.\n"}},
        {"answer": "done"},
    ]
    with agentic_workspace(root, script) as reme:
        out = reme.run("auto_resource", {}).outputs
    assert not (root / path).exists()  # put back as it was: absent
    assert out["notes"] == [] and "one-line description" in out["pending"][0]["reason"]


def test_an_agent_that_writes_nothing_leaves_the_file_pending(root: Path):
    write(root, "resource/runbook.md", "# Runbook\n\nDeploy with `make ship`.\n")
    with agentic_workspace(root, [{"answer": "done"}]) as reme:
        out = reme.run("auto_resource", {}).outputs
    assert daily_notes(root) == [] and "did not write" in out["pending"][0]["reason"]


def test_agentic_mode_needs_an_agent_wrapper(root: Path):
    write(root, "resource/runbook.md", "# Runbook\n")
    with (
        agentic_workspace(root, [], "components.agent_wrapper=null") as reme,
        pytest.raises(ConfigError, match=r"needs components\.agent_wrapper"),
    ):
        reme.run("auto_resource", {})
    assert daily_notes(root) == []
