"""The commands plugins add, by name and one-line help, remembered between runs for help screens.

``reme --help`` and ``reme bench --help`` list plugin commands, but finding them means importing
every plugin module (pydantic models, numpy, the plugins' own imports: about a second). So the
listing is written the first time a help screen needs it and read back while its stamp holds:
the installed distributions on ``sys.path`` past the script's folder (name and modification time
of each ``*.dist-info``, ``*.egg-info`` and ``.pth``), REME_BLOCK_PLUGINS and REME_LOAD_PLUGINS,
reme's version, and the size and modification time of every ``.py`` file in the packages the
plugins live in (an editable install changes without a new version). Only help screens read it:
running a plugin command, or any command not in the core table, loads the plugins themselves.

The file lives in ``$XDG_CACHE_HOME/reme`` (default ``~/.cache/reme``), one per Python prefix;
when that folder cannot be written, every help screen loads the plugins, as before.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from reme_core import __version__

Listing = dict[str, dict[str, str]]
"""Parent group ("" for ``reme`` itself) -> command name -> the first sentence of its help."""

FORMAT = 1
INSTALL_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".pth")
PLUGIN_ENV = ("REME_BLOCK_PLUGINS", "REME_LOAD_PLUGINS")


def cache_file() -> Path | None:
    """Where the listing is remembered; None when there is no home folder to put it in."""
    try:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    except RuntimeError:  # no HOME and no password entry
        return None
    prefix = hashlib.sha256(sys.prefix.encode()).hexdigest()[:12]
    return Path(base) / "reme" / f"plugin-commands-{prefix}.json"


def read_listing() -> Listing | None:
    """The remembered listing, or None when there is none or its stamp no longer holds."""
    path = cache_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path else None
        if not data or data["format"] != FORMAT or data["stamp"] != stamp(data["packages"]):
            return None
        listing = data["listing"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    well_formed = isinstance(listing, dict) and all(
        isinstance(lines, dict) and all(isinstance(v, str) for v in lines.values())
        for lines in listing.values()
    )
    return listing if well_formed else None


def write_listing(listing: Listing, packages: Iterable[str]) -> None:
    """Remember ``listing``; ``packages`` are the top-level packages the plugins live in."""
    path = cache_file()
    if path is None:
        return
    names = sorted(set(packages))
    data = {"format": FORMAT, "stamp": stamp(names), "packages": names, "listing": listing}
    scratch = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        scratch.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(scratch, path)  # a concurrent reader sees the old file or the new one
    except OSError:
        scratch.unlink(missing_ok=True)


def stamp(packages: Iterable[str]) -> str:
    """A digest of everything the listing depends on (see the module docstring)."""
    digest = hashlib.sha256(f"{FORMAT} {__version__}".encode())
    for var in PLUGIN_ENV:
        digest.update(f"\0{var}={os.environ.get(var)}".encode())
    for line in _installed():
        digest.update(f"\0{line}".encode())
    for package in packages:
        digest.update(f"\0package {package}".encode())
        for line in _sources(package):
            digest.update(f"\0{line}".encode())
    return digest.hexdigest()


def _installed() -> Iterator[str]:
    # What pip changes on install, upgrade or uninstall, without reading any metadata file
    # (importlib.metadata parses every distribution's: tens of milliseconds). sys.path[0] is
    # left out: it is the script's folder or the current one, which changes with how reme was
    # started (the console script, python -c), not with what is installed.
    for entry in sys.path[1:]:
        try:
            found = sorted(os.scandir(entry or "."), key=lambda e: e.name)
        except OSError:
            continue
        for item in found:
            if item.name.endswith(INSTALL_SUFFIXES):
                yield f"{entry} {item.name} {_stat(item.path)}"


def _sources(package: str) -> Iterator[str]:
    try:
        spec = importlib.util.find_spec(package)  # top-level names: finds, imports nothing
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        yield "missing"
        return
    for folder in spec.submodule_search_locations or []:
        for parent, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(parent, name)
                    yield f"{path} {_stat(path)}"
    if spec.origin and not spec.submodule_search_locations:
        yield f"{spec.origin} {_stat(spec.origin)}"


def _stat(path: str) -> str:
    try:
        found = os.stat(path)
    except OSError:
        return "gone"
    return f"{found.st_mtime_ns} {found.st_size}"
