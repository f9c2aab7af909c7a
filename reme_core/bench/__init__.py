"""Benchmark framework shared by the benchmark plugins (``reme-lme``, ``reme-beam``).

A benchmark plugin's ``run`` command does, in order:

1. ``resolve_config(name, config_dirs=[...], overrides=...)`` -> settings (optionally
   ``with_llm_cache(settings)`` when a model is configured);
2. ``manifest = build_manifest(settings=..., plugins=load_plugins(), datasets=[data_path],
   config_name=name, overrides=...)`` then ``checkpoint(manifest)`` (``reme bench reproduce``
   stops the command there to compare manifests);
3. ``rows = run_items(items, worker_fn, out_dir=..., workers=..., limit=..., ids=...)``; each
   worker returns ``{"category", "metrics": {...}, "usage": {...}, ...}``, with metrics from
   ``retrieval_metrics`` / ``evidence_recall``;
4. ``RunResult.from_items(benchmark, manifest, rows, seconds=...).save(out_dir)`` writes
   ``result.json`` and ``result.md``.

Conventions ``reme bench reproduce`` relies on: the run command has an ``--out DIR`` option (a
rerun appends ``--out NEW_DIR``), writes ``RESULT_JSON`` there, and calls ``checkpoint``.

``reme_core.bench.testing`` (imported on its own; defined in the kit as ``reme_core.testing.bench``)
holds the fixture helpers of benchmark plugins' tests: the shipped defaults registered directly,
an isolated environment, a CLI with ``bench``.
"""

from reme_core.bench.configs import (
    CACHED_LLM,
    ResolvedConfig,
    named_configs,
    resolve_config,
    with_llm_cache,
)
from reme_core.bench.manifest import (
    ComponentPin,
    DatasetFile,
    GitState,
    Manifest,
    PluginPin,
    SearchPipeline,
    StepPin,
    build_manifest,
    current_command,
    dataset_file,
    diff_manifests,
    environment_notes,
    git_state,
    plugin_pins,
    search_pipeline,
)
from reme_core.bench.metrics import (
    LME_KS,
    dcg,
    dedupe,
    evidence_recall,
    ndcg_any,
    recall_all,
    recall_any,
    retrieval_metrics,
)
from reme_core.bench.reproduce import ManifestCaptured, capture_manifest, checkpoint
from reme_core.bench.results import (
    COUNT,
    RESULT_JSON,
    RESULT_MARKDOWN,
    BenchUsage,
    RunResult,
    aggregate,
    metric_table,
    side_by_side,
    write_json,
)
from reme_core.bench.runner import default_item_id, item_path, run_items, select_items

__all__ = [
    "CACHED_LLM",
    "COUNT",
    "LME_KS",
    "RESULT_JSON",
    "RESULT_MARKDOWN",
    "BenchUsage",
    "ComponentPin",
    "DatasetFile",
    "GitState",
    "Manifest",
    "ManifestCaptured",
    "PluginPin",
    "ResolvedConfig",
    "RunResult",
    "SearchPipeline",
    "StepPin",
    "aggregate",
    "build_manifest",
    "capture_manifest",
    "checkpoint",
    "current_command",
    "dataset_file",
    "dcg",
    "dedupe",
    "default_item_id",
    "diff_manifests",
    "environment_notes",
    "evidence_recall",
    "git_state",
    "item_path",
    "metric_table",
    "named_configs",
    "ndcg_any",
    "plugin_pins",
    "recall_all",
    "recall_any",
    "resolve_config",
    "retrieval_metrics",
    "run_items",
    "search_pipeline",
    "select_items",
    "side_by_side",
    "with_llm_cache",
    "write_json",
]
