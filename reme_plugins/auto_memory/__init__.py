"""The auto_memory pipeline."""
