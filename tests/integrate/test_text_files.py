"""TomlFile and EnvFile: reme's keys set and taken out as text, everything else kept as it was."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from reme_core.errors import ConfigError
from reme_core.integrate.config_files import MISSING, Op
from reme_core.integrate.text_files import EnvFile, TomlFile, load_config, toml_value

TABLE = ("mcp_servers", "reme")
ENTRY = {"url": "http://127.0.0.1:2333/mcp", "bearer_token_env_var": "REME_TOKEN"}


def edited(tmp_path: Path, text: str, *ops: Op) -> TomlFile:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    file = TomlFile.load(path)
    for op in ops:
        file.apply(Op(path, op.keys, op.value))
    return file


def test_a_table_is_added_at_the_end_and_a_key_before_the_first_table(tmp_path: Path):
    text = 'model = "o3"  # no newline at the end\n[tui]\nnotifications = true'
    file = edited(
        tmp_path, text, Op(Path(), TABLE, ENTRY), Op(Path(), ("notify",), ["python3", "n.py"])
    )
    assert file.render().decode() == (
        'model = "o3"  # no newline at the end\n'
        'notify = ["python3", "n.py"]\n'
        "[tui]\nnotifications = true\n\n"
        "[mcp_servers.reme]\n"
        'url = "http://127.0.0.1:2333/mcp"\n'
        'bearer_token_env_var = "REME_TOKEN"\n'
    )
    assert [c.key for c in file.changes] == ["mcp_servers.reme", "notify"]


def test_an_existing_table_is_replaced_where_it_is_comments_around_it_kept(tmp_path: Path):
    text = (
        "# top\n"
        '[mcp_servers."reme"]  # mine\n'
        'url = "http://old/mcp"\n'
        "enabled = false\n"
        "\n"
        "# about docs\n"
        "[mcp_servers.docs]\n"
        'command = "docs"\n'
    )
    file = edited(tmp_path, text, Op(Path(), TABLE, ENTRY))
    assert file.render().decode() == (
        "# top\n"
        "[mcp_servers.reme]\n"
        'url = "http://127.0.0.1:2333/mcp"\n'
        'bearer_token_env_var = "REME_TOKEN"\n'
        "\n"
        "# about docs\n"
        "[mcp_servers.docs]\n"
        'command = "docs"\n'
    )
    assert file.changes[0].old == {"url": "http://old/mcp", "enabled": False}
    # Undo puts the old table back; from nothing, it takes the table out.
    file.undo(Op(file.path, TABLE, ENTRY), {"url": "http://old/mcp", "enabled": False})
    assert tomllib.loads(file.render().decode())["mcp_servers"]["reme"]["enabled"] is False
    file.undo(Op(file.path, TABLE, ENTRY), MISSING)
    assert tomllib.loads(file.render().decode())["mcp_servers"] == {"docs": {"command": "docs"}}


def test_a_multi_line_value_is_replaced_whole(tmp_path: Path):
    text = 'notify = [\n  "a",  # first\n  "b",\n]\nmodel = "x"\n'
    file = edited(tmp_path, text, Op(Path(), ("notify",), ["c"]))
    assert file.render().decode() == 'notify = ["c"]\nmodel = "x"\n'


def test_a_sub_table_of_the_entry_is_refused(tmp_path: Path):
    text = '[mcp_servers.reme]\nurl = "u"\n[mcp_servers.reme.env]\nA = "1"\n'
    with pytest.raises(ConfigError, match=r"could not set mcp_servers\.reme"):
        edited(tmp_path, text, Op(Path(), TABLE, ENTRY))


@pytest.mark.parametrize(
    "text", ['mcp_servers = { reme = { url = "u" } }\n', '[mcp_servers]\nreme.url = "u"\n']
)
def test_inline_or_dotted_forms_are_refused(tmp_path: Path, text: str):
    with pytest.raises(ConfigError, match="in a form reme does not edit"):
        edited(tmp_path, text, Op(Path(), TABLE, ENTRY))


def test_values_are_written_as_toml():
    value = {"a b": ['q"uote', "ü\n"], "n": 3, "ok": True, "t": {}}
    assert tomllib.loads(f"x = {toml_value(value)}\n")["x"] == value


def test_env_file_sets_and_takes_out_one_line(tmp_path: Path):
    path = tmp_path / ".env"
    path.write_text("# mine\nexport OTHER='1'\nREME_TOKEN=old", encoding="utf-8")
    file = load_config(path)
    assert isinstance(file, EnvFile) and file.get(("OTHER",)) == "1"
    file.apply(Op(path, ("REME_TOKEN",), "new"))
    assert file.render().decode() == "# mine\nexport OTHER='1'\nREME_TOKEN=new\n"
    assert file.changes[0].old == "old"
    file.undo(Op(path, ("REME_TOKEN",), "new"), MISSING)
    assert file.render().decode() == "# mine\nexport OTHER='1'\n"


def test_load_config_picks_the_editor_by_name(tmp_path: Path):
    assert type(load_config(tmp_path / "config.toml")).__name__ == "TomlFile"
    assert type(load_config(tmp_path / "settings.json")).__name__ == "JsonFile"
