"""Which loaded plugins took part in a run, and how a recorded plugin set compares with this one.

A plugin distribution took part when it provided a selected component or pipeline step, the
command that ran (``reme bench lme run`` is reme-lme's), or an implementation of a hook that
fired. Every other loaded plugin was a bystander: installed, never asked for anything. A missing
or changed participant can change the figures, so ``reme bench reproduce`` calls it a
difference; a missing or changed bystander cannot, so it is a note.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from reme_core.plugins import Plugins

if TYPE_CHECKING:
    from reme_core.bench.manifest import ComponentPin, Manifest, PluginPin, SearchPipeline


def participants(
    plugins: Plugins,
    components: Iterable[ComponentPin] = (),
    pipeline: SearchPipeline | None = None,
    command: Sequence[str] = (),
) -> set[str]:
    """Normalised names of the distributions that took part in a run of ``command``."""
    names = {c.distribution for c in components if c.distribution}
    if pipeline is not None:
        names |= {s.distribution for s in pipeline.steps if s.distribution}
    names |= set(plugins.fired_distributions())
    provider = command_distribution(plugins, command)
    if provider:
        names.add(provider)
    return {norm(n) for n in names}


def command_distribution(plugins: Plugins, command: Sequence[str]) -> str | None:
    """The distribution whose registered command ``command`` (arguments after ``reme``) runs:
    a top-level command by its name, a nested one (``group="bench"``) by group and name."""
    args = [a for a in command if not a.startswith("-")]
    try:
        registered = plugins.commands
    except Exception:  # a broken plugin's commands must not stop the manifest being recorded
        return None
    for entry in registered:
        name = entry.command.name
        if entry.group is None and args[:1] == [name]:
            return entry.distribution
        if entry.group is not None and args[:2] == [entry.group, name]:
            return entry.distribution
    return None


def mark(pins: Sequence[PluginPin], taking_part: set[str]) -> list[PluginPin]:
    """``pins`` with ``participated`` set from ``taking_part`` (normalised names)."""
    return [
        p.model_copy(update={"participated": norm(p.distribution) in taking_part}) for p in pins
    ]


HOST = "reme"


def diff_plugins(
    recorded: Sequence[PluginPin], current: Sequence[PluginPin]
) -> tuple[list[str], list[str]]:
    """``(differences, notes)`` between two plugin sets: a participant's change is a difference,
    a bystander's a note. A pin recorded before participation was (``participated`` None) counts
    as a participant."""
    old = {norm(p.distribution): p for p in recorded}
    new = {norm(p.distribution): p for p in current}
    differences: list[str] = []
    notes: list[str] = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key), new.get(key)
        took_part = (before is not None and before.participated is not False) or (
            after is not None and after.participated is True
        )
        out = differences if took_part else notes
        role = "" if took_part else ", did not take part"
        if after is None:
            out.append(
                f"plugin {before.distribution}: not installed (recorded {before.version}{role})"
            )
        elif before is None:
            out.append(
                f"plugin {after.distribution} {after.version}: installed, not recorded{role}"
            )
        elif before.version != after.version:
            out.append(f"plugin {after.distribution}: {before.version} -> {after.version}{role}")
        else:
            # The same version from another commit: its code may differ. (Where it lives, the
            # URL, differs between machines and is not compared.)
            old_code, new_code = code_identity(before), code_identity(after)
            if old_code and new_code and old_code != new_code:
                change = f"plugin {after.distribution}: revision {old_code} -> {new_code}{role}"
                if key == HOST:
                    # reme's own commits are a note: what of reme shapes a run (its version,
                    # config defaults, the named config, the steps) is compared on its own, and
                    # holding results to reme's exact tree would fail them all on every commit.
                    notes.append(f"{change} (reme's code; its defaults are compared apart)")
                else:
                    out.append(change)
    return differences, notes


def code_identity(pin: PluginPin) -> str | None:
    """What identifies the plugin's code: its folder's content hash (stable across clones and
    rebases), else the commit; None when neither is known."""
    source = pin.source
    if source is None:
        return None
    identity = source.tree or source.revision
    if identity is None:
        return None
    return identity[:12] + ("+dirty" if source.dirty else "")


def install_line(manifest: Manifest) -> str:
    """``pip install ...`` for the plugins that took part in the recorded run, each from where
    another machine can get it (never a folder of the machine that ran it)."""
    requirements: list[str] = []
    commits: set[str] = set()
    for pin in manifest.plugins:
        if pin.participated is False or not pin.version:
            continue
        if pin.install is not None:
            requirements.append(pin.install.requirement)
            if pin.install.relative and pin.install.commit:
                commits.add(pin.install.commit)
        else:
            requirements.append(_legacy_requirement(pin))
    line = "pip install " + " ".join(shlex.quote(r) for r in requirements)
    if commits:
        line += f" (in a clone of the repository at {', '.join(sorted(c[:12] for c in commits))})"
    return line


def _legacy_requirement(pin: PluginPin) -> str:
    """A pin recorded before install sources were: its VCS URL, else ``name==version`` (a local
    folder or wheel path would not exist elsewhere)."""
    source = pin.source
    if source is not None and source.kind == "vcs" and source.url and "file:" not in source.url:
        return source.requirement(pin.distribution, pin.version)
    return f"{pin.distribution}=={pin.version}"


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
