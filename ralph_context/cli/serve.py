"""``ralph-context serve``, ``console``, ``init`` and ``ralph run``: memory attached to
agents, as an MCP server (and its console in a browser), registered for a client
(``.mcp.json``, Ralph v2's ``ralph.yml``), or around Ralph 1.x's loop in this process.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.table import Table

from ralph_context import namespaces
from ralph_context.cli.base import (
    AgentName,
    App,
    ClientTransport,
    ConfigOption,
    LogOption,
    RalphVersion,
    ServeTransport,
)
from ralph_context.cli.engine import run
from ralph_context.cli.output import err, fail, load_settings, out
from ralph_context.config import Settings, default_file
from ralph_context.errors import ConfigError, RalphContextError

if TYPE_CHECKING:
    from ralph_context.integrations.agents.files import FileEdit

__all__ = ["console", "init", "ralph_app", "serve"]


def serve(
    transport: Annotated[
        ServeTransport | None,
        typer.Option("--transport", "-t", help="stdio (default), http (streamable HTTP) or sse."),
    ] = None,
    host: Annotated[str | None, typer.Option(help="Bind address for http/sse.")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port for http/sse.")] = None,
    namespace: Annotated[
        str | None,
        typer.Option(
            help="stdio: the namespace served (default: storage.namespace). "
            "HTTP serves every namespace at /ns/NAME/mcp."
        ),
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="No write tools; the store is only read.")
    ] = False,
    shared: Annotated[
        bool,
        typer.Option(
            "--shared",
            help="stdio through the project's shared server (started if none runs): what "
            "`init --agent` registers, so the agent's MCP entry and its hooks share one.",
        ),
    ] = False,
    for_agents: Annotated[
        bool,
        typer.Option(
            "--for-agents",
            help="Be the project's shared server (loopback, a free port, advertised to "
            "the agents' hooks; exits after agents.idle_exit_minutes idle). Hooks start it.",
        ),
    ] = False,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Run the MCP server (stdio by default; --transport http serves /mcp and /console)."""
    if shared:
        from ralph_context.server.agents.bridge import bridge_stdio

        raise typer.Exit(bridge_stdio(Path.cwd()))
    settings = load_settings(config, log_level)
    if namespace is not None:
        try:
            settings = settings.with_overrides(storage={"namespace": namespace})
        except ConfigError:
            raise fail(f"--namespace {namespace!r}: use {namespaces.NAME_RULE}", 2) from None
    chosen = None if transport is None else transport.value
    root = None
    if for_agents:
        from ralph_context.server.agents.project import project_root

        root, chosen = project_root(Path.cwd()), "http"
    _serve(settings, chosen, host, port, read_only, agents_root=root)


