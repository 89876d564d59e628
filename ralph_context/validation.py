"""Checks every adapter's input passes through before the engine touches the store.

Each check raises ``InvalidInput`` or a specific subclass whose message says which argument was
wrong, what it was, and what is allowed, so adapters can show it to a person unchanged.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Iterable, Mapping

from ralph_context.errors import (
    ContentTooLarge,
    EmptyContent,
    InvalidEncoding,
    InvalidInput,
    InvalidMetadata,
    InvalidScore,
    InvalidTags,
    UnknownContextType,
)
from ralph_context.models import ContextType, JsonValue, inexact_number

__all__ = [
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_METADATA_KEYS",
    "MAX_SOURCE_CHARS",
    "MAX_TAGS",
    "MAX_TAG_LENGTH",
    "check_content",
    "check_context_type",
    "check_context_types",
    "check_int",
    "check_item_id",
    "check_metadata",
    "check_score",
    "check_source",
    "check_tags",
    "check_text",
]

MAX_TAGS = 64
MAX_TAG_LENGTH = 200
MAX_METADATA_BYTES = 16_384
MAX_METADATA_DEPTH = 8
MAX_METADATA_KEYS = 256
# An item's source: the thread it belongs to (a conversation, a session, a task, a loop).
MAX_SOURCE_CHARS = 200
_ALLOWED_TYPES = ", ".join(t.value for t in ContextType)


def check_content(content: object, *, max_bytes: int, name: str = "content") -> str:
    """Text we are willing to store: UTF-8, not blank, at most ``max_bytes`` bytes."""
    if isinstance(content, bytes | bytearray):
        try:
            content = bytes(content).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidEncoding(
                f"{name} is not valid UTF-8 (byte {exc.start} is {content[exc.start]:#04x}); "
                "send text, not binary data"
            ) from None
    if not isinstance(content, str):
        raise InvalidInput(f"{name} must be text, got {type(content).__name__}")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidEncoding(
            f"{name} contains a character that is not valid Unicode text "
            f"(at position {exc.start}: {content[exc.start]!r})"
        ) from None
    if not content.strip():
        why = "there is nothing to remember" if name == "content" else "give it some text"
        raise EmptyContent(f"{name} is empty or only whitespace; {why}")
    if size > max_bytes:
        raise ContentTooLarge(
            f"{name} is {size:,} bytes; the limit is {max_bytes:,} bytes "
            "(storage.max_content_bytes); store a summary or split it"
        )
    return content


def check_context_type(value: object, *, name: str = "context_type") -> ContextType:
    """One of task, iteration, skill, file, output, error (case-insensitive)."""
    if isinstance(value, ContextType):
        return value
    if isinstance(value, str):
        try:
            return ContextType(value.strip().lower())
        except ValueError:
            pass
    raise UnknownContextType(f"{name} {value!r} is not a context type; allowed: {_ALLOWED_TYPES}")


def check_context_types(values: Iterable[object] | None) -> tuple[ContextType, ...]:
    """A list of context types, deduplicated, order kept; ``None`` means all types."""
    if values is None:
        return ()
    if isinstance(values, str):
        raise UnknownContextType(
            f"context_types must be a list such as [{_ALLOWED_TYPES.split(', ')[0]!r}], "
            f"got the string {values!r}"
        )
    checked = [check_context_type(v, name="context_types entry") for v in values]
    return tuple(dict.fromkeys(checked))


def check_tags(tags: object) -> tuple[str, ...]:
    """A list of non-empty printable strings; stored and matched literally."""
    if tags is None:
        return ()
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise InvalidTags(f"tags must be a list of strings, got {type(tags).__name__} {tags!r}")
    result: list[str] = []
    for position, tag in enumerate(tags):
        if not isinstance(tag, str):
            raise InvalidTags(
                f"tags[{position}] is {type(tag).__name__} {tag!r}; every tag must be a string"
            )
        cleaned = tag.strip()
        if not cleaned:
            raise InvalidTags(f"tags[{position}] is empty; remove it or give it a name")
        if len(cleaned) > MAX_TAG_LENGTH:
            raise InvalidTags(
                f"tags[{position}] is {len(cleaned)} characters; the limit is {MAX_TAG_LENGTH}"
            )
        if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in cleaned):
            raise InvalidTags(
                f"tags[{position}] {cleaned!r} contains a control or invalid character"
            )
        result.append(cleaned)
    if len(result) > MAX_TAGS:
        raise InvalidTags(f"{len(result)} tags given; at most {MAX_TAGS} are allowed")
    return tuple(dict.fromkeys(result))


def check_score(value: object, *, name: str, low: float = 0.0, high: float = 1.0) -> float:
    """A finite number within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidScore(f"{name} must be a number between {low:g} and {high:g}, got {value!r}")
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        raise InvalidScore(f"{name} is {number}; it must be a finite number in [{low:g}, {high:g}]")
    if not low <= number <= high:
        raise InvalidScore(f"{name} is {number:g}; it must be between {low:g} and {high:g}")
    return number


