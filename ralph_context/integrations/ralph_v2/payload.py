"""The JSON a Ralph v2 hook gets on stdin (schema version 1), checked.

Ralph (v2.10.1, ``crates/ralph-core/src/hooks/engine.rs``) writes it without a trailing
newline and closes stdin. Its keys are read by name and unknown ones ignored, so a later
Ralph adding fields still works; a new schema version or an event this code does not know
is refused with :class:`PayloadRefused`, which the hook logs and exits 0 on (a hook must
never fail the loop for being older than Ralph).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["EVENTS", "WORK_EVENTS", "HookPayload", "PayloadRefused", "read_payload"]

SCHEMA_VERSION = 1
# The six events, each with a ``pre`` and a ``post`` phase: twelve phase-events.
EVENTS = (
    "loop.start",
    "iteration.start",
    "plan.created",
    "human.interact",
    "loop.complete",
    "loop.error",
)

# The events the hook does something on (see ``hook``); the others return at once.
WORK_EVENTS = ("iteration.start", "loop.complete", "loop.error")


class PayloadRefused(ValueError):
    """Not a payload this version handles; the message says why."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class LoopInfo(_Part):
    id: str
    is_primary: bool = True
    workspace: str
    repo_root: str | None = None
    pid: int | None = None


class IterationInfo(_Part):
    current: int = Field(ge=0)
    max: int | None = Field(default=None, ge=0)


class HookContext(_Part):
    active_hat: str | None = None
    selected_hat: str | None = None
    selected_task: str | None = None
    termination_reason: str | None = None
    human_interact: dict[str, Any] | None = None


class HookPayload(_Part):
    """One hook call: which boundary of which loop, at which iteration."""

    schema_version: int
    phase: Literal["pre", "post"]
    event: str
    phase_event: str
    timestamp: str
    loop: LoopInfo
    iteration: IterationInfo
    context: HookContext = HookContext()
    metadata: dict[str, Any] = Field(default_factory=dict)


def read_payload(raw: str | bytes) -> HookPayload:
    """The payload in ``raw`` (stdin as Ralph wrote it).

    Raises:
        PayloadRefused: Not JSON, another schema version, an unknown event, or a field of
            the wrong shape; the message names it.
    """
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise PayloadRefused(f"the hook payload is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PayloadRefused(f"the hook payload is a JSON {type(data).__name__}, not an object")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise PayloadRefused(
            f"hook payload schema_version {version!r} is not {SCHEMA_VERSION}, the one this "
            "ralph-context reads; upgrade ralph-context"
        )
    try:
        payload = HookPayload.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise PayloadRefused(f"the hook payload is malformed: {problems}") from None
    if payload.event not in EVENTS or payload.phase_event != f"{payload.phase}.{payload.event}":
        raise PayloadRefused(
            f"hook event {payload.phase_event!r} is not one this ralph-context knows "
            f"({', '.join(EVENTS)}, each pre or post)"
        )
    return payload
