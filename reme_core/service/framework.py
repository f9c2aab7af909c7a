"""The shape of an operation: a name, a pydantic input model, a handler over an open ``Reme``
and the profile it needs; and ``plain``, which turns what a handler returns into JSON-ready data.

The operation families (``note_ops``, ``history_ops``, ``pipeline_ops``, ``memory_ops``,
``review_ops``) are built from these; ``table.OPERATIONS`` lists them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from reme_core.runtime import Reme
from reme_core.service.profiles import Profile


class Input(BaseModel):
    """Operation inputs: unknown fields are an error (``allowed_paths`` included: the server
    owns confinement, so a caller that sends it is refused rather than ignored)."""

    model_config = ConfigDict(extra="forbid")

    def resolved(self, reme: Reme) -> Any:
        """What the handler is given for this input on ``reme``: the input itself, unless an
        input resolves the workspace's defaults first (search: the configured statuses) so
        that its handler can be the runtime's own method, not an adapter in between."""
        return self


class EmptyInput(Input):
    pass


@dataclass(frozen=True)
class Operation:
    name: str
    profile: Profile
    summary: str
    input_model: type[Input]
    handler: Callable[[Reme, Any], Any]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    def call(self, reme: Reme, payload: dict[str, Any] | Input) -> Any:
        """Validate ``payload`` and run the handler; returns JSON-ready data."""
        given = (
            payload
            if isinstance(payload, self.input_model)
            else self.input_model.model_validate(payload)
        )
        return plain(self.handler(reme, given.resolved(reme)))


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: pydantic models dumped, lists and dicts walked."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
