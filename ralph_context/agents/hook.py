"""``ralph-context hook claude`` / ``hook codex``: the command the agents' hooks run.

The contract with the host (Claude Code, Codex): one process per event, the JSON payload
on stdin (``hook_event_name`` says which), exit 0 and stdout either empty or exactly what
the host parses as context. A hook is on the user's critical path and must never block or
break a prompt, so everything that goes wrong here ends in exit 0, no output, one line on
stderr and one line appended to ``hooks.log`` in the store's local folder.

This slice dispatches only: every event is recognised and answered with nothing (the
behaviour per event, from the session brief to error capture, comes later). Inside a
Ralph v2 iteration, the events Ralph's own hook covers are deferred to it (``ralph``).

``RALPH_CONTEXT_HOOK_TRACE=<file>`` appends one JSON line per call (client, event, session,
what was done) to that file: a person can see that the hooks fire, and the tests that run
the real ``claude`` binary check it. The import path stays light (no LanceDB, no
onnxruntime): the test suite checks ``sys.modules`` after a call.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CLIENTS", "EVENTS", "TRACE_ENV", "run"]

TRACE_ENV = "RALPH_CONTEXT_HOOK_TRACE"
LOG_NAME = "hooks.log"
# The events init wires for each client (``setup``); another event is answered with nothing.
EVENTS: dict[str, tuple[str, ...]] = {
    "claude": (
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "PreCompact",
        "SessionEnd",
    ),
    "codex": (
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        "Stop",
        "PreCompact",
        "SessionEnd",
    ),
}
CLIENTS = tuple(EVENTS)


class PayloadProblem(ValueError):
    """The payload on stdin is not one this hook reads."""


def run(client: str, raw: bytes, environ: Mapping[str, str] | None = None) -> None:
    """Handle one hook call; never raises (``Exception``), never prints on stdout."""
    env = os.environ if environ is None else environ
    started = time.perf_counter()
    payload: dict[str, Any] = {}
    try:
        payload = _read(raw)
        action = _dispatch(client, str(payload["hook_event_name"]), env)
        _trace(env, client, payload, action, started)
    except Exception as exc:  # a hook must never break the agent's prompt
        _log_failure(client, payload, exc)


def _read(raw: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise PayloadProblem(f"the hook payload is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise PayloadProblem(f"the hook payload is a JSON {type(payload).__name__}, not an object")
    if not isinstance(payload.get("hook_event_name"), str):
        raise PayloadProblem("the hook payload has no hook_event_name")
    return payload


def _dispatch(client: str, event: str, environ: Mapping[str, str]) -> str:
    """What was done for ``event``: the hook's answer for now is always nothing."""
    if event not in EVENTS[client]:
        return "ignored: not an event this hook handles"
    from ralph_context.agents.ralph import defers_to_ralph

    # Ralph v2 runs Codex as a backend too; its memories.md reaches any backend's prompt.
    if defers_to_ralph(event, environ):
        return "deferred: Ralph v2's hook covers this event in its iterations"
    return "none: behaviour per event is not implemented yet"


def _trace(
    environ: Mapping[str, str],
    client: str,
    payload: dict[str, Any],
    action: str,
    started: float,
) -> None:
    target = environ.get(TRACE_ENV)
    if not target:
        return
    line = {
        "client": client,
        "event": payload.get("hook_event_name"),
        "session_id": payload.get("session_id"),
        "action": action,
        "ms": round((time.perf_counter() - started) * 1000, 1),
    }
    with open(target, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def _log_failure(client: str, payload: dict[str, Any], exc: Exception) -> None:
    event = payload.get("hook_event_name", "?")
    line = f"ralph-context hook {client} {event}: skipped ({type(exc).__name__}: {exc})"
    line = " ".join(line.split())
    try:
        sys.stderr.write(line + "\n")
        cwd = payload.get("cwd")
        path = _log_path(Path(cwd) if isinstance(cwd, str) else Path.cwd())
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {line}\n")
    except Exception:  # nowhere left to say it; the prompt goes on
        return


def _log_path(cwd: Path) -> Path:
    """``hooks.log`` in the store's local folder (beside the store, ``.agent/`` by default),
    found as the server finds its config; the project's ``.agent/`` when that fails."""
    try:
        from ralph_context.config import Settings, default_file
        from ralph_context.config.loading import CONFIG_ENV, WORKSPACE_ENV

        explicit = None
        if not os.environ.get(CONFIG_ENV) and not os.environ.get(WORKSPACE_ENV):
            explicit = default_file(cwd)
        return Settings.load(explicit).local_folder() / LOG_NAME
    except Exception:
        return cwd / ".agent" / LOG_NAME
