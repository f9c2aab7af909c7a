"""The `auto_tag` step (being written)."""
