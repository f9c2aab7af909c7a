"""The auto_memory steps (being written)."""
