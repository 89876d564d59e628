"""``ralph-context hook claude`` / ``hook codex``: the command the agents' hooks run.

The contract with the host (Claude Code, Codex): one process per event, the JSON payload
on stdin (``hook_event_name`` says which), exit 0 and stdout either empty or what the host
reads as context (``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``).
A hook is on the user's critical path and must never block or break a prompt, so whatever
goes wrong here ends in exit 0, no output, one line on stderr and one in ``hooks.log``.

This process is only a messenger, so that it answers within the 250 ms a prompt can wait:
it imports the standard library only (no LanceDB, no model, no pydantic; the tests check
``sys.modules``), finds the project (``project``) and hands the payload to the project's
shared server, which holds the store and the model and does the work (``events``). When
no server answers, it starts one detached and keeps a capture in the spool for the server
to store; an event that only reads (the session's brief, a prompt) is answered meanwhile
from the store read-only, on the text tier, by a child process bounded by
``RALPH_CONTEXT_HOOK_COLD_SECONDS`` (4 s: the agents' hook timeout init writes is 5 s; see
``cold``), and with nothing when that finds nothing or takes longer.

``RALPH_CONTEXT_HOOK_TRACE=<file>`` appends one JSON line per call (client, event, session,
what was done, milliseconds) to that file: a person can see that the hooks fire, and the
tests that run the real ``claude`` binary check it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from ralph_context.server.agents.post import post
from ralph_context.server.agents.project import (
    ServerNote,
    agent_folder,
    bearer_token,
    project_root,
    read_server,
    spool,
    start_server,
)

# Only for the type checker: ``typing`` costs ~10 ms of a hook's start (see ``post``).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["CAPTURES", "CLIENTS", "COLD_ENV", "EVENTS", "READS", "TRACE_ENV", "main", "run"]

TRACE_ENV = "RALPH_CONTEXT_HOOK_TRACE"
COLD_ENV = "RALPH_CONTEXT_HOOK_COLD_SECONDS"
# Seconds from the call's start within which a hook that found no server may answer from
# the store read-only (``cold``): under the 5 s timeout init writes for the agents, with
# the interpreter's own start (~0.1-0.5 s) before it.
COLD_SECONDS = 4.0
# The events that only read: answered from the store read-only while the server starts.
READS = frozenset({"SessionStart", "UserPromptSubmit"})
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
# Events whose payload is worth keeping when no server answers: what happened, not a question.
CAPTURES = frozenset({"PostToolUse", "PostToolUseFailure", "Stop"})
# Seconds to wait for the server's answer, whatever the event: a hook returns within 1 s
# with the server hung or slow (a capture is acknowledged before it is stored; a search at
# 100k items takes tens of milliseconds).
_WAIT = 0.8
# A payload larger than this is cut before it is sent (tool output can be megabytes).
_MAX_FIELD_CHARS = 64_000
# In the spool, less: the spool is redacted in this process before it is written.
_SPOOL_FIELD_CHARS = 8_000


class PayloadProblem(ValueError):
    """The payload on stdin is not one this hook reads."""


def main(client: str) -> None:
    """The console script's fast path: stdin in, the host's answer (if any) out; exit 0
    whatever happens (the answer is ASCII JSON: any stdout encoding takes it)."""
    try:
        answer = run(client, sys.stdin.buffer.read())
        if answer:
            sys.stdout.write(answer)
            sys.stdout.flush()
    except BaseException:  # even a broken pipe must not fail the prompt
        return


def run(client: str, raw: bytes, environ: Mapping[str, str] | None = None) -> str:
    """Handle one hook call: what to print on stdout (often nothing). Never raises."""
    env = os.environ if environ is None else environ
    started = time.perf_counter()
    payload: dict[str, Any] = {}
    try:
        payload = _read(raw)
        event = str(payload["hook_event_name"])
        context, action = _dispatch(client, event, payload, env, started)
        _trace(env, client, payload, action, started)
        if not context:
            return ""
        output = {"hookEventName": event, "additionalContext": context}
        return json.dumps({"hookSpecificOutput": output})
    except Exception as exc:  # a hook must never break the agent's prompt
        _log_failure(client, payload, exc)
        try:
            _trace(env, client, payload, f"failed: {type(exc).__name__}", started)
        except Exception:  # the trace is for people looking; it must not break the hook
            pass
        return ""


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


def _dispatch(
    client: str, event: str, payload: dict[str, Any], environ: Mapping[str, str], started: float
) -> tuple[str, str]:
    """The context to give the agent for ``event`` and a word on what was done."""
    if event not in EVENTS[client]:
        return "", "ignored: not an event this hook handles"
    if event in _RALPH_EVENTS and environ.get("RALPH_WORKSPACE_ROOT"):
        from ralph_context.integrations.agents.ralph import defers_to_ralph

        # Ralph v2 runs Codex as a backend too; its memories.md reaches any backend's prompt.
        if defers_to_ralph(event, environ):
            return "", "deferred: Ralph v2's hook covers this event in its iterations"
    cwd = payload.get("cwd")
    root = project_root(Path(cwd) if isinstance(cwd, str) and cwd else Path.cwd(), environ)
    note = read_server(root)
    if note is not None:
        try:
            return _ask(note, client, payload, environ)
        except ConnectionRefusedError:
            pass  # a note left by a server that is gone: start another
    kept = event in CAPTURES and spool(root, client, _trimmed(payload, _SPOOL_FIELD_CHARS))
    if read_server(root) is not None:  # came up while this hook spooled: it takes the spool
        return "", f"server just started; {'kept for it' if kept else 'nothing injected'}"
    launched = start_server(root)
    what = "server starting" if launched else "no server answered (a start is under way)"
    if event in READS and _may_hold_a_store(root, environ):
        context, said = _cold(client, payload, root, environ, started)
        return context, f"{what}; {said}"
    return "", f"{what}; {'kept for it' if kept else 'nothing injected'}"


def _may_hold_a_store(root: Path, environ: Mapping[str, str]) -> bool:
    """Whether the project may have a store to read: the default one is there, or a
    configuration may name another (a fresh project's first hooks skip a child that
    would find nothing, seconds of imports later)."""
    if (agent_folder(root) / "context").is_dir():
        return True
    named = ("RALPH_CONTEXT_CONFIG", "RALPH_CONTEXT_STORAGE__PATH", "RALPH_WORKSPACE_ROOT")
    if any(environ.get(name) for name in named):
        return True
    return any((root / name).is_file() for name in ("ralph.yaml", "ralph.yml"))


def _cold(
    client: str, payload: dict[str, Any], root: Path, environ: Mapping[str, str], started: float
) -> tuple[str, str]:
    """The answer of ``cold`` in a child process, within its seconds (killed past them)."""
    import subprocess  # here: a hook that finds its server never needs it

    try:
        budget = float(environ.get(COLD_ENV) or COLD_SECONDS)
    except ValueError:
        budget = COLD_SECONDS
    wait = budget - (time.perf_counter() - started)
    if wait <= 0:
        return "", "nothing injected (no time left for the store's read-only answer)"
    command = [sys.executable, "-m", "ralph_context.integrations.agents.cold", client]
    body = json.dumps(_trimmed(payload), ensure_ascii=False).encode("utf-8")
    try:
        done = subprocess.run(
            command, input=body, capture_output=True, cwd=root, env=dict(environ), timeout=wait
        )
    except subprocess.TimeoutExpired:
        return "", f"nothing injected (the store's read-only answer took over {wait:.1f} s)"
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        problem = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
        return "", f"nothing injected (the store's read-only answer failed: {problem[0]:.200})"
    return str(answer.get("context") or ""), str(answer.get("action") or "")


_RALPH_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "Stop"})


def _ask(
    note: ServerNote, client: str, payload: dict[str, Any], environ: Mapping[str, str]
) -> tuple[str, str]:
    """POST the payload to the server's hook route; its answer is ``{context, action}``."""
    path = note.mcp_path.removesuffix("/mcp") + f"/hooks/{client}"
    body = json.dumps(_trimmed(payload), ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    token = bearer_token(note, environ)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    status, text = post(note.base_url, path, body, headers, _WAIT)
    if status != 200:
        raise RuntimeError(f"the server answered {status}: {text[:200]!r}")
    answer = json.loads(text)
    return str(answer.get("context") or ""), str(answer.get("action") or "")


def _trimmed(payload: dict[str, Any], limit: int = _MAX_FIELD_CHARS) -> dict[str, Any]:
    """``payload`` with every long text cut to its start and end (the server trims further)."""

    def cut(value: Any) -> Any:
        if isinstance(value, str) and len(value) > limit:
            half = limit // 2
            return value[:half] + "\n[...]\n" + value[-half:]
        if isinstance(value, dict):
            return {key: cut(item) for key, item in value.items()}
        if isinstance(value, list):
            return [cut(item) for item in value[:200]]
        return value

    return {key: cut(value) for key, value in payload.items()}


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
    line = " ".join(line.split())[:500]
    try:
        sys.stderr.write(line + "\n")
        cwd = payload.get("cwd")
        root = project_root(Path(cwd) if isinstance(cwd, str) and cwd else Path.cwd())
        folder = agent_folder(root)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(folder / LOG_NAME, "a", encoding="utf-8") as out:
            out.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {line}\n")
    except Exception:  # nowhere left to say it; the prompt goes on
        return
