"""The real Ralph orchestrator (1.2.3), driven without an LLM.

A scripted ``ToolAdapter`` answers each iteration from a list and keeps every prompt it was
given. The environment Ralph needs: a temp working dir (it writes ``.agent/`` and
``prompts/archive``), a git repo with an identity (it commits checkpoints), no 2 s pauses
between iterations, and its signal handlers put back afterwards.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from ralph_orchestrator import orchestrator as orchestrator_module
from ralph_orchestrator.adapters.base import ToolAdapter, ToolResponse
from ralph_orchestrator.orchestrator import RalphOrchestrator

from ralph_context_ralph import Handle, attach

Step = str | Any  # a literal output, a ToolResponse, or prompt -> ToolResponse


class ScriptedAdapter(ToolAdapter):  # type: ignore[misc]
    """Answers iteration n with ``script[n-1]``; records the prompts it receives."""

    def __init__(self, script: Sequence[Step]) -> None:
        self.script = list(script)
        self.prompts: list[str] = []
        super().__init__("claude")

    def check_availability(self) -> bool:
        return True

    def execute(self, prompt: str, **kwargs: Any) -> ToolResponse:
        raise AssertionError("Ralph 1.2 calls aexecute")

    async def aexecute(self, prompt: str, **kwargs: Any) -> ToolResponse:
        self.prompts.append(prompt)
        step = self.script[min(len(self.prompts), len(self.script)) - 1]
        if isinstance(step, str):
            return ToolResponse(success=True, output=step)
        if isinstance(step, ToolResponse):
            return step
        return step(prompt)


class ScriptedOrchestrator(RalphOrchestrator):  # type: ignore[misc]
    """Ralph with the scripted adapter as its only adapter (``claude``)."""

    def __init__(self, adapter: ScriptedAdapter, **kwargs: Any) -> None:
        self._scripted = adapter
        super().__init__(**kwargs)

    def _initialize_adapters(self) -> dict[str, ToolAdapter]:
        return {"claude": self._scripted}


def make_orchestrator(
    workdir: Path, task: str, script: Sequence[Step], *, iterations: int
) -> tuple[ScriptedOrchestrator, ScriptedAdapter]:
    prompt = workdir / "PROMPT.md"
    prompt.write_text(task, encoding="utf-8")
    adapter = ScriptedAdapter(script)
    orchestrator = ScriptedOrchestrator(
        adapter,
        prompt_file_or_config=str(prompt),
        max_iterations=iterations,
        archive_dir=str(workdir / "prompts" / "archive"),
    )
    return orchestrator, adapter


def run_attached(orchestrator: RalphOrchestrator, source: Any, **options: Any) -> Handle:
    """Attach memory, run Ralph's loop to its end, detach; the handle keeps the tiers."""
    handle = attach(orchestrator, source, **options)
    try:
        orchestrator.run()
    finally:
        handle.detach()
    return handle


class _FastAsyncio(types.ModuleType):
    """``asyncio`` as Ralph's module sees it, minus the waiting in ``sleep``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    @staticmethod
    async def sleep(delay: float, result: Any = None) -> Any:
        return await asyncio.sleep(0, result)


@pytest.fixture
def ralph_workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    workdir = tmp_path / "project"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Ralph Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "ralph@example.invalid")
    subprocess.run(["git", "init", "-q"], cwd=workdir, check=True)
    # Only Ralph's module sees the shim: the bridge's own loop keeps real sleeps.
    monkeypatch.setattr(orchestrator_module, "asyncio", _FastAsyncio("asyncio"))
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield workdir
    for sig, handler in saved.items():
        signal.signal(sig, handler)
