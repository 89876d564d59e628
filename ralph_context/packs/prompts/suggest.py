"""Improvement suggestions measured from similar prompts' recorded outcomes.

For each structural pattern (``patterns.py``) the given prompt lacks, the similar prompts are
split into those that show it and those that do not. The suggestion's
``expected_improvement`` is the measured difference of their mean success rates; it is only
made when that difference is positive and at least one prompt showing the pattern is a high
performer (success rate >= ``HIGH_PERFORMANCE``), whose text supplies the example. Length is
compared the same way across length bands. With no similar prompts there is nothing to
measure, and the answer says so instead of inventing advice.

This is correlation over a handful of neighbours, not causation: the numbers say how similar
prompts with the trait did, which is what the spec asks for and all the data can tell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, median
from typing import Literal

from ralph_context.packs.prompts.patterns import (
    LENGTH_BANDS,
    PATTERNS,
    Pattern,
    detect,
    excerpt,
    length_band,
    word_count,
)

__all__ = ["HIGH_PERFORMANCE", "Similar", "Suggestion", "suggest"]

HIGH_PERFORMANCE = 0.7
Focus = Literal["all", "clarity", "specificity", "efficiency"]


@dataclass(frozen=True)
class Similar:
    """A neighbour of the prompt, with its measured success."""

    text: str
    success_rate: float


@dataclass(frozen=True)
class Suggestion:
    type: str
    pattern: str
    focus: str
    description: str
    example: str
    expected_improvement: float
    prompts_with: int
    prompts_without: int


def suggest(prompt: str, similar: Sequence[Similar], focus: Focus) -> list[Suggestion]:
    """Suggestions for ``prompt``, the largest expected improvement first."""
    found = detect(prompt)
    traits = [detect(neighbour.text) for neighbour in similar]
    suggestions = [
        suggestion
        for pattern in PATTERNS
        if pattern.name not in found and focus in ("all", pattern.focus)
        if (suggestion := _for_pattern(pattern, similar, traits)) is not None
    ]
    length = _for_length(prompt, similar)
    if length is not None and focus in ("all", length.focus):
        suggestions.append(length)
    return sorted(suggestions, key=lambda s: s.expected_improvement, reverse=True)


def _for_pattern(
    pattern: Pattern, similar: Sequence[Similar], traits: Sequence[frozenset[str]]
) -> Suggestion | None:
    having = [s for s, t in zip(similar, traits, strict=True) if pattern.name in t]
    lacking = [s for s, t in zip(similar, traits, strict=True) if pattern.name not in t]
    if not having or not lacking:
        return None
    best = max(having, key=lambda s: s.success_rate)
    if best.success_rate < HIGH_PERFORMANCE:
        return None
    with_rate = fmean(s.success_rate for s in having)
    without_rate = fmean(s.success_rate for s in lacking)
    gain = with_rate - without_rate
    if gain <= 0:
        return None
    return Suggestion(
        type=pattern.suggestion,
        pattern=pattern.name,
        focus=pattern.focus,
        description=(
            f"{pattern.description}: {len(having)} of {len(similar)} similar prompts do, "
            f"and they succeed {with_rate:.0%} on average against {without_rate:.0%} for "
            "those that don't"
        ),
        example=excerpt(best.text, pattern.name),
        expected_improvement=round(gain, 3),
        prompts_with=len(having),
        prompts_without=len(lacking),
    )


def _for_length(prompt: str, similar: Sequence[Similar]) -> Suggestion | None:
    """Move towards the length band whose similar prompts succeed best."""
    own = length_band(prompt)
    bands: dict[str, list[Similar]] = {}
    for neighbour in similar:
        bands.setdefault(length_band(neighbour.text), []).append(neighbour)
    rates = {band: fmean(s.success_rate for s in members) for band, members in bands.items()}
    if not rates:
        return None
    target = max(rates, key=lambda band: rates[band])
    if target == own or max(s.success_rate for s in bands[target]) < HIGH_PERFORMANCE:
        return None
    others = [s for band, members in bands.items() if band != target for s in members]
    if not others:
        return None
    compared = bands.get(own) or others
    gain = rates[target] - fmean(s.success_rate for s in compared)
    if gain <= 0:
        return None
    words = round(median(word_count(s.text) for s in bands[target]))
    longer = LENGTH_BANDS.index(target) > LENGTH_BANDS.index(own)
    return Suggestion(
        type="add_detail" if longer else "shorten",
        pattern="length",
        focus="specificity" if longer else "efficiency",
        description=(
            f"Similar {target} prompts succeed {rates[target]:.0%} on average against "
            f"{rates[target] - gain:.0%} for "
            f"{'ones like yours' if own in bands else 'the rest'} "
            f"({word_count(prompt)} words here)"
        ),
        example=f"Aim for about {words} words, as the best similar prompts do.",
        expected_improvement=round(gain, 3),
        prompts_with=len(bands[target]),
        prompts_without=len(compared),
    )
