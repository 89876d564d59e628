"""What each hook event of Claude Code or Codex does with the engine.

- ``SessionStart``: a brief (the open task, recent errors nothing has fixed yet, the
  latest fixes, the most useful skills) within ``agents.session_budget_tokens``, of items
  with evidence behind them only (``evidence``): no client can write a standing injection.
- ``UserPromptSubmit``: retrieval for the prompt within ``agents.prompt_budget_tokens``,
  the items that pass the push gate (``retrieval/gate.py``): nothing when nothing passes (no
  filler; a prompt no note answers gets nothing), and no item twice in a session unless it
  changed.
- ``PostToolUseFailure`` (and a Codex ``PostToolUse`` whose command failed): the failure
  is stored as an ``error``, and the answer says how the same or a similar failure was
  fixed before, when memory knows.
- ``PostToolUse``: a command and its output as ``output``, an edit as a ``file`` note;
  when a command that failed (here or in an earlier session) succeeds, the steps taken
  since are stored as a ``fix`` skill linked to the error (``resolves``), so "how was this
  fixed" has an answer.
- ``Stop``: the turn as an iteration, its last answer as the summary.
- ``PreCompact``: the session's record of what it was given is cleared (the model loses
  it in the compaction). ``SessionEnd``: the session's captures are waited for (0.5 s at
  most; they are stored either way); its record stays, since ``--continue``/``--resume``
  go on with its id.

What is pushed is checked against the code first (``codebase``): an item whose every file
it named was deleted since is left out, one whose files changed is marked on its line and
placed after the others; a fix replaced by a newer fix of the same failure gives way to it.

Captures are acknowledged at once and stored behind the answer, in order per session, so
a hook on a tool call costs the agent a round trip, not an embedding and a commit. Every
item carries its provenance (client, session, folder, branch; ``capture.provenance``) and
the session as its ``source``, so items of one session are neighbours in retrieval.
Failures and fixes are read and linked in ``fixes``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ralph_context import origin
from ralph_context._logging import get_logger
from ralph_context.codebase import for_push
from ralph_context.config.agents import AgentsSettings
from ralph_context.engine import Engine
from ralph_context.models import ContextItem, IterationResult, JsonValue
from ralph_context.rendering import Section, pushed
from ralph_context.retrieval import gate
from ralph_context.server.agents.capture import edit_of, failure_of, provenance, ran_of, trim
from ralph_context.server.agents.evidence import has_evidence, own_record
from ralph_context.server.agents.fixes import FIX_TAG, Fixes, without_superseded
from ralph_context.server.agents.sessions import Session, SessionBook

__all__ = ["FIX_TAG", "AgentEvents"]

log = get_logger("ralph_context.agents")

# Seconds SessionEnd waits for its session's captures: within the hook's own 0.8 s wait
# (the captures are stored either way).
_END_WAIT = 0.5
_BRIEF_ERRORS = 3
_BRIEF_FIXES = 3
_BRIEF_SKILLS = 3
# Captures of one session waiting to be stored; more are dropped (and logged).
MAX_PENDING = 64

Handler = Callable[[str, dict[str, Any], Session], Awaitable[tuple[str, str]]]


class AgentEvents:
    """One namespace's hook events, answered with its engine.

    Args:
        engine: The namespace's engine.
        settings: ``agents:`` switches and budgets.
        group: Where captures are stored after the answer (the server's lifetime).
    """

    def __init__(self, engine: Engine, settings: AgentsSettings, group: TaskGroup) -> None:
        self.engine = engine
        self.settings = settings
        self.group = group
        self.sessions = SessionBook()
        self._turns = anyio.Lock()
        self.fixes = Fixes(engine, self._store)
        # What pushed items are checked against: the checkout the agent works in, among
        # the worktrees of the engine's repository (the project's), whose files its stores
        # were tied to.
        self.code = engine.codebase
        self._handlers: dict[str, Handler] = {
            "SessionStart": self._session_start,
            "UserPromptSubmit": self._prompt,
            "PostToolUseFailure": self._tool_failed,
            "PostToolUse": self._tool_used,
            "Stop": self._stop,
            "PreCompact": self._pre_compact,
            "SessionEnd": self._session_end,
        }

    async def handle(self, client: str, payload: dict[str, Any]) -> tuple[str, str]:
        """The context for the agent (often empty) and a word on what was done."""
        if not self.settings.enabled:
            return "", "off: agents.enabled is false"
        handler = self._handlers.get(str(payload.get("hook_event_name")))
        if handler is None:
            return "", "ignored: not an event this hook handles"
        session = self.sessions.get(str(payload.get("session_id") or "-"))
        # What this event stores (now, or behind the answer) is the agent's hook's record.
        with origin.recorded_by(origin.agent_hook(client)):
            return await handler(client, payload, session)

    async def wait_for_captures(self, session_id: str, seconds: float) -> None:
        """Until the session's captures are stored, or ``seconds`` pass."""
        session = self.sessions.get(session_id)
        with anyio.move_on_after(seconds):
            while session.pending:
                await session.settled.wait()

    # -- the events ---------------------------------------------------------------------

    async def _session_start(
        self, client: str, payload: dict[str, Any], session: Session
    ) -> tuple[str, str]:
        if not self.settings.session_brief:
            return "", "off: agents.session_brief is false"
        engine = self.engine
        browsed = (await engine.browse(context_types=["task"], limit=20)).items
        tasks = [item for item in browsed if has_evidence(item)][:1]
        linked = (await engine.browse(context_types=["skill"], tags=[FIX_TAG], limit=50)).items
        # A fix is the hooks' own link of a failure to what resolved it, or one marked useful.
        fixes = [item for item in linked if has_evidence(item) and item.metadata.get("resolves")]
        fixed = {item.metadata.get("resolves") for item in fixes}
        errors = (await engine.browse(context_types=["error"], limit=20)).items
        open_errors = [item for item in errors if item.id not in fixed and own_record(item)][
            :_BRIEF_ERRORS
        ]
        skills = [
            item
            for item in await engine.skills()
            if FIX_TAG not in item.tags and has_evidence(item)
        ][:_BRIEF_SKILLS]
        recent = without_superseded(fixes)[:_BRIEF_FIXES]
        sections, marks = [], {}
        for title, items in (
            ("Open task", tasks),
            ("Recent errors not fixed yet", open_errors),
            ("Recent fixes", recent),
            ("Skills", skills),
        ):
            judged = for_push(items, self.code.at(payload.get("cwd")))
            marks.update(judged.marks)
            # A resumed session was given its brief already.
            sections.append(
                Section(title, [i for i in judged.items if session.fresh(i.id, i.content)])
            )
        text, shown = pushed(sections, self.settings.session_budget_tokens, marks)
        _mark(session, shown)
        return text, f"brief: {len(shown)} items"

    async def _prompt(
        self, client: str, payload: dict[str, Any], session: Session
    ) -> tuple[str, str]:
        if not self.settings.prompt_context:
            return "", "off: agents.prompt_context is false"
        prompt = str(payload.get("prompt") or "").strip()
        if not prompt:
            return "", "none: empty prompt"
        found = await self.engine.search(prompt, max_tokens=self.settings.prompt_budget_tokens)
        # Unasked: only what passes the push gate (nothing, for a prompt nothing answers).
        relevant = gate.pushed(found.items, self.engine.settings.push_gate())
        judged = for_push(
            await self.fixes.with_fixes([h.item for h in relevant]),
            self.code.at(payload.get("cwd")),
        )
        fresh = [item for item in judged.items if session.fresh(item.id, item.content)]
        text, shown = pushed(
            [Section("Relevant to this prompt", fresh)],
            self.settings.prompt_budget_tokens,
            judged.marks,
        )
        _mark(session, shown)
        repeated = len(judged.items) - len(fresh)
        held = len(found.items) - len(relevant)
        return text, (
            f"prompt: {len(shown)} items ({repeated} given before, {held} under the push gate, "
            f"{len(judged.marks)} marked stale, {judged.withheld} about deleted code, "
            f"tier {found.tier})"
        )

    async def _tool_failed(
        self, client: str, payload: dict[str, Any], session: Session
    ) -> tuple[str, str]:
        failure = failure_of(payload)
        if failure is None or not self.settings.capture_failures:
            return "", "none: not a command failure, or failures are not captured"
        session.failed_at[failure.command] = session.taken
        error = trim(failure.error, self.settings.max_captured_chars)
        # Said beside every failure it fixes, even if given before: this is the moment.
        fixes = for_push(
            await self.fixes.fixes_for(failure.command, error), self.code.at(payload.get("cwd"))
        )
        text, shown = pushed(
            [Section("This failure was seen before; how it was fixed", fixes.items)],
            self.settings.prompt_budget_tokens,
            fixes.marks,
        )
        _mark(session, shown)
        number = self.fixes.answer_failure()
        stored = self.fixes.store_failure(client, payload, failure, error, number)
        if self._later(session, stored):
            self.fixes.unstored(number)
        return text, f"failure stored; {len(shown)} fixes given"

    async def _tool_used(
        self, client: str, payload: dict[str, Any], session: Session
    ) -> tuple[str, str]:
        if failure_of(payload) is not None:  # Codex reports failures here
            return await self._tool_failed(client, payload, session)
        ran, edit = ran_of(payload), edit_of(payload)
        if ran is not None and self.settings.capture_commands:
            steps = session.steps_since(ran.command)
            failed_here = ran.command in session.failed_at
            session.failed_at.pop(ran.command, None)
            session.step(f"ran `{ran.command}`")
            self._later(session, self._store_run(client, payload, ran.command, ran.output))
            answered = self.fixes.answered
            fix = self.fixes.link(client, payload, ran.command, steps, failed_here, answered)
            self._later(session, fix)
            return "", "command stored"
        if edit is not None and self.settings.capture_edits:
            session.step(edit.summary)
            metadata = {**provenance(client, payload), "path": edit.path[:300]}
            self._later(session, self._store(client, payload, edit.summary, "file", metadata))
            return "", "edit stored"
        return "", "none: not a command or an edit, or its capture is off"

    async def _stop(
        self, client: str, payload: dict[str, Any], session: Session
    ) -> tuple[str, str]:
        if not self.settings.record_turns:
            return "", "off: agents.record_turns is false"
        summary = trim(str(payload.get("last_assistant_message") or ""), 4000)
        if not summary:
            return "", "none: the turn said nothing"
        steps = tuple(session.steps[-10:])
        self._later(session, self._record_turn(summary, steps))
        return "", "turn recorded"

    async def _pre_compact(
        self, client: str, payload: dict[str, Any], session: Session
    ) -> tuple[str, str]:
        session.injected.clear()
        return "", "compaction: what was given may be given again"

    async def _session_end(
        self, client: str, payload: dict[str, Any], session: Session
    ) -> tuple[str, str]:
        # The session's record stays (bounded): `claude --continue` resumes the same id.
        await self.wait_for_captures(str(payload.get("session_id") or "-"), _END_WAIT)
        return "", f"session ended ({session.pending} captures still being stored)"

    # -- writing (behind the answer) ----------------------------------------------------

    def _later(self, session: Session, work: Coroutine[Any, Any, object]) -> bool:
        """Run ``work`` after the answer, in the session's order; False: dropped."""
        if session.pending >= MAX_PENDING:  # a flood: keep the server's memory bounded
            work.close()
            log.warning("agent_capture_dropped", reason="too many captures waiting")
            return False
        if not session.pending:
            session.settled = anyio.Event()
        session.pending += 1

        async def run() -> None:
            try:
                async with session.order:
                    await work
            except Exception as exc:  # a capture that fails is logged; the agent went on
                log.warning("agent_capture_failed", error=f"{type(exc).__name__}: {exc}")
            finally:
                session.pending -= 1
                if not session.pending:
                    session.settled.set()

        self.group.start_soon(run)
        return True

    async def _store(
        self,
        client: str,
        payload: dict[str, Any],
        content: str,
        kind: str,
        metadata: dict[str, JsonValue],
        tags: tuple[str, ...] = (),
    ) -> ContextItem:
        return await self.engine.store(
            content,
            kind,
            tags=(*tags, client),
            metadata=metadata,
            source=f"{client}:{str(payload.get('session_id') or '-')[:80]}",
        )

    async def _store_run(
        self, client: str, payload: dict[str, Any], command: str, output: str
    ) -> None:
        if not output.strip():
            return  # a command that printed nothing says nothing worth retrieving
        content = f"$ {command}\n{trim(output, self.settings.max_captured_chars)}"
        metadata = {**provenance(client, payload), "command": command}
        await self._store(client, payload, content, "output", metadata)

    async def _record_turn(self, summary: str, steps: tuple[str, ...]) -> None:
        async with self._turns:  # two sessions must not take the same iteration number
            latest = self.engine.current_iteration
            result = IterationResult(
                iteration=latest + 1, success=True, summary=summary, tool_calls=steps
            )
            await self.engine.record_iteration(result)


def _mark(session: Session, items: list[ContextItem]) -> None:
    for item in items:
        session.mark(item.id, item.content)
