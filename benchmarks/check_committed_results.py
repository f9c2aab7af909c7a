"""CI check: the committed benchmark results reproduce in a venv made as the plugin READMEs say.

Makes a fresh venv, installs exactly what the install lines of plugins/lme/README.md,
plugins/beam/README.md and plugins/locomo/README.md tell a user to (the first ``pip install``
line of each, run from the repository root), and runs ``reme bench reproduce RESULT --dry-run`` on every
plugins/*/results/**/result.json. Fails when any result differs there, or records an install
line another machine cannot use (a ``file:`` URL or an absolute path). A result whose dataset is
not on this machine (../shared/data beside the checkout) is reported as skipped.

    python3 benchmarks/check_committed_results.py            # about 2-3 min with a warm pip cache
    python3 benchmarks/check_committed_results.py --venv DIR # reuse (or keep) the venv in DIR
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
READMES = ("plugins/lme/README.md", "plugins/beam/README.md", "plugins/locomo/README.md")
INSTALL_LINE = re.compile(r"^pip install (?P<args>[^#]+?)\s*(#.*)?$")


def readme_install_args(readmes: tuple[str, ...] = READMES) -> list[str]:
    """The arguments of each README's first ``pip install`` line, in order, each once."""
    args: list[str] = []
    for readme in readmes:
        for line in (REPO / readme).read_text(encoding="utf-8").splitlines():
            found = INSTALL_LINE.match(line.strip())
            if found:
                args += [a for a in shlex.split(found["args"]) if a not in args]
                break
        else:
            raise SystemExit(f"error: {readme} has no `pip install` line")
    return args


def unportable(result: Path) -> list[str]:
    """Recorded install lines another machine could not use."""
    manifest = json.loads(result.read_text(encoding="utf-8"))["manifest"]
    bad = []
    for pin in manifest["plugins"]:
        install = pin.get("install") or {}
        requirement = install.get("requirement")
        url = (pin.get("source") or {}).get("url") or ""
        if not requirement:
            bad.append(f"{pin['distribution']}: no install source recorded")
        elif "file:" in requirement or requirement.startswith("/") or "file:" in url:
            bad.append(f"{pin['distribution']}: {requirement or url}")
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="venv folder (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="reme-results-venv-") as scratch:
        env_dir = args.venv or Path(scratch) / "venv"
        if not (env_dir / "bin" / "reme").exists():
            venv.create(env_dir, with_pip=True)
            install = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q"]
            install += readme_install_args()
            print("installing:", " ".join(install[5:]), flush=True)
            subprocess.run(install, cwd=REPO, check=True)
        return check(env_dir / "bin" / "reme")


def check(reme: Path) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REME_", "PYTHON"))}
    failed = 0
    results = sorted(REPO.glob("plugins/*/results/**/result.json"))
    if not results:
        print("error: no committed results found", file=sys.stderr)
        return 1
    for result in results:
        name = result.relative_to(REPO)
        bad = unportable(result)
        for line in bad:
            print(f"{name}: not installable elsewhere: {line}")
        command = json.loads(result.read_text(encoding="utf-8"))["manifest"]["command"]
        datasets = [a for a in command if "/" in a and not a.startswith(("-", "/"))]
        missing = [d for d in datasets if not (REPO / d).exists()]
        if missing:
            print(f"{name}: skipped, dataset not on this machine: {missing[0]}")
            failed += bool(bad)
            continue
        done = subprocess.run(
            [str(reme), "bench", "reproduce", str(result), "--dry-run"],
            cwd=REPO,  # the recorded command names its dataset relative to the checkout
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        ok = done.returncode == 0 and "manifest matches" in done.stdout
        print(f"{name}: {'matches' if ok else 'DIFFERS'}")
        if not ok:
            print(done.stdout + done.stderr)
        failed += bool(bad) or not ok
    print(f"{len(results) - failed} of {len(results)} committed results reproduce here")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
