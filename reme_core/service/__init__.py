"""The operations layer the server, MCP and the CLI client share.

``profiles`` (read < write < admin) and ``principal`` (who is calling) are what callers are;
``framework`` is what an operation is; ``note_ops``, ``history_ops``, ``pipeline_ops``,
``memory_ops`` and ``review_ops`` define the operation families; ``table`` assembles
``OPERATIONS``; ``operations`` re-exports the public names under one import. Nothing here
imports the server, the studio or the CLI.
"""
