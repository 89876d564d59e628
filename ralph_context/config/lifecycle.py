"""``lifecycle:``: when items age, are summarized, archived and pruned, and by what."""

from __future__ import annotations

from pydantic import Field, model_validator

from ralph_context.config.section import Section
from ralph_context.models import ContextType

__all__ = ["LifecycleSettings"]


class LifecycleSettings(Section):
    """Ages (in iterations) at which an item starts aging, is summarized, archived, pruned."""

    aging_after_iterations: int = Field(default=5, ge=0)
    summarize_after_iterations: int = Field(default=20, ge=1)
    archive_after_iterations: int = Field(default=50, ge=1)
    prune_after_iterations: int = Field(default=100, ge=1)
    prune_min_usefulness: float = Field(default=0.3, ge=0.0, le=1.0, allow_inf_nan=False)
    # A pass after every stored iteration; false leaves it to `run_lifecycle` / the tools.
    auto_run: bool = True
    # How far past the store's latest iteration a recorded iteration may be: the lifecycle
    # ages everything by that clock, so one call claiming iteration 10**9 would archive the
    # whole store. A loop moves one at a time.
    max_iteration_step: int = Field(default=1_000, ge=1)
    # A model id served by `inference` writes the summaries; None (or the model failing)
    # keeps the extractive ones, which need no language model.
    summarizer_model: str | None = Field(default=None, min_length=1)
    # Bound on one summary, and on all the model's summaries in one pass: past the budget
    # the pass finishes with extractive summaries instead of holding up the next one.
    summarizer_timeout_seconds: float = Field(default=60.0, gt=0.0, allow_inf_nan=False)
    summarizer_budget_seconds: float = Field(default=120.0, gt=0.0, allow_inf_nan=False)
    # How long a pass asked for by a tool or the CLI may take (plus twice the summarizer
    # budget when a model writes summaries); background passes are not waited for.
    timeout_seconds: float = Field(default=600.0, gt=0.0, allow_inf_nan=False)

    # Types that do not age: never summarized or archived by the clock (a skill learned in
    # iteration 2 is still the answer in iteration 200); pruned only when judged useless.
    ageless_types: tuple[ContextType, ...] = (ContextType.SKILL, ContextType.TASK)

    @model_validator(mode="after")
    def _ordered(self) -> LifecycleSettings:
        if not (
            self.aging_after_iterations
            < self.summarize_after_iterations
            < self.archive_after_iterations
            < self.prune_after_iterations
        ):
            raise ValueError(
                f"ages must grow: aging_after_iterations ({self.aging_after_iterations}) "
                f"< summarize_after_iterations ({self.summarize_after_iterations}) "
                f"< archive_after_iterations ({self.archive_after_iterations}) "
                f"< prune_after_iterations ({self.prune_after_iterations})"
            )
        return self
