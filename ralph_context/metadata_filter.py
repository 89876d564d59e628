"""Search filters on an item's stored metadata: ``priority >= 2``, ``lang in ["py", "rs"]``.

A condition compares one top-level metadata key with a typed scalar (text, number, boolean).
Values only match values of their own kind: ``priority >= 2`` never matches ``"high"``, and
``"5"`` (text) is not ``5`` (a number). Negations (``!=``, ``not in``) match every item whose
value is not one of those given, items without the key included, as a person reading
"lang != py" expects. Text orders by code point (ISO dates order as they read); a quote,
backslash or control character inside it orders as its JSON escape.

Conditions arrive from three places and are checked here once: the MCP tool (a list of
``{"key", "op", "value"}`` objects), the Python API (the same, or :class:`MetadataCondition`)
and the CLI (``--where "priority >= 2"``). ``storage/table/filters.py`` turns them into LanceDB
clauses from these typed values; nothing a caller typed reaches a clause raw.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from ralph_context.errors import InvalidMetadata
from ralph_context.models import inexact_number

__all__ = [
    "MAX_CONDITIONS",
    "MAX_LIST_VALUES",
    "MetadataCondition",
    "MetadataOp",
    "Scalar",
    "check_metadata_filter",
    "parse_condition",
]

MAX_CONDITIONS = 16
MAX_LIST_VALUES = 100
MAX_KEY_CHARS = 200
MAX_TEXT_CHARS = 1_000

Scalar = str | int | float | bool


class MetadataOp(StrEnum):
    """How a condition compares; ``in`` and ``not in`` take a list of values."""

    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN = "in"
    NOT_IN = "not in"


MAX_NUMBER = 1.7976931348623157e308  # the largest double: a clause compares as DOUBLE
_SCALAR_SCHEMAS: list[dict[str, object]] = [
    {"type": "string", "maxLength": MAX_TEXT_CHARS},
    {"type": "number", "minimum": -MAX_NUMBER, "maximum": MAX_NUMBER},
    {"type": "boolean"},
]
_LISTS = (MetadataOp.IN, MetadataOp.NOT_IN)
_ORDERS = (MetadataOp.LT, MetadataOp.LE, MetadataOp.GT, MetadataOp.GE)
_ALLOWED_OPS = ", ".join(op.value for op in MetadataOp)


class MetadataCondition(BaseModel):
    """``key op value``; all conditions of a filter must hold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: Annotated[
        str,
        Field(min_length=1, max_length=MAX_KEY_CHARS, description="A top-level metadata key."),
    ]
    op: Annotated[MetadataOp, Field(description=f"One of: {_ALLOWED_OPS}.")]
    value: Annotated[
        Scalar | list[Scalar],
        # The bounds _check_condition enforces, stated in the schema clients read (the
        # checks themselves stay ours: pydantic's message for a union names every branch).
        WithJsonSchema(
            {
                "anyOf": [
                    *_SCALAR_SCHEMAS,
                    {
                        "type": "array",
                        "items": {"anyOf": _SCALAR_SCHEMAS},
                        "minItems": 1,
                        "maxItems": MAX_LIST_VALUES,
                    },
                ]
            }
        ),
        Field(
            description="Text, number or boolean; a list of them for 'in' and 'not in'. "
            "Ordering ('<', '>'...) takes a number or text."
        ),
    ]

    @model_validator(mode="after")
    def _shape(self) -> Self:
        _check_condition(self)
        return self

    @property
    def values(self) -> tuple[Scalar, ...]:
        """The value(s) as a tuple: one for comparisons, the list for ``in``/``not in``."""
        return tuple(self.value) if isinstance(self.value, list) else (self.value,)

    def __str__(self) -> str:
        return f"{self.key} {self.op.value} {json.dumps(self.value, ensure_ascii=False)}"


