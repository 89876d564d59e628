"""``ralph-context``: the command line over the engine.

Every command takes ``--config PATH``; ``--json`` prints machine-readable output on stdout.
Logs go to stderr. Errors print one readable message and exit non-zero (2 for bad input or
configuration, 1 for everything else) without touching the store.

This module composes the command groups, each in its own module of ``cli/``: ``items``
(store, search, forget, demo), ``store`` (stats, health, export, import, reindex, redact),
``serve`` (serve, console, init, ralph run), ``model``, ``bench``, ``studio``, ``access``
(token, namespaces) and ``hook``. They share ``base`` (the Typer app and common options),
``output`` (settings, errors, printing) and ``engine`` (the engine).
"""

from __future__ import annotations

from typing import Annotated

import typer

from ralph_context import __version__
from ralph_context.cli.access import namespaces_command, token_app
from ralph_context.cli.base import GLOBAL, App, ConfigOption, LogOption
from ralph_context.cli.bench import bench_app
from ralph_context.cli.hook import hook_command
from ralph_context.cli.items import demo, forget, search, store
from ralph_context.cli.model import model_app
from ralph_context.cli.output import out
from ralph_context.cli.serve import console, init, ralph_app, serve
from ralph_context.cli.store import export_, health, import_, redact, reindex, stats
from ralph_context.cli.studio import studio_app

__all__ = ["app", "main"]

app = App(
    name="ralph-context",
    help="Semantic, persistent, self-pruning memory for agent iteration loops.",
    no_args_is_help=True,
)
# In the order `--help` lists them: commands first, then groups.
app.command("namespaces")(namespaces_command)
app.command("hook")(hook_command)
app.command("store")(store)
app.command("search")(search)
app.command("forget")(forget)
app.command("export")(export_)
app.command("import")(import_)
app.command("stats")(stats)
app.command("health")(health)
app.command("reindex")(reindex)
app.command("redact")(redact)
app.command("demo")(demo)
app.command("serve")(serve)
app.command("console")(console)
app.command("init")(init)
app.add_typer(model_app, name="model")
app.add_typer(bench_app, name="bench")
app.add_typer(studio_app, name="studio")
app.add_typer(token_app, name="token")
app.add_typer(ralph_app, name="ralph")


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
