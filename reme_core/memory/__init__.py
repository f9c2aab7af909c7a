"""Memory records: personal (about a user), procedural (task experience) and tool guidance.

Each record is a Markdown note under the digest (see ``layout``), so it is readable, searchable,
offered to dream and kept in version history; ``MemoryApi`` is the way to read and change them.
"""

from reme_core.memory import models
from reme_core.memory.api import MemoryApi
from reme_core.memory.models import *  # noqa: F403  (the shapes, named once in models.__all__)

__all__ = ["MemoryApi"]
__all__ += models.__all__