def _check_condition(condition: MetadataCondition) -> None:
    key, op, value = condition.key, condition.op, condition.value
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in key):
        raise ValueError(f"metadata key {key!r} contains a control or invalid character")
    if op in _LISTS:
        if not isinstance(value, list) or not value:
            raise ValueError(f"'{op.value}' on {key!r} needs a non-empty list of values")
        if len(value) > MAX_LIST_VALUES:
            raise ValueError(
                f"'{op.value}' on {key!r} has {len(value)} values; at most {MAX_LIST_VALUES}"
            )
    elif isinstance(value, list):
        raise ValueError(f"'{op.value}' on {key!r} takes one value; use 'in' for a list")
    elif op in _ORDERS and isinstance(value, bool):
        raise ValueError(f"'{op.value}' on {key!r} needs a number or text, not a boolean")
    for item in condition.values:
        if isinstance(item, str) and len(item) > MAX_TEXT_CHARS:
            raise ValueError(
                f"a text value for {key!r} is {len(item)} characters; at most {MAX_TEXT_CHARS}"
            )
        # The numbers metadata may hold (the same check): any other could never match.
        problem = inexact_number(item)
        if problem is not None:
            raise ValueError(f"the value for {key!r} is {problem}")


def check_metadata_filter(
    conditions: object, *, name: str = "metadata"
) -> tuple[MetadataCondition, ...]:
    """Conditions from a caller: :class:`MetadataCondition` objects or mappings with ``key``,
    ``op`` and ``value``; ``None`` is no filter.

    Raises:
        InvalidMetadata: Naming the argument, the condition and what is allowed.
    """
    if conditions is None:
        return ()
    if isinstance(conditions, str | bytes | Mapping) or not isinstance(conditions, Iterable):
        raise InvalidMetadata(
            f"{name} must be a list of conditions like "
            '{"key": "priority", "op": ">=", "value": 2}, '
            f"got {type(conditions).__name__}"
        )
    checked: list[MetadataCondition] = []
    for position, condition in enumerate(conditions):
        if isinstance(condition, MetadataCondition):
            checked.append(condition)
            continue
        if not isinstance(condition, Mapping):
            raise InvalidMetadata(
                f"{name}[{position}] must be an object with key, op and value, "
                f"got {type(condition).__name__}"
            )
        try:
            checked.append(MetadataCondition.model_validate(dict(condition)))
        except ValueError as exc:
            raise InvalidMetadata(f"{name}[{position}]: {_reason(exc)}") from None
    if len(checked) > MAX_CONDITIONS:
        raise InvalidMetadata(
            f"{name} has {len(checked)} conditions; at most {MAX_CONDITIONS} are allowed"
        )
    return tuple(checked)


def _reason(exc: ValueError) -> str:
    """Pydantic's message without its URL lines; ours as they are."""
    errors = getattr(exc, "errors", None)
    if errors is None:
        return str(exc)
    parts: dict[str, str] = {}
    for error in errors():
        where = str(error["loc"][0]) if error.get("loc") else ""
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        if error.get("type") == "missing":
            message = f"{where} is required"
        elif error.get("type") == "extra_forbidden":
            message = f"{where} is not a field (key, op and value are)"
        elif where == "op":
            message = f"op must be one of: {_ALLOWED_OPS}"
        elif where == "value":
            message = (
                "value must be text, a number or a boolean (a list of them for 'in' and "
                f"'not in'), got {error.get('input')!r}"
            )
        elif where:
            message = f"{where}: {message}"
        parts.setdefault(where, message)
    return "; ".join(parts.values())


_CONDITION = re.compile(r"^\s*(.+?)\s*(==|!=|<=|>=|<|>|=|\s+not\s+in\s+|\s+in\s+)\s*(.+?)\s*$")


def parse_condition(text: str) -> MetadataCondition:
    """``"priority >= 2"``, ``'lang in ["py", "rs"]'``, ``"lang == py"``: the value is JSON,
    or text when it does not parse as JSON (``py``); ``in`` also takes ``py,rs``.

    Raises:
        InvalidMetadata: The text is not ``KEY OP VALUE``.
    """
    found = _CONDITION.match(text)
    if found is None:
        raise InvalidMetadata(
            f"--where {text!r} is not KEY OP VALUE; OP is one of: {_ALLOWED_OPS} "
            '(e.g. "priority >= 2", \'lang in ["py", "rs"]\')'
        )
    key, op_text, raw = found.groups()
    op = " ".join(op_text.split())
    value: object
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    if op in ("in", "not in") and not isinstance(value, list):
        value = [_scalar(part.strip()) for part in raw.split(",") if part.strip()]
    condition = {"key": key.strip("\"'"), "op": "==" if op == "=" else op, "value": value}
    return check_metadata_filter([condition], name="--where")[0]


def _scalar(text: str) -> object:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, str | int | float | bool) else text
