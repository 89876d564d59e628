"""ACE skillbooks: read both file formats, and write feedback back into their counts.

Two formats exist in the wild:

- v2 (``"schema_version": "2"``): skills carry ``section``, ``keywords``, ``issue``,
  ``insight``, ``helpful_count`` / ``harmful_count`` / ``neutral_count`` and ``active``.
- the older one (ACE's ``Skillbook.dumps``): skills carry ``content``, ``helpful`` /
  ``harmful`` / ``neutral`` and ``status`` (``active`` or ``invalid``).

In both, ``skills`` is an object keyed by id or a list of objects with an ``id``. The file is
ACE's, not ours: feedback changes one count and nothing else (key order, unknown fields,
indentation and the container shape survive), and is written to a temp file then renamed, so
ACE never reads a half-written skillbook. The ``ace-framework`` package is not needed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ralph_context.atomic import write_text_atomically
from ralph_context.errors import ConfigError, ItemNotFound

__all__ = [
    "FileSignature",
    "Skill",
    "Skillbook",
    "read_skillbook",
    "record_feedback",
    "signature",
    "usefulness",
]

Version = Literal["1", "2"]
_COUNTS: dict[Version, tuple[str, str, str]] = {
    "1": ("helpful", "harmful", "neutral"),
    "2": ("helpful_count", "harmful_count", "neutral_count"),
}


@dataclass(frozen=True)
class Skill:
    """One skill, whatever the file's format."""

    id: str
    text: str
    section: str
    keywords: tuple[str, ...]
    helpful: int
    harmful: int
    neutral: int
    active: bool

    @property
    def usefulness(self) -> float:
        return usefulness(self.helpful, self.harmful, self.neutral)


@dataclass(frozen=True)
class Skillbook:
    path: Path
    version: Version
    skills: tuple[Skill, ...]

    @property
    def active(self) -> tuple[Skill, ...]:
        return tuple(skill for skill in self.skills if skill.active and skill.text)


FileSignature = tuple[int, int]


def signature(path: Path) -> FileSignature | None:
    """What changes when the file does (mtime, size); ``None`` if there is no file."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return (stat.st_mtime_ns, stat.st_size)


def usefulness(helpful: int, harmful: int, neutral: int) -> float:
    """Counts as a usefulness in [0, 1]: the share of helpful votes with one imagined vote
    each way (so a new skill starts at 0.5, like any new item), neutral votes counting half."""
    return (helpful + 0.5 * neutral + 1.0) / (helpful + harmful + neutral + 2.0)


def read_skillbook(path: Path) -> Skillbook:
    """Parse ``path`` in either format.

    Raises:
        ConfigError: Not readable, not JSON, or not a skillbook (the message says which).
    """
    document, _layout = _load(path)
    version = _version(document, path)
    skills = tuple(_skill(raw, key, version, path) for key, raw in _entries(document, path))
    return Skillbook(path, version, skills)


def record_feedback(path: Path, skill_id: str, helpful: bool) -> Skill:
    """Add one helpful (or harmful) vote to ``skill_id``, atomically.

    Returns:
        The skill with its new counts.

    Raises:
        ConfigError: The file is not a skillbook.
        ItemNotFound: No skill has that id.
    """
    document, layout = _load(path)
    version = _version(document, path)
    for key, raw in _entries(document, path):
        if _skill_id(raw, key) != skill_id:
            continue
        field = _COUNTS[version][0 if helpful else 1]
        raw[field] = _count(raw, field, path) + 1
        if version == "1" and "updated_at" in raw:
            raw["updated_at"] = datetime.now(UTC).isoformat()
        _write(path, document, layout)
        return _skill(raw, key, version, path)
    raise ItemNotFound(f"no skill {skill_id!r} in {path}")


# --- parsing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """How the file was written, so a rewrite looks the same."""

    indent: int | None
    newline_at_end: bool


def _load(path: Path) -> tuple[dict[str, Any], _Layout]:
    try:
        text = path.read_text(encoding="utf-8")
        document = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"skillbook {path} is not readable JSON: {exc}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"skillbook {path} must be a JSON object")
    return document, _Layout(_indent_of(text), text.endswith("\n"))


def _indent_of(text: str) -> int | None:
    """The file's indentation (``None``: written on one line)."""
    match = re.search(r"\n( +)\S", text)
    return len(match.group(1)) if match else None


def _version(document: dict[str, Any], path: Path) -> Version:
    declared = document.get("schema_version")
    if declared is None:
        return "1"
    if str(declared) == "2":
        return "2"
    raise ConfigError(f"skillbook {path}: schema_version {declared!r} is not supported (1 or 2)")


def _entries(document: dict[str, Any], path: Path) -> list[tuple[str | None, dict[str, Any]]]:
    skills = document.get("skills", {})
    if isinstance(skills, dict):
        entries: list[tuple[str | None, Any]] = list(skills.items())
    elif isinstance(skills, list):
        entries = [(None, raw) for raw in skills]
    else:
        raise ConfigError(f"skillbook {path}: 'skills' must be an object or a list")
    for key, raw in entries:
        if not isinstance(raw, dict):
            raise ConfigError(f"skillbook {path}: skill {key!r} is not an object")
    return entries


def _skill_id(raw: dict[str, Any], key: str | None) -> str:
    return str(raw.get("id") or key or "")


def _skill(raw: dict[str, Any], key: str | None, version: Version, path: Path) -> Skill:
    skill_id = _skill_id(raw, key)
    if not skill_id:
        raise ConfigError(f"skillbook {path}: a skill has no id")
    helpful, harmful, neutral = (_count(raw, name, path) for name in _COUNTS[version])
    if version == "2":
        insight = str(raw.get("insight") or "").strip()
        issue = str(raw.get("issue") or "").strip()
        text = f"{insight} (when: {issue})" if insight and issue else insight or issue
        active = raw.get("active", True) is not False
        keywords = raw.get("keywords") or []
    else:
        text = str(raw.get("content") or "").strip()
        active = raw.get("status", "active") == "active"
        keywords = []
    if not isinstance(keywords, list):
        raise ConfigError(f"skillbook {path}: skill {skill_id!r}: 'keywords' must be a list")
    return Skill(
        id=skill_id,
        text=text,
        section=str(raw.get("section") or ""),
        keywords=tuple(str(k) for k in keywords if str(k).strip()),
        helpful=helpful,
        harmful=harmful,
        neutral=neutral,
        active=active,
    )


def _count(raw: dict[str, Any], field: str, path: Path) -> int:
    value = raw.get(field, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"skillbook {path}: {field} must be a count (>= 0), got {value!r}")
    return value


def _write(path: Path, document: dict[str, Any], layout: _Layout) -> None:
    text = json.dumps(document, ensure_ascii=False, indent=layout.indent)
    write_text_atomically(path, text + ("\n" if layout.newline_at_end else ""))
