"""What every ``ralph-context`` command starts from and prints: its settings (a bad file is
one error line), logs' neighbours and errors on stderr, results on stdout (``out``, and
``emit_json`` for ``--json``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape

from ralph_context._logging import configure_logging
from ralph_context.cli.base import GLOBAL
from ralph_context.errors import ConfigError

if TYPE_CHECKING:
    from ralph_context.config import Settings

__all__ = ["emit_json", "err", "fail", "load_settings", "out", "start_logging"]

err = Console(stderr=True)
out = Console(soft_wrap=True)  # a path or an id is never broken across lines


def emit_json(payload: Any) -> None:
    """``payload`` as indented JSON on stdout (what ``--json`` prints)."""
    sys.stdout.write(json.dumps(payload, indent=2, default=str, ensure_ascii=False) + "\n")


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one readable error line; the caller raises the returned exit (2: bad input or
    configuration, 1: anything else). The message is text, not markup: a name in brackets
    (``ralph-context[model]``, a list) is printed as written, not swallowed as a style."""
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def load_settings(config: Path | None, log_level: str | None) -> Settings:
    """Logging set up, then the settings from ``config`` (or the usual lookup). Either one
    not given to the command falls back to the same option given before it.

    Raises:
        typer.Exit: The settings are invalid (the error is printed).
    """
    # Here, not at the top: the settings' models cost ~0.35 s (pydantic, pydantic-settings),
    # which commands that read none (``--version``, ``--help``) never pay.
    from ralph_context.config import Settings

    start_logging(log_level)
    try:
        return Settings.load(config if config is not None else GLOBAL.config)
    except ConfigError as exc:
        raise fail(str(exc), 2) from None


def start_logging(log_level: str | None) -> None:
    """Logs on stderr at ``log_level``, or at the level given before the subcommand."""
    level = log_level if log_level is not None else GLOBAL.log_level
    configure_logging(None if level is None else str(level))
