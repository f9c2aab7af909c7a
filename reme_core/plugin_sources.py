"""Where an installed distribution came from, and the requirement line that installs it again.

``name==version`` only resolves for a release on an index. A distribution installed from a folder
(editable or not), a VCS URL or an archive records that in its ``direct_url.json`` (PEP 610), as
``pip freeze`` reads it; the requirement then names that source (``name @ file:///path``,
``name @ git+https://...@<commit>``), and the source's git revision, when it is a checkout, goes
into benchmark manifests so a changed plugin is a difference, not a note.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from pydantic import BaseModel

SourceKind = Literal["index", "path", "vcs", "archive"]

NOT_CODE = ("results", "tests", "*.md")
"""What a folder's identity leaves out: committed benchmark results (the plugin's output:
committing them must not make the runs they came from look like another revision's), its tests
and its Markdown (neither changes what the plugin computes)."""


class PluginSource(BaseModel):
    """How one distribution was installed."""

    kind: SourceKind = "index"
    url: str | None = None
    """The folder, VCS or archive URL (None for an index install)."""
    editable: bool = False
    revision: str | None = None
    """The commit: from pip's record for a VCS install; for a local folder in a git checkout,
    the last commit that changed that folder's code (``NOT_CODE`` aside) (so commits
    elsewhere in the repository leave it alone); None when it is not a checkout."""
    dirty: bool | None = None
    """For a local checkout: tracked files differ from ``revision``."""
    tree: str | None = None
    """For a local checkout: a hash of the folder's committed code (``NOT_CODE`` aside),
    the same in every clone and after a rebase, where commit ids are not."""

    def requirement(self, name: str, version: str | None) -> str:
        """A line pip installs the same distribution from."""
        if self.kind == "vcs" and self.url:
            return f"{name} @ {self.url}" + (f"@{self.revision}" if self.revision else "")
        if self.kind in ("path", "archive") and self.url:
            return f"{name} @ {self.url}"
        return f"{name}=={version}" if version else name


def source_of(dist: Any) -> PluginSource:
    """The source recorded for ``dist`` (an importlib.metadata Distribution or pluggy's facade)."""
    try:
        raw = dist.read_text("direct_url.json")
    except (OSError, AttributeError):
        raw = None
    if not raw:
        return PluginSource()
    try:
        record = json.loads(raw)
    except ValueError:
        return PluginSource()
    url = record.get("url")
    if not isinstance(url, str):
        return PluginSource()
    if "vcs_info" in record:
        info = record["vcs_info"] or {}
        return PluginSource(
            kind="vcs", url=f"{info.get('vcs', 'git')}+{url}", revision=info.get("commit_id")
        )
    if "dir_info" in record:
        editable = bool((record["dir_info"] or {}).get("editable"))
        folder = _local_folder(url)
        revision, dirty, tree = _checkout_state(folder) if folder is not None else (None,) * 3
        return PluginSource(
            kind="path", url=url, editable=editable, revision=revision, dirty=dirty, tree=tree
        )
    return PluginSource(kind="archive", url=url)


def _local_folder(url: str) -> Path | None:
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def _checkout_state(folder: Path) -> tuple[str | None, bool | None, str | None]:
    """The git revision, dirty flag and content hash of ``folder``'s checkout (of the folder's
    own files)."""
    if not folder.is_dir():
        return None, None, None
    nested = _nested_distributions(folder)
    excluded = [*NOT_CODE, *nested]
    files = ["--", ".", *(f":(exclude){pattern}" for pattern in excluded)]
    revision = _git(folder, "log", "-1", "--format=%H", *files)
    if not revision:
        return None, None, None
    status = _git(folder, "status", "--porcelain", "--untracked-files=no", *files)
    return revision, bool(status), _tree_hash(folder, nested)


def _nested_distributions(folder: Path) -> list[str]:
    """Sub-folders holding a distribution of their own (a ``pyproject.toml`` below the top):
    reme's checkout holds its plugins (plugins/lme, ...), whose code and committed results are
    theirs, so a commit there must not make reme look like another revision."""
    listing = _git(folder, "ls-files", "--", "*/pyproject.toml") or ""
    return sorted({line.rsplit("/", 1)[0] for line in listing.splitlines() if "/" in line})


def _tree_hash(folder: Path, nested: Sequence[str] = ()) -> str | None:
    """sha256 of the folder's files at HEAD (mode, object id, path), ``NOT_CODE`` and nested
    distributions left out: equal content gives an equal hash whatever the commit."""
    listing = _git(folder, "ls-tree", "-r", "HEAD", ".")
    if listing is None:
        return None
    kept = [
        line
        for line in listing.splitlines()
        if not _not_code(path := line.split("\t", 1)[-1])
        and not any(path.startswith(f"{prefix}/") for prefix in nested)
    ]
    return hashlib.sha256("\n".join(kept).encode()).hexdigest()


def _not_code(path: str) -> bool:
    """Whether ``path`` (relative to the folder) matches ``NOT_CODE`` as git's pathspecs do."""
    top = path.split("/", 1)[0]
    return top in NOT_CODE or any(fnmatch.fnmatchcase(path, p) for p in NOT_CODE if "*" in p)


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None
