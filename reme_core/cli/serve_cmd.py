"""Commands of the server issue (being written)."""

COMMANDS: list = []
