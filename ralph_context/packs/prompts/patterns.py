"""Structural patterns of a prompt, detected with plain rules (no model).

These are the features ``suggest_improvements`` and ``get_analytics`` compare between
prompts: they are heuristics over the text, chosen because prompt-engineering guides name
them and because each has a visible trace a regular expression can find:

- ``structured_output``: two or more numbered or bulleted lines (``1.``, ``2)``, ``-``, ``*``).
- ``role_statement``: "You are ...", "Act as ...", "Your role is ...".
- ``examples``: "for example", "e.g.", "Example:", or an ``Input:``/``Output:`` pair.
- ``explicit_constraints``: must / must not / do not / never / only / at most / no more than.
- ``step_by_step``: "step by step", "think through", "first ... then".
- ``output_schema``: JSON, YAML, a schema, a ``{"key": ...}`` template, "format:".

Length is not a yes/no pattern: :func:`length_band` puts a prompt in ``short`` (< 20 words),
``medium`` or ``long`` (> 150 words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "LENGTH_BANDS",
    "PATTERNS",
    "LengthBand",
    "Pattern",
    "detect",
    "excerpt",
    "length_band",
    "word_count",
]

Focus = Literal["clarity", "specificity", "efficiency"]
LengthBand = Literal["short", "medium", "long"]
# Shortest first: the position of a band says which of two prompts is longer.
LENGTH_BANDS: tuple[LengthBand, ...] = ("short", "medium", "long")

_FLAGS = re.IGNORECASE | re.MULTILINE


@dataclass(frozen=True)
class Pattern:
    """A detectable trait, the suggestion that adds it, and the focus it serves."""

    name: str
    suggestion: str
    focus: Focus
    description: str
    regex: re.Pattern[str]
    min_matches: int = 1


PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "structured_output",
        "add_structure",
        "clarity",
        "Ask for a numbered or bulleted answer",
        re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s+\S", _FLAGS),
        min_matches=2,
    ),
    Pattern(
        "role_statement",
        "add_role",
        "clarity",
        "Open with the role the model should take",
        re.compile(r"\b(?:you are (?:an?|the)\b|act as\b|acting as\b|your role is\b)", _FLAGS),
    ),
    Pattern(
        "step_by_step",
        "add_step_by_step",
        "clarity",
        "Ask for the reasoning step by step",
        re.compile(
            r"\b(?:step[- ]by[- ]step|think through|reason through|first\b[^.\n]{0,120}\bthen)\b",
            _FLAGS,
        ),
    ),
    Pattern(
        "examples",
        "add_examples",
        "specificity",
        "Show an example of the input and the answer wanted",
        re.compile(r"(?:\bfor example\b|\be\.g\.|^\s*examples?\s*:|^\s*input\s*:)", _FLAGS),
    ),
    Pattern(
        "explicit_constraints",
        "add_constraints",
        "specificity",
        "State the constraints explicitly",
        re.compile(
            r"\b(?:must(?: not)?|do not|don't|never|only|at most|no more than|at least|avoid)\b",
            _FLAGS,
        ),
    ),
    Pattern(
        "output_schema",
        "add_output_schema",
        "specificity",
        "Give the exact output format",
        re.compile(
            r"(?:\bjson\b|\byaml\b|\bschema\b|\{\s*\"\w+\"\s*:|^\s*format\s*:|\bcsv\b)", _FLAGS
        ),
    ),
)

_BY_NAME = {pattern.name: pattern for pattern in PATTERNS}
_SHORT_BELOW = 20
_LONG_ABOVE = 150


def detect(text: str) -> frozenset[str]:
    """The names of the patterns ``text`` shows."""
    return frozenset(
        pattern.name
        for pattern in PATTERNS
        if len(pattern.regex.findall(text)) >= pattern.min_matches
    )


def word_count(text: str) -> int:
    return len(text.split())


def length_band(text: str) -> LengthBand:
    words = word_count(text)
    if words < _SHORT_BELOW:
        return "short"
    return "long" if words > _LONG_ABOVE else "medium"


def excerpt(text: str, pattern_name: str, *, limit: int = 240) -> str:
    """The lines of ``text`` that show the pattern (the whole list for structured output),
    cut to ``limit`` characters: a real example from a prompt that worked."""
    regex = _BY_NAME[pattern_name].regex
    lines = [line for line in text.splitlines() if regex.search(line)]
    if pattern_name != "structured_output":
        lines = lines[:1]
    shown = "\n".join(line.strip() for line in lines) or text.strip()
    return shown if len(shown) <= limit else shown[: limit - 1].rstrip() + "\u2026"
