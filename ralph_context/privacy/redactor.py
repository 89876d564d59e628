"""The redactor: every text the engine stores passes here first, and leaves without secrets.

A found value is replaced in place by ``[REDACTED:<kind>]``: the item is kept and its
meaning survives ("the deploy failed: token [REDACTED:github_token] expired" is still a
memory worth having), but nothing a later reader, an export, a log or the store's own files
hold is a working credential. It runs before embedding, so a vector never encodes one
either. The same pass removes what a reader cannot see (``visible``).

What it finds is in ``rules`` (shapes) and ``assignments`` (secret names); users add kinds
(``redaction.extra_patterns``) and exempt values (``redaction.allow``). Counts by kind are
kept for stats and health since this process started.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ralph_context.privacy.assignments import (
    SECRET_WORD,
    ascii_lower,
    assignments,
    is_placeholder,
    kind_of_name,
    secret_name,
    secret_value,
)
from ralph_context.privacy.rules import DEFAULT_RULES, Rule
from ralph_context.privacy.visible import visible

if TYPE_CHECKING:  # at run time only duck-typed: an agent's hook spools with no settings
    from ralph_context.config.redaction import RedactionSettings
    from ralph_context.models import ContextItem, IterationResult, JsonValue

__all__ = ["MARK", "Redacted", "Redactor", "counted", "mark"]

MARK = re.compile(r"\[REDACTED:([a-z][a-z0-9_]{0,39})\]")


def mark(kind: str) -> str:
    """What replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class Redacted:
    """A text after redaction and what was taken out of it, by kind."""

    text: str
    found: Counter[str] = field(default_factory=Counter)


class Redactor:
    """Finds secrets in texts and JSON values and replaces them.

    Args:
        settings: ``redaction:``; with ``enabled: false`` texts pass unchanged.
    """

    def __init__(self, settings: RedactionSettings | None = None) -> None:
        # None: the defaults (on, the built-in rules), without loading the settings.
        self.enabled = settings is None or settings.enabled
        patterns = {} if settings is None else settings.extra_patterns
        extra = tuple(Rule(kind, re.compile(pattern), ()) for kind, pattern in patterns.items())
        self._rules = DEFAULT_RULES + extra
        self._allow = tuple(re.compile(p) for p in (() if settings is None else settings.allow))
        self.counts: Counter[str] = Counter()

    def text(self, text: str) -> Redacted:
        """``text`` made visible (``visible``: no invisible, bidi, control or terminal
        character; done whether redaction is on or not) with every secret replaced, and
        the kinds found (counted)."""
        text = visible(text)
        if not self.enabled or not text:
            return Redacted(text)
        spans = self._spans(text)
        if not spans:
            return Redacted(text)
        found: Counter[str] = Counter()
        parts: list[str] = []
        last = 0
        for start, end, kind in spans:
            parts.append(text[last:start])
            parts.append(mark(kind))
            found[kind] += 1
            last = end
        parts.append(text[last:])
        self.counts.update(found)
        return Redacted("".join(parts), found)

    def clean(self, text: str) -> str:
        """``text`` with every secret replaced."""
        return self.text(text).text

    def json(self, value: JsonValue) -> JsonValue:
        """A JSON value with secrets replaced in its strings, and the values of keys that
        name a secret (``{"password": "hunter2"}``) replaced whole."""
        if isinstance(value, str):
            return self.clean(value)
        if isinstance(value, list):
            return [self.json(member) for member in value]
        if isinstance(value, dict):
            return {self.clean(key): self._member(key, member) for key, member in value.items()}
        return value

    def tags(self, tags: Iterable[str]) -> list[str]:
        """Tags with secrets replaced."""
        return [self.clean(tag) for tag in tags]

    def item(self, item: ContextItem) -> ContextItem:
        """``item`` made visible, with secrets replaced in its content, tags, metadata and
        source (the same object when there were none)."""
        update: dict[str, object] = {}
        content = self.clean(item.content)
        if content != item.content:
            update["content"] = content
            if item.original_length == len(item.content):
                update["original_length"] = len(content)
        tags = tuple(self.tags(item.tags))
        if tags != item.tags:
            update["tags"] = tags
        metadata = self.json(dict(item.metadata))
        if metadata != item.metadata:
            update["metadata"] = metadata
        source = self.clean(item.source)
        if source != item.source:
            update["source"] = source
        return item.model_copy(update=update) if update else item

    def iteration(self, result: IterationResult) -> IterationResult:
        """An iteration's record made visible, with secrets replaced in its texts."""
        update: dict[str, object] = {}
        summary = self.clean(result.summary)
        if summary != result.summary:
            update["summary"] = summary
        if result.error is not None and (error := self.clean(result.error)) != result.error:
            update["error"] = error
        for name, values in (("tool_calls", result.tool_calls), ("artifacts", result.artifacts)):
            cleaned = tuple(self.clean(value) for value in values)
            if cleaned != values:
                update[name] = cleaned
        return result.model_copy(update=update) if update else result

    def _member(self, key: str, value: JsonValue) -> JsonValue:
        if self.enabled and isinstance(value, str | int | float) and not isinstance(value, bool):
            kind = _secret_key(key)
            literal = str(value)
            if (
                kind is not None
                and secret_value(literal, word=kind, op="=", quoted=True, spaced=False)
                and not self._allowed(literal)
            ):
                self.counts[kind] += 1
                return mark(kind)
        return self.json(value)

    def _allowed(self, value: str) -> bool:
        return any(pattern.search(value) for pattern in self._allow)

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        """Non-overlapping (start, end, kind) of every secret, in order; shapes win over
        names where both find the same value (``GITHUB_TOKEN=ghp_...`` is a GitHub token)."""
        lowered = ascii_lower(text)
        taken: list[tuple[int, int, str]] = []
        for rule in self._rules:
            if rule.hints and not any(hint in lowered for hint in rule.hints):
                continue
            for match in rule.pattern.finditer(text):
                span = rule.secret_span(text, match)
                if span is None:
                    continue
                start, end = span
                value = text[start:end]
                if rule.placeholders and is_placeholder(value):
                    continue
                if end > start and not self._allowed(value):
                    _claim(taken, start, end, rule.kind)
        for found in assignments(text, lowered):
            if not self._allowed(text[found.start : found.end]):
                _claim(taken, found.start, found.end, found.kind)
        taken.sort()
        return taken


def _claim(taken: list[tuple[int, int, str]], start: int, end: int, kind: str) -> None:
    """Add a span unless an earlier (more specific) one overlaps it."""
    if all(end <= other_start or start >= other_end for other_start, other_end, _ in taken):
        taken.append((start, end, kind))


def _secret_key(key: str) -> str | None:
    """The kind a metadata key names (``api_key`` -> ``api_key``), or ``None``."""
    for found in SECRET_WORD.finditer(ascii_lower(key)):
        if secret_name(key, found.start(), found.end()):
            return kind_of_name(found.group())
    return None


def counted(kinds: Mapping[str, int]) -> dict[str, int]:
    """Counts by kind, largest first (for stats and health)."""
    return dict(sorted(kinds.items(), key=lambda pair: (-pair[1], pair[0])))
