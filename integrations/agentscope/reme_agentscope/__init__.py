"""reme inside AgentScope agents.

- ``ReMeLight``: the memory manager of ReMe's API (``start``, ``pre_reasoning_hook``,
  ``memory_search`` ...) over ``reme_core.light``; a class inheriting ReMe's switches by import.
- ``RemeLongTermMemory``: an AgentScope middleware giving an agent ``retrieve_from_memory`` and
  ``record_to_memory`` tools and recording each reply, in a workspace or a ``reme serve``.
"""

from reme_agentscope.in_memory import ReMeInMemoryMemory
from reme_agentscope.light import ReMeLight
from reme_agentscope.long_term import RemeLongTermMemory
from reme_agentscope.messages import MessageError
from reme_agentscope.store import EmbeddedStore, HttpStore, StoreError

__all__ = [
    "EmbeddedStore",
    "HttpStore",
    "MessageError",
    "ReMeInMemoryMemory",
    "ReMeLight",
    "RemeLongTermMemory",
    "StoreError",
]
