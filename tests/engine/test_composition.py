"""``Engine`` is a facade that owns its parts, not a class spread over base classes."""

from __future__ import annotations

from ralph_context.engine import Engine


def test_the_engine_inherits_from_nothing_but_object() -> None:
    assert Engine.__mro__ == (Engine, object)
