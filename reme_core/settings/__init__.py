"""Configuration: built-in defaults < YAML file < ``REME_*`` environment < ``--set`` overrides.

``schema`` is every key with its default and checks (``Settings()`` is the built-in defaults),
``layering`` merges the layers (``load_settings``), ``components`` resolves the component
selections once plugins load, and ``redaction`` hides secrets for display. Callers import
from here.
"""

from reme_core.settings.components import (
    COMPONENT_KINDS,
    component_selections,
    resolve_component,
    validate_components,
)
from reme_core.settings.layering import (
    CONFIG_ENV_VAR,
    NON_CONFIG_ENV_VARS,
    load_settings,
    parse_override,
    read_config_file,
)
from reme_core.settings.redaction import SECRET_WORDS, is_secret_key, redacted
from reme_core.settings.schema import (
    ENV_DELIMITER,
    ENV_PREFIX,
    ComponentsConfig,
    ComponentSelection,
    FilesConfig,
    IndexConfig,
    Language,
    MemoryConfig,
    PipelineConfig,
    ReviewMode,
    ScheduleConfig,
    ScheduledPipeline,
    SearchConfig,
    ServerConfig,
    Settings,
)

__all__ = [
    "COMPONENT_KINDS",
    "CONFIG_ENV_VAR",
    "ENV_DELIMITER",
    "ENV_PREFIX",
    "NON_CONFIG_ENV_VARS",
    "SECRET_WORDS",
    "ComponentSelection",
    "ComponentsConfig",
    "FilesConfig",
    "IndexConfig",
    "Language",
    "MemoryConfig",
    "PipelineConfig",
    "ReviewMode",
    "ScheduleConfig",
    "ScheduledPipeline",
    "SearchConfig",
    "ServerConfig",
    "Settings",
    "component_selections",
    "is_secret_key",
    "load_settings",
    "parse_override",
    "read_config_file",
    "redacted",
    "resolve_component",
    "validate_components",
]
