"""The runtime's names load on first use: ``__main__`` imports ``runtime.heap`` before every
command, and a command that asks the running server (``stats`` beside it) must not pay for
the supervisor, anyio and structlog."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ralph_context.runtime as runtime
from ralph_context.runtime.actor import Actor
from ralph_context.runtime.supervisor import Supervisor


def test_importing_the_heap_loads_neither_the_supervisor_nor_anyio_nor_structlog() -> None:
    code = (
        "import sys\n"
        "import ralph_context.runtime.heap\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('anyio', 'structlog', "
        "'tenacity') or m.startswith('ralph_context.runtime.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "['ralph_context.runtime.heap']"


def test_the_runtime_names_are_those_of_their_modules() -> None:
    from ralph_context.runtime import Actor as exported_actor
    from ralph_context.runtime import Supervisor as exported_supervisor

    assert (exported_actor, exported_supervisor) == (Actor, Supervisor)
    assert all(getattr(runtime, name) is not None for name in runtime.__all__)


def test_a_name_the_runtime_does_not_have_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        runtime.Nothing  # noqa: B018
