"""Every operation a caller can perform on a workspace, under one import.

The operations are defined by family (``note_ops``, ``history_ops``, ``pipeline_ops``,
``memory_ops``, ``review_ops``, ``lifecycle_ops`` for forget and expire, ``proactive_ops``) on
the framework in ``framework`` and the token profiles in
``profiles``; ``table`` assembles ``OPERATIONS``. This module re-exports their public names so
the server, MCP, the CLI, plugins and tests import them from one place.
"""

from __future__ import annotations

from reme_core.service.framework import EmptyInput, Input, Operation, plain
from reme_core.service.history_ops import RUN_ID, HistoryInput, RevertInput, RunInput
from reme_core.service.memory_ops import (
    MEMORY_OPERATIONS,
    MemoryAddInput,
    MemoryDeleteInput,
    MemoryIdInput,
    MemoryListInput,
    MemoryRetrieveInput,
    MemoryScopeInput,
    MemorySummarizeInput,
    MemoryUpdateInput,
)
from reme_core.service.note_ops import (
    DeleteInput,
    EditInput,
    FrontmatterInput,
    ListInput,
    MoveInput,
    PathInput,
    ReadInput,
    SearchInput,
    TraverseInput,
    WriteInput,
)
from reme_core.service.pipeline_ops import (
    AutoMemoryCcInput,
    AutoMemoryInput,
    AutoResourceInput,
    DreamInput,
    PipelineRunInput,
)
from reme_core.service.profiles import PROFILE_RANK, Profile, allows
from reme_core.service.review_ops import (
    PROPOSAL_ID,
    REVIEW_OPERATIONS,
    ProposalStatusFilter,
    ProposalVerbName,
    ReviewIdInput,
    ReviewListInput,
    ReviewRejectInput,
    ReviewSelection,
)
from reme_core.service.table import OPERATIONS

__all__ = [
    "MEMORY_OPERATIONS",
    "OPERATIONS",
    "PROFILE_RANK",
    "PROPOSAL_ID",
    "REVIEW_OPERATIONS",
    "RUN_ID",
    "AutoMemoryCcInput",
    "AutoMemoryInput",
    "AutoResourceInput",
    "DeleteInput",
    "DreamInput",
    "EditInput",
    "EmptyInput",
    "FrontmatterInput",
    "HistoryInput",
    "Input",
    "ListInput",
    "MemoryAddInput",
    "MemoryDeleteInput",
    "MemoryIdInput",
    "MemoryListInput",
    "MemoryRetrieveInput",
    "MemoryScopeInput",
    "MemorySummarizeInput",
    "MemoryUpdateInput",
    "MoveInput",
    "Operation",
    "PathInput",
    "PipelineRunInput",
    "Profile",
    "ProposalStatusFilter",
    "ProposalVerbName",
    "ReadInput",
    "RevertInput",
    "ReviewIdInput",
    "ReviewListInput",
    "ReviewRejectInput",
    "ReviewSelection",
    "RunInput",
    "SearchInput",
    "TraverseInput",
    "WriteInput",
    "allows",
    "plain",
]
