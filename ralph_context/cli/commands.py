"""``ralph-context``: the command line over the engine.

Every command takes ``--config PATH``; ``--json`` prints machine-readable output on stdout.
Logs go to stderr. Errors print one readable message and exit non-zero (2 for bad input or
configuration, 1 for everything else) without touching the store.

This module composes the command groups, each in its own module of ``cli/``: ``items``
(store, search, forget, demo), ``store`` (stats, health, export, import, reindex, redact),
``serve`` (serve, console, init, ralph run), ``model``, ``bench``, ``studio``, ``access``
(token, namespaces) and ``hook``. They share ``base`` (the Typer app and common options),
``output`` (settings, errors, printing) and ``engine`` (the engine). A command's module is
imported when the command runs (``base.LazyGroup``), not with this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar

import typer

from ralph_context import __version__
from ralph_context.cli.base import GLOBAL, App, ConfigOption, LazyGroup, LogOption
from ralph_context.cli.output import out

__all__ = ["app", "main"]


class _Commands(LazyGroup):
    # In the order `--help` lists them: the main job and its set-up first, then the store's
    # commands by how often a person types them, then the groups.
    members: ClassVar[Mapping[str, tuple[str, str]]] = {
        "serve": ("ralph_context.cli.serve", "serve"),
        "init": ("ralph_context.cli.serve", "init"),
        "search": ("ralph_context.cli.items", "search"),
        "store": ("ralph_context.cli.items", "store"),
        "forget": ("ralph_context.cli.items", "forget"),
        "stats": ("ralph_context.cli.store", "stats"),
        "health": ("ralph_context.cli.store", "health"),
        "console": ("ralph_context.cli.serve", "console"),
        "demo": ("ralph_context.cli.items", "demo"),
        "export": ("ralph_context.cli.store", "export_"),
        "import": ("ralph_context.cli.store", "import_"),
        "reindex": ("ralph_context.cli.store", "reindex"),
        "redact": ("ralph_context.cli.store", "redact"),
        "verify": ("ralph_context.cli.integrity", "verify"),
        "repair": ("ralph_context.cli.integrity", "repair"),
        "namespaces": ("ralph_context.cli.access", "namespaces_command"),
        "hook": ("ralph_context.cli.hook", "hook_command"),
        "token": ("ralph_context.cli.access", "token_app"),
        "model": ("ralph_context.cli.model", "model_app"),
        "bench": ("ralph_context.cli.bench", "bench_app"),
        "studio": ("ralph_context.cli.studio", "studio_app"),
        "ralph": ("ralph_context.cli.serve", "ralph_app"),
    }


app = App(
    name="ralph-context",
    help="Semantic, persistent, self-pruning memory for agent iteration loops.",
    no_args_is_help=True,
    cls=_Commands,
)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    # Before the subcommand, for every command that reads settings or logs.
    GLOBAL.config, GLOBAL.log_level = config, log_level
    if version:
        out.print(__version__)
        raise typer.Exit(0)


def main() -> None:
    """Console-script entry point."""
    app()
