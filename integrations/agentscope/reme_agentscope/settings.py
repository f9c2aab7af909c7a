"""ReMeLight's constructor arguments as reme settings overrides (``key=value``, as ``reme -c``).

An API key is never written into settings: reme reads keys from an environment variable on every
request (``api_key_env``), so a key passed here is put in this process's environment under a name
of our own and the setting names that variable.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

LLM_KEY_ENV = "REME_AGENTSCOPE_LLM_API_KEY"
EMBEDDING_KEY_ENV = "REME_AGENTSCOPE_EMBEDDING_API_KEY"
MODEL_KEYS = ("model_name", "model")
"""Where ReMe's ``default_as_llm_config`` / ``default_embedding_model_config`` name the model."""


def light_overrides(
    *,
    llm_api_key: str | None,
    llm_base_url: str | None,
    embedding_api_key: str | None,
    embedding_base_url: str | None,
    default_as_llm_config: dict | None,
    default_embedding_model_config: dict | None,
    default_file_store_config: dict | None,
    default_file_watcher_config: dict | None,
    vector_weight: float,
    candidate_multiplier: float,
) -> list[str]:
    """The overrides; ValueError for an argument reme has no place for (nothing is changed)."""
    for name, given in (
        ("default_file_store_config", default_file_store_config),
        ("default_file_watcher_config", default_file_watcher_config),
    ):
        if given:
            raise ValueError(
                f"{name} has no reme equivalent: reme picks its stores in its config "
                "(components.file_store, components.embedding) and indexes the workspace itself; "
                "pass overrides=['components.file_store.name=...'] instead"
            )
    if not 0 <= float(vector_weight) <= 1:
        raise ValueError(f"vector_weight must be in [0, 1], got {vector_weight}")
    if float(candidate_multiplier) < 1:
        raise ValueError(f"candidate_multiplier must be at least 1, got {candidate_multiplier}")
    out = [
        f"search.vector_weight={float(vector_weight)}",
        # reme's multiplier is a whole number: round up, so no fewer candidates are read.
        f"search.candidate_multiplier={math.ceil(float(candidate_multiplier))}",
    ]
    out += _endpoint("llm", llm_base_url, llm_api_key, default_as_llm_config, LLM_KEY_ENV)
    out += _endpoint(
        "embedding",
        embedding_base_url,
        embedding_api_key,
        default_embedding_model_config,
        EMBEDDING_KEY_ENV,
    )
    return out


def _endpoint(
    component: str, base_url: str | None, api_key: str | None, config: dict | None, key_env: str
) -> list[str]:
    """``components.<component>`` as reme's openai backend, when a URL or a model is given."""
    config = dict(config or {})
    model = next((config[k] for k in MODEL_KEYS if config.get(k)), None)
    if base_url is None and model is None:
        if api_key:
            raise ValueError(
                f"{component}_api_key is given without a {component} endpoint: pass "
                f"{component}_base_url and a model name (model_name in the config dict)"
            )
        return []
    if model is None:
        raise ValueError(f"{component}_base_url needs a model name: model_name in the config dict")
    out = [f"components.{component}.name=openai", f"components.{component}.settings.model={model}"]
    if base_url:
        out.append(f"components.{component}.settings.base_url={base_url}")
    if api_key:
        os.environ[key_env] = api_key
        out.append(f"components.{component}.settings.api_key_env={key_env}")
    return out


def load_env_file(path: Path) -> dict[str, Any]:
    """``KEY=VALUE`` lines of a ``.env`` file into the environment (set variables win)."""
    loaded: dict[str, Any] = {}
    if not path.is_file():
        return loaded
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.removeprefix("export ").split("=", 1)
        key, value = key.strip(), value.strip().strip("'\"")
        if key and key not in os.environ:
            os.environ[key] = loaded[key] = value
    return loaded
