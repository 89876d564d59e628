"""``redaction:``: secrets are replaced before anything is stored (``ralph_context.privacy``)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from ralph_context.config.section import Section

__all__ = ["KIND_RULE", "RedactionSettings"]

KIND_RULE = "1-40 characters: lower-case letters, digits and _, starting with a letter"
_KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")
# User patterns run on every stored text; a catastrophic one would stall every write.
_MAX_PATTERN_CHARS = 500


def _compiles(pattern: str, where: str) -> str:
    if len(pattern) > _MAX_PATTERN_CHARS:
        raise ValueError(
            f"{where}: a pattern of {len(pattern)} characters; at most {_MAX_PATTERN_CHARS}"
        )
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{where}: {pattern!r:.80} is not a regular expression ({exc})") from None
    if compiled.match(""):
        raise ValueError(f"{where}: {pattern!r:.80} matches the empty string")
    return pattern


class RedactionSettings(Section):
    """What is redacted besides the built-in rules, and what never is."""

    # Off only when written here (or in RALPH_CONTEXT_REDACTION__ENABLED); health reports it.
    enabled: bool = True
    # More kinds: name -> Python regex; group "secret" (else the whole match) is replaced.
    extra_patterns: dict[str, str] = Field(default_factory=dict, max_length=100)
    # Values never redacted: a found value any of these regexes finds (re.search) is kept.
    allow: tuple[str, ...] = Field(default=(), max_length=100)

    @field_validator("extra_patterns")
    @classmethod
    def _kinds_and_patterns(cls, patterns: dict[str, str]) -> dict[str, str]:
        for kind, pattern in patterns.items():
            if not _KIND.fullmatch(kind):
                raise ValueError(f"kind {kind!r:.60}: use {KIND_RULE}")
            _compiles(pattern, f"extra_patterns.{kind}")
        return patterns

    @field_validator("allow")
    @classmethod
    def _allow_compiles(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for index, pattern in enumerate(patterns):
            _compiles(pattern, f"allow[{index}]")
        return patterns
