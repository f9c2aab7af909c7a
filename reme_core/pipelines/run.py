"""``PipelineRun``: what a step sees of the run it belongs to."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reme_core.components import AgentResult, AgentTask, Llm
from reme_core.errors import ConfigError
from reme_core.pipelines.prompts import Prompts, load_prompts

if TYPE_CHECKING:
    from reme_core.runtime import Reme


@dataclass
class PipelineRun:
    """One run of pipeline ``name``: the workspace, this pipeline's model and what it did."""

    reme: Reme
    name: str
    llm: Llm | None
    """``pipelines.<name>.llm`` if set, else ``components.llm``; None when no model is set."""
    verbs: list[str] = field(default_factory=list)
    """What the run did, in words the history commit message lists (``CREATE digest/x.md``)."""
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    """This run's id: proposals it queues for review name it (``PipelineResult.run_id``)."""

    @property
    def review(self) -> str:
        """``pipelines.<name>.review``: ``apply`` (change notes) or ``queue`` (propose changes
        through ``reme.review.propose`` instead, for ``reme review`` to approve or reject)."""
        config = self.reme.settings.pipelines.get(self.name)
        return config.review if config is not None else "apply"

    @property
    def language(self) -> str:
        return self.reme.settings.language

    def require_llm(self, what: str) -> Llm:
        """This pipeline's model, or a ConfigError telling the user how to configure one."""
        if self.llm is None:
            raise ConfigError(
                f"{what} needs a model: set components.llm (or pipelines.{self.name}.llm), "
                "e.g. --set components.llm='{name: openai, settings: {model: ...}}'"
            )
        return self.llm

    def prompts(self, package: str, name: str) -> Prompts:
        """The prompt file ``<package>/prompts/<name>.yaml`` in the configured language."""
        return load_prompts(package, name, self.language)

    def agent(self, task: AgentTask, allowed_paths: Sequence[str]) -> AgentResult:
        """Run the configured agent wrapper on ``task``, confined to ``allowed_paths``.

        The paths come from the step (server side), never from the caller's params; an empty
        list allows nothing.
        """
        if task.language is None:
            task = task.model_copy(update={"language": self.language})
        return self.reme.run_agent(task, allowed_paths, llm=self.llm)

    def record(self, verb: str) -> None:
        """Name something this run did in its history commit message."""
        self.verbs.append(verb)
