"""The auto_resource pipeline: each file in ``resource/`` becomes one resource note."""
