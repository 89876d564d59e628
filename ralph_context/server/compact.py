"""Tool listings without what only a program's reader needs: ``tools/list`` is read by the
client's model on every request, so every byte of it is paid for again and again.

What goes, with nothing a client validates by:

- ``title`` everywhere: pydantic titles each property after its own name (``"Max Items"``
  for ``max_items``) and each model after its class.
- the descriptions and defaults of an output schema: the model reads the answer, not its
  schema, and an answer carries every field; the schema's constraints stay for the clients
  that check an answer against it.
- the descriptions of the models an input schema defines (``$defs``): they are class
  docstrings, written for the code's readers; a caller's model reads the descriptions of
  the arguments and fields.
- ``"default": null`` of an optional argument: leaving it out means the same.
- in an output schema, ``anyOf`` a type or ``null`` written as one ``type`` list, which
  validates the same (input schemas keep ``anyOf``: some clients' models read it better).
- the line breaks and indentation of the docstring a tool's description came from.

Every keyword that constrains a value (types, bounds, enums, required,
``additionalProperties``) is kept: the published schemas accept exactly what they accepted.
``tests/server/test_face.py`` measures what is left.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from mcp.types import Tool

__all__ = ["compact_tool"]

# Keywords whose value maps names to schemas, not a schema itself.
_NAMED = frozenset({"properties", "$defs", "definitions", "patternProperties"})
# Keywords whose value is data (a default, an example), never walked.
_DATA = frozenset({"default", "const", "enum", "examples"})
# A line break inside a paragraph (a blank line between two stays).
_WRAPPED = re.compile(r"(?<!\n)\n(?!\n)")


def compact_tool(tool: Tool) -> Tool:
    """``tool`` as it is listed: its description dedented, its schemas without titles, its
    output schema without descriptions, its input models without their docstrings."""
    description = tool.description
    update: dict[str, Any] = {
        "description": _WRAPPED.sub(" ", inspect.cleandoc(description)) if description else None,
        "input_schema": _schema(tool.input_schema, drop=frozenset({"title"})),
    }
    if tool.output_schema is not None:
        drop = frozenset({"title", "description", "default"})
        update["output_schema"] = _schema(tool.output_schema, drop=drop, nullable=True)
    return tool.model_copy(update=update)


def _schema(
    node: dict[str, Any], *, drop: frozenset[str], model: bool = False, nullable: bool = False
) -> dict[str, Any]:
    """``node``, a schema, without the keywords in ``drop`` at any depth (and without its
    description when it is a model's definition, ``model``; ``nullable``: with ``anyOf`` a
    type or null as a ``type`` list)."""
    if nullable:
        node = _type_or_null(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in drop or (model and key == "description"):
            continue
        if key == "default" and value is None:
            continue
        if key in _DATA:
            out[key] = value
        elif key in _NAMED and isinstance(value, dict):
            models = key in ("$defs", "definitions")
            out[key] = {
                name: _schema(sub, drop=drop, model=models, nullable=nullable)
                if isinstance(sub, dict)
                else sub
                for name, sub in value.items()
            }
        elif isinstance(value, dict):
            out[key] = _schema(value, drop=drop, nullable=nullable)
        elif isinstance(value, list):
            out[key] = [
                _schema(v, drop=drop, nullable=nullable) if isinstance(v, dict) else v
                for v in value
            ]
        else:
            out[key] = value
    return out


def _type_or_null(node: dict[str, Any]) -> dict[str, Any]:
    """``{"anyOf": [S, {"type": "null"}], ...}`` as S with ``"type": [t, "null"]``, when S
    names one type, lists no values (an ``enum`` would refuse the null) and shares no
    keyword with the rest of ``node``; else ``node``."""
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or {"type": "null"} not in branches:
        return node
    typed = branches[1] if branches[0] == {"type": "null"} else branches[0]
    rest = {key: value for key, value in node.items() if key != "anyOf"}
    if (
        not isinstance(typed, dict)
        or not isinstance(typed.get("type"), str)
        or typed.keys() & (rest.keys() | {"enum", "const"})
    ):
        return node
    return {**typed, **rest, "type": [typed["type"], "null"]}
