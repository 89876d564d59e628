"""The first prompt's answer while the project's server is starting: the store read in a
process of its own, on the text tier, with the server's own code.

The hook is a messenger (``hook``): when no server answers it starts one, which takes
seconds (its imports, the model, the store). Before, it answered with nothing meanwhile, so
the first prompts of a session got no memory (the first 7 in a 20 s window under load).
Now, for the events that only read (``SessionStart``, ``UserPromptSubmit``), the hook runs
this module as a child process (``python -m ralph_context.integrations.agents.cold
CLIENT``, the payload on stdin, the context on stdout), bounded by the hook's wait: the
store opened read-only beside whoever writes it (the server being started), searched with
the same events, push gate and renderer as the server (``server.agents.events``), without
the model.

Why the text tier, measured in a fresh process on the store of one note (2 cores; the
figures in ``docs/agents.md``): the imports cost most (5-9 s at load 15-18, LanceDB's 3.9 s
of them), the engine's start 0.3 s and the search 20-120 ms; loading the model costs another
2.8-4.0 s at that load (onnxruntime, the tokenizer, two sessions), and waiting for the server
its whole start (12-18 s at load 12). BM25's evidence alone passes the text tier's
gate (``retrieval/gate.py``) for a prompt that shares the note's words; one that asks in
other words waits for the server. A child, not a thread: the hook stays standard-library
only, and a child past its time is killed, where a thread in an import could not be.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

from ralph_context._logging import configure_logging
from ralph_context.config import EmbeddingsSettings, Settings
from ralph_context.embeddings.local import LocalEmbedder
from ralph_context.engine import Engine
from ralph_context.errors import ModelError, RalphContextError, StoreError
from ralph_context.integrations.agents.hook import READS
from ralph_context.server.agents.events import AgentEvents

__all__ = ["answer", "main"]


def _no_model(settings: EmbeddingsSettings) -> LocalEmbedder:
    raise ModelError("the first prompt is answered without the model (text tier)")


async def answer(client: str, payload: dict[str, Any], settings: Settings) -> tuple[str, str]:
    """The context for ``payload`` from the store ``settings`` name, read-only, and a word
    on what was done; nothing when there is no store yet."""
    if str(payload.get("hook_event_name")) not in READS:
        return "", "not a read"
    try:
        async with Engine(settings, read_only=True, model_loader=_no_model) as engine:
            async with anyio.create_task_group() as group:
                context, action = await AgentEvents(engine, settings.agents, group).handle(
                    client, payload
                )
                group.cancel_scope.cancel()
    except StoreError:  # no store yet (a fresh project): nothing to answer from
        return "", "no store yet"
    return context, f"read-only, {action}"


def main() -> None:
    """``python -m ralph_context.integrations.agents.cold CLIENT``: the payload on stdin,
    one JSON line ``{"context", "action"}`` on stdout; exit 0 with nothing on a failure."""
    configure_logging("CRITICAL")  # the model's absence is this answer's design, not news
    try:
        payload = json.loads(sys.stdin.buffer.read())
        settings = Settings.load(None)
        context, action = anyio.run(answer, sys.argv[1], payload, settings)
    except (RalphContextError, ValueError, OSError, KeyError, IndexError) as exc:
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        return
    sys.stdout.write(json.dumps({"context": context, "action": action}) + "\n")


if __name__ == "__main__":
    main()
