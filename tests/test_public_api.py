"""What ``import ralph_context`` offers: every error a caller may need to catch."""

from __future__ import annotations

import inspect

import ralph_context
from ralph_context import errors


def test_every_error_class_is_exported_from_the_package() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.RalphContextError)
    }
    assert defined <= set(ralph_context.__all__)
    for name in ralph_context.__all__:
        assert getattr(ralph_context, name) is not None
