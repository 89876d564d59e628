"""``ralph-context ralph run``: the CLI builds Ralph, attaches memory, runs, reports tiers."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import cli


def test_ralph_run_builds_the_loop_with_memory_attached(ralph_workdir: Path) -> None:
    (ralph_workdir / "PROMPT.md").write_text("# Task\n\nTidy the README.\n", encoding="utf-8")
    done = cli("ralph", "run", "PROMPT.md", "--max-iterations", "0")
    assert "0 iterations; last tier: none" in done.stderr
    assert (ralph_workdir / ".agent" / "context" / "store.json").is_file()  # engine opened


def test_ralph_run_explains_what_it_cannot_do(ralph_workdir: Path) -> None:
    (ralph_workdir / "PROMPT.md").write_text("# Task\n", encoding="utf-8")
    unknown = cli("ralph", "run", "PROMPT.md", "--agent", "gemini", check=False)
    assert unknown.returncode == 2
    assert "Ralph cannot use agent 'gemini'" in unknown.stderr
    missing = cli("ralph", "run", "NOPE.md", check=False)
    assert missing.returncode == 2 and "prompt file 'NOPE.md' does not exist" in missing.stderr
