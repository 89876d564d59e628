"""``skillbook:``: the ACE skillbook whose skills the store indexes."""

from __future__ import annotations

from pathlib import Path

from ralph_context.config.section import Section

__all__ = ["SkillbookSettings"]


class SkillbookSettings(Section):
    """An ACE skillbook whose active skills are indexed as ``skill`` items."""

    enabled: bool = True
    # Relative to the project root (the config file's folder); a missing file is fine.
    path: Path = Path(".agent/skillbook/skillbook.json")
