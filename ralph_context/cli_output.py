"""What every ``ralph-context`` command prints on stderr: logs' neighbours, and errors."""

from __future__ import annotations

import typer
from rich.console import Console

__all__ = ["err", "fail"]

err = Console(stderr=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one readable error line; the caller raises the returned exit (2: bad input or
    configuration, 1: anything else)."""
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)