def check_int(value: object, *, name: str, low: int = 1, high: int | None = None) -> int:
    """An integer within ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        allowed = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidInput(f"{name} is {value}; it must be {allowed}")
    return value


def check_text(value: object, *, name: str, max_chars: int = 10_000, empty: bool = True) -> str:
    """A short text field (source, summary, error): a string that is valid Unicode.

    Raises:
        InvalidInput: Not a string, too long, or empty when ``empty`` is False.
        InvalidEncoding: Contains a lone surrogate or other non-encodable character.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be text, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidEncoding(
            f"{name} contains a character that is not valid Unicode text (position {exc.start})"
        ) from None
    if len(value) > max_chars:
        raise InvalidInput(f"{name} is {len(value):,} characters; the limit is {max_chars:,}")
    if not empty and not value.strip():
        raise InvalidInput(f"{name} is empty")
    return value


def check_source(value: object, *, name: str = "source", empty: bool = True) -> str:
    """Where an item comes from, which is also its thread: with the same iteration, items
    of one source stored one after another are neighbours in retrieval. At most
    :data:`MAX_SOURCE_CHARS` characters, no control characters (as a tag: an identifier
    people read in lists, not text); ``""`` means none unless ``empty`` is False.

    Raises:
        InvalidInput: Not a string, too long, blank when ``empty`` is False, or with a
            control character.
        InvalidEncoding: Contains a lone surrogate.
    """
    source = check_text(value, name=name, max_chars=MAX_SOURCE_CHARS)
    allowed = f"at most {MAX_SOURCE_CHARS}" if empty else f"1-{MAX_SOURCE_CHARS}"
    if not empty and not source.strip():
        raise InvalidInput(
            f"{name} is blank; it must be {allowed} characters naming the conversation, "
            f"session or task (or leave {name} out)"
        )
    for position, ch in enumerate(source):
        if unicodedata.category(ch) == "Cc":
            raise InvalidInput(
                f"{name} has a control character ({ch!r}) at position {position}; "
                f"it must be {allowed} printable characters"
            )
    return source


def check_item_id(value: object, *, name: str = "item_id") -> str:
    """An item id as the store hands them out: non-empty text without control characters.

    Raises:
        InvalidInput: Not a string, empty, too long, or with control characters.
    """
    item_id = check_text(value, name=name, max_chars=200, empty=False)
    if any(unicodedata.category(ch) == "Cc" for ch in item_id):
        raise InvalidInput(f"{name} {item_id!r} contains control characters")
    return item_id


def check_metadata(metadata: object) -> dict[str, JsonValue]:
    """A small JSON object: numbers that come back exactly (``models.inexact_number``: an
    integer within ±2**53, a finite float), at most :data:`MAX_METADATA_BYTES` as JSON,
    :data:`MAX_METADATA_DEPTH` levels and :data:`MAX_METADATA_KEYS` keys in all. Metadata
    travels with every search answer: 10 MB of it once made a search answer take 15 s and
    the next one time out.

    Raises:
        InvalidMetadata: Naming the first value refused by its path (``metadata.a.b[2]``)
            and what is allowed.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidMetadata(f"metadata must be an object/dict, got {type(metadata).__name__}")
    _check_shape(metadata)
    try:
        text = json.dumps(dict(metadata), ensure_ascii=False)
        size = len(text.encode("utf-8"))
    except (TypeError, ValueError) as exc:
        raise InvalidMetadata(f"metadata must be JSON-serialisable: {exc}") from None
    if size > MAX_METADATA_BYTES:
        raise InvalidMetadata(
            f"metadata is {size:,} bytes as JSON; the limit is {MAX_METADATA_BYTES:,} "
            "(store large data as content, or keep a path to it)"
        )
    _check_numbers(metadata, "metadata")
    loaded: dict[str, JsonValue] = json.loads(text)
    return loaded


def _check_numbers(value: object, path: str) -> None:
    """Refuse the first number under ``value`` the store would hand back changed, naming
    its path (``_check_shape`` bounded the depth, so recursion is safe here)."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            step = f".{key}" if str(key).isidentifier() else f"[{str(key)!r:.60}]"
            _check_numbers(inner, path + step)
    elif isinstance(value, list | tuple):
        for position, inner in enumerate(value):
            _check_numbers(inner, f"{path}[{position}]")
    else:
        problem = inexact_number(value)
        if problem is not None:
            raise InvalidMetadata(f"{path} is {problem}")


def _check_shape(metadata: Mapping[object, object]) -> None:
    """Keys are strings; nesting and key count stay within the limits (checked before
    serialising, so a hostile object costs a walk, not a dump)."""
    keys = 0
    level: list[object] = [metadata]
    for depth in range(1, MAX_METADATA_DEPTH + 2):
        if depth > MAX_METADATA_DEPTH:
            if any(isinstance(v, Mapping | list | tuple) for v in level):
                raise InvalidMetadata(
                    f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep"
                )
            return
        below: list[object] = []
        for value in level:
            if isinstance(value, Mapping):
                for key in value:
                    if not isinstance(key, str):
                        raise InvalidMetadata(f"metadata keys must be strings, got {key!r}")
                keys += len(value)
                below.extend(value.values())
            elif isinstance(value, list | tuple):
                below.extend(value)
        if keys > MAX_METADATA_KEYS:
            raise InvalidMetadata(
                f"metadata has more than {MAX_METADATA_KEYS} keys in all; keep it small"
            )
        if not below:
            return
        level = below
