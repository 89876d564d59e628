"""Tool arguments kept under a former name, so clients written for it go on working.

``min_score`` meant relevance in ``get_relevant_context`` (the score every retrieved item
carries) but usefulness in ``get_skills`` and ``prune_low_value_context``: one name for two
scales, and a client that tuned one read the other wrong. The usefulness floors are now
``min_usefulness``; ``min_score`` is still taken there, marked ``deprecated`` in the
published schema, and means what it meant.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ralph_context.errors import InvalidInput

__all__ = ["OldMinScore", "usefulness_floor"]

OldMinScore = Annotated[
    Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)] | None,
    Field(
        description="Deprecated: the former name of min_usefulness, still taken.",
        json_schema_extra={"deprecated": True},
    ),
]


def usefulness_floor(given: float, old: float | None, default: float) -> float:
    """The usefulness floor a call asked for, under either name (``given`` is
    ``min_usefulness``, ``default`` its default; ``old`` is ``min_score``).

    Raises:
        InvalidInput: Both names were given, with different values.
    """
    if old is None:
        return given
    if given not in (default, old):
        raise InvalidInput(
            f"min_usefulness={given} and min_score={old} (its former name) disagree; "
            "give min_usefulness alone"
        )
    return old
