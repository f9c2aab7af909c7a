"""Where a plugin distribution can be installed from on another machine, for benchmark manifests.

pip's own record (``direct_url.json``, read by ``reme_core.plugin_sources``) names where the
distribution was installed from *here*: a folder of this checkout, a wheel in a temporary build
folder (tox builds one per run). Neither installs anywhere else. A result records instead:

- a distribution from an index: ``name==version``;
- a VCS install: its URL, commit and subdirectory, as pip recorded them;
- a folder, editable or not, inside a git checkout: the checkout's repository URL (``origin``,
  else the project's own URL from its ``pyproject.toml``), ``git rev-parse HEAD`` and the folder
  relative to the repository root: ``reme-lme @ git+URL@REV#subdirectory=plugins/lme``; with no
  URL known, the folder relative to the root (``./plugins/lme``), installable from a clone at
  that commit;
- a wheel or sdist: the project it was built from, found above the archive's path (tox builds in
  ``.tox/``) or above the working directory, recorded as that project's folder; else
  ``name==version``.

Never an absolute local path: the line is printed for someone else to run.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pydantic import BaseModel

from reme_core.plugin_sources import PluginSource

URL_KEYS = ("repository", "source", "source code", "code", "homepage")
"""``[project.urls]`` keys naming the repository, in order of preference."""


class InstallSource(BaseModel):
    """How to install one recorded distribution on another machine."""

    requirement: str
    """The line for ``pip install``: ``name==version``, ``name @ git+URL@REV#subdirectory=...``
    or, with ``relative`` set, a folder relative to the repository root."""
    repository: str | None = None
    """The repository URL as pip takes it (``git+https://...``); None when unknown."""
    commit: str | None = None
    """The checkout's commit (``HEAD``) when it was recorded."""
    subdirectory: str | None = None
    """The distribution's folder relative to the repository root (None: the root)."""
    relative: bool = False
    """``requirement`` is a path relative to a clone of the repository at ``commit``."""


def install_source(name: str, version: str | None, dist: Any = None) -> InstallSource:
    """Where ``name`` (``dist``: its importlib.metadata Distribution, looked up when None) can be
    installed from elsewhere."""
    index = InstallSource(requirement=f"{name}=={version}" if version else name)
    if dist is None:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            return index
    record = _direct_url(dist)
    if record is None:
        # Metadata inside a source tree (``reme.egg-info`` beside its pyproject.toml, found on
        # sys.path from the checkout): that checkout is the source.
        tree = _source_tree(name, dist)
        return (_from_checkout(name, tree) if tree is not None else None) or index
    url = record.get("url")
    if not isinstance(url, str):
        return index
    if "vcs_info" in record:
        return _from_vcs(name, record, url) or index
    local = _local_path(url)
    if local is None:
        # A remote archive (https://.../x.whl) installs from anywhere.
        return InstallSource(requirement=f"{name} @ {url}") if "archive_info" in record else index
    folder = local if "dir_info" in record else _project_above(name, local)
    if folder is None:
        return index
    return _from_checkout(name, folder) or index


def portable_source(source: PluginSource | None, install: InstallSource) -> PluginSource | None:
    """``source`` without the local URL: the repository URL in its place (or none), so a result
    names no folder of the machine that ran it. A built archive keeps no revision: the wheel's
    identity is its version, the commit is only where to rebuild it from."""
    if source is None:
        return None
    url = source.url
    if source.kind == "vcs" and url and not _is_local_url(url.split("+", 1)[-1]):
        return source
    portable = _pip_url(install) if install.repository else None
    if source.kind == "archive":
        return source.model_copy(update={"url": portable, "revision": None, "tree": None})
    return source.model_copy(update={"url": portable})


# -- internals ---------------------------------------------------------------------------------


def _direct_url(dist: Any) -> dict[str, Any] | None:
    try:
        raw = dist.read_text("direct_url.json")
    except (OSError, AttributeError):
        return None
    if not raw:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _source_tree(name: str, dist: Any) -> Path | None:
    path = getattr(dist, "_path", None)
    if not isinstance(path, Path) or path.suffix != ".egg-info":
        return None
    folder = path.parent
    return folder if _project_name(folder / "pyproject.toml") == _norm(name) else None


def _from_vcs(name: str, record: dict[str, Any], url: str) -> InstallSource | None:
    info = record.get("vcs_info") or {}
    if _is_local_url(url):
        # A clone on this machine: install from its repository instead, when it has one.
        folder = _local_path(url)
        return _from_checkout(name, folder) if folder is not None else None
    repository = f"{info.get('vcs', 'git')}+{url}"
    commit = info.get("commit_id")
    sub = record.get("subdirectory") or None
    found = InstallSource(
        requirement="", repository=repository, commit=commit, subdirectory=sub, relative=False
    )
    found.requirement = f"{name} @ {_pip_url(found)}"
    return found


def _from_checkout(name: str, folder: Path) -> InstallSource | None:
    """The repository, commit and subdirectory of ``folder``'s git checkout; None when it is
    not in one."""
    top_text = _git(folder, "rev-parse", "--show-toplevel")
    commit = _git(folder, "rev-parse", "HEAD")
    if not top_text or not commit:
        return None
    top = Path(top_text).resolve()
    try:
        relative = folder.resolve().relative_to(top)
    except ValueError:
        return None
    sub = relative.as_posix() if relative.parts else None
    repository = _repository_url(top)
    found = InstallSource(
        requirement="", repository=repository, commit=commit, subdirectory=sub, relative=False
    )
    if repository:
        found.requirement = f"{name} @ {_pip_url(found)}"
    else:
        found.relative = True
        found.requirement = f"./{sub}" if sub else "."
    return found


def _pip_url(source: InstallSource) -> str:
    url = source.repository or ""
    if source.commit:
        url += f"@{source.commit}"
    if source.subdirectory:
        url += f"#subdirectory={source.subdirectory}"
    return url


def _repository_url(top: Path) -> str | None:
    """``origin``'s URL as pip takes it, else the project's URL from ``pyproject.toml``; None
    when neither names a repository another machine can reach (a local path is not one)."""
    remote = _git(top, "remote", "get-url", "origin")
    if remote:
        url = _vcs_url(remote)
        if url:
            return url
    for url in _project_urls(top / "pyproject.toml"):
        found = _vcs_url(url)
        if found:
            return found
    return None


_SCP = re.compile(r"^(?P<user>[\w.-]+)@(?P<host>[\w.-]+):(?P<path>(?!/).+)$")


def _vcs_url(url: str) -> str | None:
    """``git+`` plus a reachable URL (https, ssh, git; scp-style ``git@host:path`` rewritten);
    None for a local path or a file URL."""
    url = url.strip()
    if url.startswith("git+"):
        url = url[4:]
    scp = _SCP.match(url)
    if scp:
        return f"git+ssh://{scp['user']}@{scp['host']}/{scp['path']}"
    scheme = urlparse(url).scheme
    if scheme in ("https", "http", "ssh", "git"):
        return f"git+{url}"
    return None


def _project_urls(pyproject: Path) -> list[str]:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    urls = (data.get("project") or {}).get("urls") or {}
    if not isinstance(urls, dict):
        return []
    by_key = {str(k).strip().lower(): v for k, v in urls.items() if isinstance(v, str)}
    return [by_key[key] for key in URL_KEYS if key in by_key]


def _project_above(name: str, archive: Path) -> Path | None:
    """The project folder ``archive`` (a wheel or sdist) was built from: the nearest folder
    above it, else above the working directory, whose ``pyproject.toml`` names ``name``."""
    for start in (archive.parent, Path.cwd()):
        for folder in (start, *start.parents):
            if _project_name(folder / "pyproject.toml") == _norm(name):
                return folder
    return None


def _project_name(pyproject: Path) -> str | None:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    found = (data.get("project") or {}).get("name")
    return _norm(found) if isinstance(found, str) else None


def _local_path(url: str) -> Path | None:
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def _is_local_url(url: str) -> bool:
    return urlparse(url).scheme in ("file", "")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