def console(
    host: Annotated[str | None, typer.Option(help="Bind address.")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="Port.")] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Look only: no write button, writes refused.")
    ] = False,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the console's URL; open no browser.")
    ] = False,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Serve over HTTP and open the memory console (http://HOST:PORT/console) in a browser,
    logged in once; beside a server that already holds the store, open that one's."""
    from ralph_context.cli.console_login import open_console
    from ralph_context.cli.remote import served

    settings = load_settings(config, log_level)
    running = served(settings)
    if running is not None:
        open_console(settings, running.note.base_url + "/console", browser=not no_browser)
        return

    def opened(url: str) -> None:
        open_console(settings, url, browser=not no_browser)

    _serve(settings, "http", host, port, read_only, opened)


def _serve(
    settings: Settings,
    transport: str | None,
    host: str | None,
    port: int | None,
    read_only: bool,
    on_console: Callable[[str], object] | None = None,
    *,
    agents_root: Path | None = None,
) -> None:
    # Said before the imports below (~2 s) and the model's loading: a person who started
    # the server sees at once that it is on its way, whatever the log level.
    store = "memory" if settings.is_ephemeral else str(settings.store_path())
    sys.stderr.write(
        f"ralph-context: starting ({transport or settings.server.transport}); loading the "
        f"embedding model {settings.embeddings.model} and opening {store}\n"
    )
    sys.stderr.flush()
    # Imported here: the MCP SDK and uvicorn add ~1 s to every other command's start-up.
    from ralph_context.server.run import Transport
    from ralph_context.server.run import serve as serve_mcp
    from ralph_context.storage.private import keep_private

    # The server writes the store (and its logs): owner-only files (see storage.private).
    keep_private()

    chosen = cast(Transport | None, transport)
    run(
        lambda: serve_mcp(
            settings,
            transport=chosen,
            host=host,
            port=port,
            read_only=read_only,
            on_console=on_console,
            agents_root=agents_root,
        )
    )
    # The process ends here: its objects need no collection. The engine gave them back to
    # the collector when it closed (runtime.heap), and the interpreter's collections at
    # exit then walked the model, the tables and the server, 2-3 s after "stopped" on a
    # loaded 2-core machine.
    gc.freeze()


def init(
    project: Annotated[
        Path, typer.Option("--project", "-p", help="Project folder (default: here).")
    ] = Path("."),
    transport: Annotated[
        ClientTransport,
        typer.Option("--transport", "-t", help="stdio (a command) or http (a URL)."),
    ] = ClientTransport.STDIO,
    config: ConfigOption = None,
    ralph: Annotated[
        RalphVersion | None,
        typer.Option(
            "--ralph",
            help="Set up Ralph v2 (ralph.yml: memories, hooks, the agent's MCP config); "
            "Ralph 1.x uses `ralph-context ralph run`.",
        ),
    ] = None,
    agent: Annotated[
        AgentName | None,
        typer.Option(
            "--agent",
            help="Wire the agent's hooks and MCP entry: claude (.claude/settings.json, "
            ".mcp.json) or codex (.codex/hooks.json, .codex/config.toml).",
        ),
    ] = None,
    remove: Annotated[
        bool,
        typer.Option("--remove", help="With --agent: take out only ralph-context's entries."),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="With --ralph v2 or --agent: print the change, write nothing."
        ),
    ] = False,
) -> None:
    """Register the server in the project's .mcp.json, wire an agent, or set up Ralph v2."""
    from ralph_context.integrations.mcp_json import register, server_entry
    from ralph_context.integrations.ralph_v2 import setup

    if not project.is_dir():
        raise fail(f"--project {str(project)!r} is not a folder", 2)
    if remove and (agent is None or ralph is not None):
        raise fail("--remove takes out one agent's entries: use it with --agent alone", 2)
    # The project's own ralph.yaml before the usual lookup (env, then the current folder).
    settings = load_settings(config or default_file(project), None)
    entry = server_entry(
        transport.value,
        # Ralph v2 starts the agent (and so its server) with RALPH_WORKSPACE_ROOT: the
        # server reads that workspace's ralph.yml, as the hook does, so a loop in a worktree
        # gets one store for both. A config pinned here would be the main checkout's.
        config=None if ralph is RalphVersion.V2 else settings.source,
        host=settings.server.host,
        port=settings.server.port,
        namespace=settings.storage.namespace,
        owner_token=settings.server.owner_token,
    )
    if agent is not None:
        # Planned before anything is written: a malformed file refuses the whole init.
        edits = _agent_edits(project, agent, entry, remove=remove)
        if ralph is RalphVersion.V2:
            _init_ralph_v2(project, entry, dry_run=dry_run)
        _apply_agent(agent, edits, remove=remove, dry_run=dry_run)
        return
    if ralph is RalphVersion.V2:
        _init_ralph_v2(project, entry, dry_run=dry_run)
        return
    if setup.v2_project(project):
        err.print(
            "this looks like a Ralph v2 project (.ralph/ or a v2 ralph.yml): "
            "`ralph-context init --ralph v2` also wires the hooks and memories",
            highlight=False,
        )
    try:
        done = register(project, entry)
    except RalphContextError as exc:
        raise fail(str(exc), 1) from None
    out.print(f"{done.action} {done.path}: mcpServers.ralph-context", highlight=False)


