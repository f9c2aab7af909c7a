"""``lifecycle``: when notes stop being current without anyone writing ``expires:`` in them.

``lifecycle.expire`` maps a folder to a duration (``{"sessions/": 90d, "tool_results/": 3d}``):
the scheduler's ``expire`` job (``server.schedule.expire``) archives a note of that folder once
the duration has passed since it was created (its ``created`` or ``date``, else the file's
modification time). A note's own ``expires:`` wins over its folder's policy. Empty by default:
nothing expires unless a note or this config says so.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reme_core.search.expiry import parse_duration


class LifecycleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    expire: dict[str, str] = Field(default_factory=dict)
    """Folder (``sessions/``) -> duration (``90d``, ``12w``) after which its notes are archived."""

    @field_validator("expire")
    @classmethod
    def _folders_and_durations(cls, policy: dict[str, str]) -> dict[str, str]:
        for folder, duration in policy.items():
            parts = folder.rstrip("/").split("/")
            if (
                not folder.endswith("/")
                or folder.startswith("/")
                or any(p in ("", ".", "..") for p in parts)
            ):
                raise ValueError(
                    f"{folder!r} is not a workspace folder: write it relative, ending in '/', "
                    "such as 'sessions/'"
                )
            parse_duration(duration, where=folder)
        return policy
