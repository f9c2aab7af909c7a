"""Pipelines: named lists of registered steps, chosen by config and run by ``reme run``."""
