"""The one definition of a tag's stored form, shared by every tag index, vector store and check.

A note keeps the spelling its author wrote (``#Project/ReMe``); an index stores and looks tags up
in this form (``project/reme``), so a filter written either way finds the same notes.
"""

from __future__ import annotations


def normalise_tag(tag: object) -> str:
    """The stored form of a tag: no ``#``, no outer ``/`` or whitespace, case-folded."""
    return str(tag).strip().lstrip("#").strip("/").strip().casefold()
