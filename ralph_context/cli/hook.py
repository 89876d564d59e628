"""``ralph-context hook``: the command Ralph v2's lifecycle hooks run; ``hook claude`` and
``hook codex`` are the ones those agents' own hooks run (``agents.hook``).

Ralph runs it without a shell, in the loop workspace, with the payload on stdin, and counts
it failed on a non-zero exit, a timeout, or (with ``mutate`` on) stdout that is not
``{"metadata": {...}}``. So whatever happens here it exits 0, prints nothing on stdout,
and says what went wrong in one line on stderr; its own deadline ends it well before
Ralph's timeout kills it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import anyio
import typer

from ralph_context.cli.base import AgentName

__all__ = ["hook_command"]


def hook_command(
    client: Annotated[
        AgentName | None,
        typer.Argument(
            help="claude or codex: the agent whose hook runs this (none: Ralph v2's hooks)."
        ),
    ] = None,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline",
            min=1.0,
            max=3600.0,
            help="Seconds the hook may take; keep it under the hook's timeout_seconds.",
        ),
    ] = 20.0,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Settings file (default: the workspace's ralph.yml)."),
    ] = None,
    log_level: Annotated[
        str | None, typer.Option("--log-level", help="Log level on stderr (default WARNING).")
    ] = None,
) -> None:
    """Run by Ralph v2's hooks, or an agent's (payload on stdin); never fails either."""
    raw = sys.stdin.buffer.read()
    if client is not None:
        # Reached with options (``--config``); the bare form skips Typer (``__main__``).
        from ralph_context.integrations.agents.hook import run as run_agent_hook

        answer = run_agent_hook(client.value, raw)
        if answer:
            sys.stdout.write(answer)
            sys.stdout.flush()
        return
    try:
        _run(raw, deadline, config, log_level)
    except Exception as exc:  # the loop must go on whatever failed here
        _say(f"skipped ({type(exc).__name__}: {exc})")


def _run(raw: bytes, deadline: float, config: Path | None, log_level: str | None) -> None:
    from ralph_context.integrations.ralph_v2.payload import (
        WORK_EVENTS,
        PayloadRefused,
        read_payload,
    )

    try:
        payload = read_payload(raw)
    except PayloadRefused as exc:
        _say(f"ignored: {exc}")
        return
    if payload.event not in WORK_EVENTS:
        return
    # Imported only for work: a hook process starts for every event, and these take ~1 s.
    from ralph_context._logging import configure_logging
    from ralph_context.config import Settings, default_file
    from ralph_context.integrations.ralph_v2.client import open_memory
    from ralph_context.integrations.ralph_v2.hook import handle

    workspace = Path(payload.loop.workspace)
    if workspace.is_dir():
        os.chdir(workspace)  # relative store paths are the workspace's, as Ralph's are
    configure_logging(log_level)
    settings = Settings.load(config or default_file(Path.cwd()))

    async def work() -> None:
        with anyio.fail_after(deadline):
            async with open_memory(settings) as memory:
                report = await handle(
                    payload,
                    memory,
                    max_items=settings.retrieval.max_items_per_query,
                    gate=settings.push_gate("loop"),
                )
        _say(
            f"{payload.phase_event} iteration {payload.iteration.current}: "
            f"recorded {report.recorded}, synced {report.synced}, forgot {report.forgotten}, "
            f"injected {report.injected} ({report.gated} under the push gate)"
            + (f" ({'; '.join(report.skipped)})" if report.skipped else "")
        )

    anyio.run(work)


def _say(text: str) -> None:
    """One line on stderr (Ralph keeps 8 kB of it per hook run, in its telemetry)."""
    sys.stderr.write("ralph-context hook: " + " ".join(text.split()) + "\n")
