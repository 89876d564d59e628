"""``ralph-context token`` and ``ralph-context namespaces``: who may reach the HTTP server,
and what it holds (see ``ralph_context.server.tokens`` and ``ralph_context.namespaces``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ralph_context import namespaces
from ralph_context.cli.base import App, ConfigOption
from ralph_context.cli.output import err, fail, load_settings
from ralph_context.errors import ConfigError, InvalidInput

__all__ = ["namespaces_command", "token_app"]

token_app = App(help="Bearer tokens for the HTTP server.", no_args_is_help=True)
out = Console()


@token_app.command("new")
def token_new(
    namespace: Annotated[
        list[str] | None,
        typer.Option(
            "--namespace", "-n", help="A namespace the token may use (repeat; default: all)."
        ),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(help="Token file (default: server.token_file, .agent/server.tokens)."),
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Add a random token to the token file (mode 0600) and print it once, on stdout."""
    from ralph_context.server.tokens import new_token

    settings = load_settings(config, None)
    target = file or settings.token_path()
    try:
        token = new_token(target, namespace)
    except InvalidInput as exc:
        raise fail(f"--namespace: {exc}", 2) from None
    except OSError as exc:
        raise fail(f"cannot write {target}: {exc.strerror}", 1) from None
    out.print(token, highlight=False)
    scope = ", ".join(namespace) if namespace else "every namespace"
    err.print(f"added to {target} ({scope})", highlight=False)
    if target != settings.token_path():
        err.print(f"the server reads it once server.token_file is {target}", highlight=False)


@token_app.command("owner")
def token_owner(
    header: Annotated[
        bool,
        typer.Option(
            "--header",
            help='Print {"Authorization": "Bearer ..."}, as a headers helper prints it '
            "(Claude Code's headersHelper, which `init --transport http` writes).",
        ),
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Print the store's owner token (created if the server has not made it yet), which
    every HTTP server of this store takes; for a client configured by URL."""
    from ralph_context.config import owner_token

    settings = load_settings(config, None)
    if not settings.server.owner_token:
        raise fail("server.owner_token is false: this store's servers keep no owner token", 2)
    path = settings.owner_token_path()
    try:
        token = owner_token.ensure(path)
    except ConfigError as exc:
        raise fail(str(exc), 1) from None
    # Plain writes: a headers helper's output is parsed, and rich would wrap a long line.
    if header:
        sys.stdout.write(json.dumps({"Authorization": f"Bearer {token}"}) + "\n")
        return
    sys.stdout.write(token + "\n")
    err.print(f"from {path}", highlight=False)


def namespaces_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: ConfigOption = None,
) -> None:
    """List the store's namespaces with their sizes on disk."""
    settings = load_settings(config, None)
    if settings.is_ephemeral:
        raise fail("this configuration keeps no persistent store; it has no namespaces", 2)
    found = namespaces.listing(settings.store_root())
    if as_json:
        rows = [{"name": n.name, "size_mb": n.size_mb} for n in found]
        out.print(json.dumps(rows), highlight=False)
        return
    table = Table("namespace", "size (MB)")
    for entry in found:
        table.add_row(entry.name, f"{entry.size_mb:.2f}")
    out.print(table)
