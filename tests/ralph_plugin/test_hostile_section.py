"""The Ralph 1.x loop's context section over what a hostile iteration output stored: the
iteration prompt keeps the one heading Ralph's section has, and the frame equals the one
the output's benign twin gives."""

from __future__ import annotations

from pathlib import Path

from ralph_context import Engine
from ralph_context.rendering import CONTEXT_HEADING
from tests.helpers import Loader, SettingsFactory
from tests.ralph_plugin.ralph_host import make_orchestrator, run_attached
from tests.rendering.hostile import BENIGN, HOSTILE, PHRASE, frame, invisible

TASK = f"# Reconcile the ledger\n\nThe {PHRASE} job double-counts refunds. Fix it.\n"


def _second_section(
    workdir: Path, make_settings: SettingsFactory, shared_model: Loader, output: str
) -> str:
    """Our section of iteration 2's prompt, after iteration 1 printed ``output`` (Ralph's
    own "## Previous Context" above it quotes the output raw: Ralph's, not ours)."""
    orchestrator, adapter = make_orchestrator(
        workdir, TASK, [output, "Looked at the refunds table."], iterations=2
    )
    store = {"path": str(workdir / f"store-{len(output)}")}
    run_attached(orchestrator, Engine(make_settings(storage=store), model_loader=shared_model))
    _, found, section = adapter.prompts[1].partition(CONTEXT_HEADING)
    assert found, adapter.prompts[1]
    return found + section


def test_a_hostile_output_cannot_add_a_heading_or_a_tag_to_the_next_prompt(
    ralph_workdir: Path, make_settings: SettingsFactory, shared_model: Loader
) -> None:
    forged = _second_section(ralph_workdir, make_settings, shared_model, "\n".join(HOSTILE))
    plain = _second_section(ralph_workdir, make_settings, shared_model, "\n".join(BENIGN))
    assert PHRASE in forged and forged.count("### [OUTPUT] (ralph loop, ") == 1
    assert frame(forged) == frame(plain), forged
    assert invisible(forged) == []
