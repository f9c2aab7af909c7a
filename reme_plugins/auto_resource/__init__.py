"""The auto_resource pipeline."""
