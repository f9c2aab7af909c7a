"""Token profiles: what a caller may do.

Profiles nest: ``read`` < ``write`` < ``admin``. A token may call an operation when its profile
is at least the operation's.
"""

from __future__ import annotations

from typing import Literal

Profile = Literal["read", "write", "admin"]
PROFILE_RANK: dict[str, int] = {"read": 0, "write": 1, "admin": 2}


def allows(token_profile: str, needed: str) -> bool:
    """Whether a token of ``token_profile`` may call an operation needing ``needed``."""
    return PROFILE_RANK[token_profile] >= PROFILE_RANK[needed]
