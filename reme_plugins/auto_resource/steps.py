"""The auto_resource steps (being written)."""
