"""``reme-hermes install | uninstall | status``: put the provider where Hermes finds it.

``install`` copies the plugin folder to ``$HERMES_HOME/plugins/reme/``, writes the non-secret
settings given (``--mode``, ``--url``, ``--workspace``) to ``$HERMES_HOME/reme.json`` and sets
``memory.provider: reme`` in Hermes' ``config.yaml`` with Hermes' own config writer (when run
from Hermes' environment; otherwise it prints the ``hermes config set`` command). Every change
is printed. The token is never written by this command: set ``REME_TOKEN`` in
``$HERMES_HOME/.env`` or the environment.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from pydantic import ValidationError

from reme_hermes.settings import (
    CONFIG_FILE,
    HermesSettings,
    SettingsError,
    load_settings,
    write_settings,
)

PLUGIN_NAME = "reme"
PLUGIN_FILES = ("__init__.py", "plugin.yaml")
PLUGIN_SOURCE = Path(__file__).resolve().parent / "hermes_plugin"
"""Read as files, never imported here: importing it would load the provider."""


def hermes_home(given: str | None) -> Path:
    return Path(given or os.environ.get("HERMES_HOME") or Path.home() / ".hermes").expanduser()


def _set_provider(value: str) -> str:
    """Set ``memory.provider`` through Hermes' own writer; the line to print."""
    try:
        from hermes_cli.config import set_config_value
    except ImportError:
        return "run: hermes config set memory.provider " + (value or "''")
    set_config_value("memory.provider", value)
    return f"config.yaml: memory.provider = {value or '(none)'}"


def install(home: Path, values: dict[str, str]) -> list[str]:
    # Settings first: a bad reme.json or value stops the install before anything changes.
    current = load_settings(home, environ={}).public()
    merged = HermesSettings.model_validate({**current, **values}) if values else None
    changes: list[str] = []
    target = home / "plugins" / PLUGIN_NAME
    target.mkdir(parents=True, exist_ok=True)
    for name in PLUGIN_FILES:
        data = (PLUGIN_SOURCE / name).read_bytes()
        path = target / name
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
            changes.append(f"wrote {path}")
    if merged is not None and merged.public() != current:
        path = write_settings(home, merged.public())
        changes.append(f"wrote {path}: {json.dumps(values)}")
    changes.append(_set_provider(PLUGIN_NAME))
    return changes


def uninstall(home: Path) -> list[str]:
    changes: list[str] = []
    target = home / "plugins" / PLUGIN_NAME
    if target.is_dir():
        shutil.rmtree(target)
        changes.append(f"removed {target}")
    changes.append(_set_provider(""))
    changes.append(f"kept {home / CONFIG_FILE} and {home / 'reme'} (delete them by hand)")
    return changes


def _token_in_env_file(home: Path) -> str | None:
    """Whether Hermes' ``.env`` (which Hermes loads, and this command does not) sets REME_TOKEN."""
    try:
        lines = (home / ".env").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    found = any(line.strip().startswith("REME_TOKEN=") for line in lines)
    return "set in .env" if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reme-hermes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hermes-home", help="default: $HERMES_HOME, else ~/.hermes")
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("install", help="install the provider into Hermes")
    add.add_argument("--mode", choices=["http", "embedded"])
    add.add_argument("--url", help="http mode: the reme server (default http://127.0.0.1:2333)")
    add.add_argument("--workspace", help="the workspace folder (embedded mode: required)")
    sub.add_parser("uninstall", help="remove the plugin folder and unset memory.provider")
    sub.add_parser("status", help="print the settings the provider would use, as JSON")
    args = parser.parse_args(argv)
    home = hermes_home(args.hermes_home)
    os.environ["HERMES_HOME"] = str(home)  # Hermes' own config writer reads it
    try:
        if args.command == "install":
            values = {k: getattr(args, k) for k in ("mode", "url", "workspace")}
            if values["workspace"]:
                values["workspace"] = str(Path(values["workspace"]).expanduser().resolve())
            lines = install(home, {k: v for k, v in values.items() if v})
        elif args.command == "uninstall":
            lines = uninstall(home)
        else:
            settings = load_settings(home)
            status = {
                **settings.public(),
                "token": "set" if settings.token else _token_in_env_file(home),
                "installed": (home / "plugins" / PLUGIN_NAME / "__init__.py").is_file(),
                "hermes_home": str(home),
            }
            lines = [json.dumps(status, indent=2)]
    except (SettingsError, ValidationError, OSError) as exc:
        print(f"reme-hermes: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
