"""The built-in agent wrapper `toolloop` (being written)."""
