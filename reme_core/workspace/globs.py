"""Glob patterns over workspace paths; the definition lives in ``reme_core.schema.globs``, where
the search filters validate their ``paths`` (schema sits below workspace)."""

from reme_core.schema.globs import Glob, InvalidGlobError, check_glob, compile_glob, is_glob

__all__ = ["Glob", "InvalidGlobError", "check_glob", "compile_glob", "is_glob"]