def _agent_edits(
    project: Path, agent: AgentName, entry: dict[str, Any], *, remove: bool
) -> tuple[FileEdit, ...]:
    from ralph_context.integrations.agents import setup as agents

    try:
        return agents.plan(project, agent.value, entry, remove=remove)
    except ConfigError as exc:  # AgentFileInvalid: the file and what is wrong in it
        raise fail(str(exc), 2) from None


def _apply_agent(
    agent: AgentName, edits: tuple[FileEdit, ...], *, remove: bool, dry_run: bool
) -> None:
    changed = [edit for edit in edits if edit.changes]
    if dry_run:
        sys.stdout.write("".join(edit.diff() for edit in changed))
        return
    for edit in changed:
        edit.apply()
    for edit in edits:
        if not edit.changes:
            what = "nothing of ralph-context's in" if remove else "already set up:"
            out.print(f"{what} {edit.path}", highlight=False)
        elif edit.after is None:
            out.print(
                f"removed {edit.path} (it held only ralph-context's entries)", highlight=False
            )
        elif remove:
            out.print(f"took ralph-context's entries out of {edit.path}", highlight=False)
        else:
            verb = "created" if edit.before is None else "updated"
            out.print(f"{verb} {edit.path} ({agent.value})", highlight=False)


def _init_ralph_v2(project: Path, entry: dict[str, Any], *, dry_run: bool) -> None:
    from ralph_context.integrations.ralph_v2 import setup

    try:
        change = setup.plan(project, entry)
    except ConfigError as exc:
        raise fail(str(exc), 2) from None
    for note in change.notes:
        err.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
    if not change.changes:
        out.print(f"{change.path}: already set up for ralph-context", highlight=False)
        return
    if dry_run:
        sys.stdout.write(change.diff())
        return
    change.apply()
    wired = "" if change.notes else ", cli.args"
    out.print(
        f"updated {change.path} (memories, hooks {', '.join(setup.HOOK_EVENTS)}{wired}) "
        f"and {change.mcp_path}",
        highlight=False,
    )


ralph_app = App(help="The Ralph orchestrator with memory attached.", no_args_is_help=True)


@ralph_app.command("run")
def ralph_run(
    prompt: Annotated[Path, typer.Argument(help="The task prompt (Ralph's PROMPT.md).")],
    agent: Annotated[str, typer.Option(help="Ralph's agent: claude, gemini, q, kiro, acp.")] = (
        "claude"
    ),
    max_iterations: Annotated[int, typer.Option(min=0, help="Stop after this many.")] = 100,
    server: Annotated[
        str | None, typer.Option(help="Use a running server (http://HOST:PORT/mcp) instead.")
    ] = None,
    config: ConfigOption = None,
    log_level: LogOption = None,
) -> None:
    """Run Ralph's loop on PROMPT with ralph-context memory (needs plugins/ralph)."""
    try:
        from ralph_context_ralph.run import run_with_memory
    except ImportError:
        raise fail(
            "the Ralph hook is not installed: pip install -e plugins/ralph (bash .ci/setup "
            "does), or beside a tool install: pipx inject ralph-context ./plugins/ralph",
            2,
        ) from None
    if not prompt.is_file():
        raise fail(f"prompt file {str(prompt)!r} does not exist", 2)
    settings = load_settings(config, log_level)
    try:
        handle = run_with_memory(
            prompt, settings=settings, agent=agent, max_iterations=max_iterations, server=server
        )
    except ValueError as exc:  # Ralph's "Unknown tool": the agent is not available here
        raise fail(f"Ralph cannot use agent {agent!r}: {exc}", 2) from None
    table = Table("iteration", "tier", "items", "why not better")
    for record in handle.tiers:
        table.add_row(str(record.iteration), record.tier.value, str(record.items), record.reason)
    err.print(table)
    err.print(f"{len(handle.tiers)} iterations; last tier: {handle.current_tier or 'none'}")
