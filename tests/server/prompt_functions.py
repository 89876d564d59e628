"""Importable functions for function prompts in the tests (referenced as ``module:function``)."""

from __future__ import annotations

import threading

import anyio.lowlevel

NOT_CALLABLE = 3


def review(arguments: dict[str, str]) -> str:
    """Echo the arguments it got, so a test can see exactly what was passed."""
    given = ", ".join(f"{key}={value}" for key, value in sorted(arguments.items()))
    return f"review({given})"


def where_am_i(arguments: dict[str, str]) -> str:
    """Report whether the call ran on the main thread (the event loop's, in tests)."""
    return "main" if threading.current_thread() is threading.main_thread() else "worker"


async def summarize(arguments: dict[str, str]) -> str:
    """An async prompt function: yields to the loop once before answering."""
    await anyio.lowlevel.checkpoint()
    return f"summary of {arguments['topic']}"


def returns_a_number(arguments: dict[str, str]) -> int:
    """Breaks the contract: a prompt function must return a str."""
    return 42


def explodes(arguments: dict[str, str]) -> str:
    """A prompt function whose own code fails."""
    raise RuntimeError("disk on fire")
