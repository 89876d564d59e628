"""``packs:``: the list form and the mapping form, each pack's own switch, the environment,
and a bad name told as the pack it is not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ralph_context.config import Settings
from ralph_context.errors import ConfigError


def _load(tmp_path: Path, packs: str) -> Settings:
    path = tmp_path / "ralph.yaml"
    path.write_text(f"learning:\n  mcp_context:\n    packs: {packs}\n", encoding="utf-8")
    return Settings.load(path)


def test_no_pack_is_served_unless_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings.load(None).packs.served() == frozenset()


@pytest.mark.parametrize(
    ("written", "served"),
    [
        ("[prompts, project]", {"prompts", "project"}),
        ("prompts, evaluation", {"prompts", "evaluation"}),  # one string, comma-separated
        ("[prompt_learning, curation]", {"prompts", "curation"}),  # the section's name
        ("{enabled: [project]}", {"project"}),
        ("[]", set()),
    ],
)
def test_the_list_form_and_the_mapping_form_name_the_same_packs(
    tmp_path: Path, written: str, served: set[str]
) -> None:
    assert _load(tmp_path, written).packs.served() == served


def test_a_packs_own_switch_decides_whatever_the_list_says(tmp_path: Path) -> None:
    """A file from when every pack was on (``project: {enabled: true}``) keeps its meaning;
    ``enabled: false`` takes a listed pack off."""
    settings = _load(
        tmp_path,
        "{enabled: [prompts, evaluation], evaluation: {enabled: false}, "
        "project: {enabled: true}, prompt_learning: {ema_alpha: 0.5}}",
    )
    assert settings.packs.served() == {"prompts", "project"}
    assert settings.packs.prompt_learning.ema_alpha == 0.5


def test_the_environment_sets_the_list_or_one_packs_switch_over_a_listing_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RALPH_CONTEXT_PACKS__PROMPT_LEARNING__ENABLED", "false")
    assert _load(tmp_path, "[prompts, project]").packs.served() == {"project"}
    monkeypatch.delenv("RALPH_CONTEXT_PACKS__PROMPT_LEARNING__ENABLED")
    monkeypatch.setenv("RALPH_CONTEXT_PACKS", "curation,project")
    assert _load(tmp_path, "[prompts]").packs.served() == {"curation", "project"}
    monkeypatch.setenv("RALPH_CONTEXT_PACKS", '["evaluation"]')
    assert _load(tmp_path, "[prompts]").packs.served() == {"evaluation"}


def test_overrides_take_the_list_form_and_keep_the_packs_keys() -> None:
    settings = Settings().with_overrides(packs={"prompt_learning": {"ema_alpha": 0.5}})
    listed = settings.with_overrides(packs=["prompts"])
    assert listed.packs.served() == {"prompts"}
    assert listed.packs.prompt_learning.ema_alpha == 0.5


@pytest.mark.parametrize(
    ("written", "told"),
    [
        ("[promts]", "unknown pack 'promts' (did you mean 'prompts'?)"),
        ("[project, evals]", "unknown pack 'evals'"),
        ("{enabled: [3]}", "unknown pack 3"),
    ],
)
def test_a_bad_pack_name_names_the_key_and_the_packs_there_are(
    tmp_path: Path, written: str, told: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        _load(tmp_path, written)
    message = str(raised.value)
    assert f"learning.mcp_context.packs: {told}" in message, message
    assert message.endswith("the packs are prompts, project, evaluation, curation")


def test_serve_stops_on_a_bad_pack_name_with_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "ralph.yaml"
    config.write_text("learning:\n  mcp_context:\n    packs: [projects]\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ralph_context", "--config", str(config), "serve"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "unknown pack 'projects' (did you mean 'project'?)" in done.stderr
    assert not (tmp_path / ".agent").exists()  # stopped before opening any store
