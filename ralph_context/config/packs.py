"""``packs:``: the tool packs served next to the context tools, and their own keys."""

from __future__ import annotations

from pydantic import Field

from ralph_context.config.section import Section

__all__ = [
    "EvaluationSettings",
    "PacksSettings",
    "ProjectMemorySettings",
    "PromptLearningSettings",
]


class PromptLearningSettings(Section):
    """The prompt-learning tool pack: prompts, their outcomes, and sessions."""

    enabled: bool = True
    # Weight of a new observation in the moving averages (the spec's 30% new, 70% history).
    ema_alpha: float = Field(default=0.3, gt=0.0, le=1.0, allow_inf_nan=False)
    # A model id served by `inference`: suggest_improvements then also returns the prompt
    # rewritten to apply its suggestions. None: suggestions only.
    rewrite_model: str | None = Field(default=None, min_length=1)
    rewrite_timeout_seconds: float = Field(default=60.0, gt=0.0, allow_inf_nan=False)


class ProjectMemorySettings(Section):
    """The project tool pack: projects, cycles, learnings and decisions."""

    enabled: bool = True


class EvaluationSettings(Section):
    """The evaluation tool pack (prompt-prix): drift, variants, trajectories, and the
    language model tools when ``inference`` has a server."""

    enabled: bool = True


class PacksSettings(Section):
    """Tool packs served next to the context tools, each switchable and on by default."""

    prompt_learning: PromptLearningSettings = PromptLearningSettings()
    project: ProjectMemorySettings = ProjectMemorySettings()
    evaluation: EvaluationSettings = EvaluationSettings()
