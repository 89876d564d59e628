"""A prompt's running metrics, updated by exponential moving averages.

As in the prompt-learning spec: a new observation weighs ``alpha`` (0.3 by default, "30%
new, 70% history") and the history ``1 - alpha``; the first observation sets each metric.

- ``success_rate``: EMA of ``1.0`` for a success, ``0.0`` for a failure.
- ``avg_latency_ms``: EMA of ``latency_ms``.
- ``token_efficiency``: EMA of ``quality_score`` (the spec's reference update does the same).
- ``observation_count``: outcomes recorded.

One deliberate difference from the spec's reference code: an outcome that does not report
latency or quality leaves that average alone, instead of pulling it towards 0 (the reference
substitutes 0 for a missing latency). Metrics never observed are ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Observation", "PromptMetrics"]


@dataclass(frozen=True)
class Observation:
    """One execution's outcome, already validated."""

    success: bool
    latency_ms: float | None = None
    output_tokens: int | None = None
    quality_score: float | None = None

    @property
    def score(self) -> float:
        """How good the run was, for session bests: the quality score, else 1 or 0."""
        if self.quality_score is not None:
            return self.quality_score
        return 1.0 if self.success else 0.0


@dataclass(frozen=True)
class PromptMetrics:
    success_rate: float
    avg_latency_ms: float | None
    token_efficiency: float | None
    observation_count: int

    @classmethod
    def first(cls, observation: Observation) -> PromptMetrics:
        return cls(
            success_rate=1.0 if observation.success else 0.0,
            avg_latency_ms=observation.latency_ms,
            token_efficiency=observation.quality_score,
            observation_count=1,
        )

    def updated(self, observation: Observation, alpha: float) -> PromptMetrics:
        """These metrics after one more observation."""
        return PromptMetrics(
            success_rate=_ema(self.success_rate, 1.0 if observation.success else 0.0, alpha),
            avg_latency_ms=_ema_optional(self.avg_latency_ms, observation.latency_ms, alpha),
            token_efficiency=_ema_optional(self.token_efficiency, observation.quality_score, alpha),
            observation_count=self.observation_count + 1,
        )


def _ema(old: float, new: float, alpha: float) -> float:
    return alpha * new + (1.0 - alpha) * old


def _ema_optional(old: float | None, new: float | None, alpha: float) -> float | None:
    if new is None:
        return old
    return new if old is None else _ema(old, new, alpha)
