"""Edit a JSON document's text in place: add, replace or remove one member or element and
leave every other byte as it was.

Why not ``json.loads`` then ``json.dumps``: a round trip rewrites the user's whole file
(indentation, spacing, escapes, key quoting of numbers), so a later ``--remove`` could give
back the same data but never the same bytes. Here each edit touches one span: an element
appended to a container is written as ``,<newline><indent>value`` after the last one, and
removing it cuts exactly that text, so add-then-remove restores the file byte for byte.
New text follows the file's own indentation (its first indented line), and stays on one
line inside a container written on one line.

Only valid JSON reaches the span parser: :func:`load` checks the text with ``json`` first
(rejecting ``NaN`` and ``Infinity``, which JavaScript's ``JSON.parse`` refuses too).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["JsonProblem", "Node", "append", "indent_unit", "load", "remove", "replace"]

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")


@dataclass(frozen=True)
class Node:
    """A value's span in the text: ``text[start:end]``; for a member of an object, ``key``
    and ``key_start`` (its span then runs from the key to the end of the value)."""

    start: int
    end: int
    kind: Literal["object", "array", "scalar"]
    children: tuple[Node, ...] = ()
    key: str | None = None
    key_start: int = -1

    @property
    def span_start(self) -> int:
        """Where this member or element begins (its key, for an object's member)."""
        return self.key_start if self.key is not None else self.start

    def member(self, key: str) -> Node | None:
        """The value of this object's member ``key`` (the last one, as ``JSON.parse`` keeps)."""
        found = [child for child in self.children if child.key == key]
        return found[-1] if found else None


class JsonProblem(ValueError):
    """The text is not JSON this module edits; the message says why."""


def load(text: str) -> tuple[Any, Node]:
    """The decoded document and the span tree of ``text``.

    Raises:
        JsonProblem: ``text`` is not valid JSON.
    """

    def refuse_constant(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(text, parse_constant=refuse_constant)
    except ValueError as exc:
        raise JsonProblem(str(exc)) from None
    node, _ = _value(text, _skip(text, 0))
    return value, node


def indent_unit(text: str) -> str:
    """The file's indentation step: the leading whitespace of its first indented line."""
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "


def append(text: str, container: Node, value: Any, key: str | None = None) -> str:
    """``text`` with ``value`` added as the last element of ``container`` (an array), or as
    its last member ``key`` (an object)."""
    unit = indent_unit(text)
    children = container.children
    if not children:
        base = _line_indent(text, container.start)
        inner = base + unit
        piece = _piece(key, value, unit, inner, compact=False)
        body = "\n" + inner + piece + "\n" + base
        return text[: container.start + 1] + body + text[container.end - 1 :]
    last = children[-1]
    if "\n" in text[container.start : children[0].span_start]:
        indent = _line_indent(text, last.span_start)
        separator, compact = ",\n" + indent, False
    else:
        indent, separator, compact = "", ", ", True
    piece = _piece(key, value, unit, indent, compact=compact)
    return text[: last.end] + separator + piece + text[last.end :]


def replace(text: str, node: Node, value: Any) -> str:
    """``text`` with ``node``'s value replaced by ``value`` (its key, if any, kept)."""
    compact = "\n" not in text[node.start : node.end] and "\n" not in text.strip()
    base = _line_indent(text, node.span_start)
    rendered = _render(value, indent_unit(text), base, compact=compact)
    return text[: node.start] + rendered + text[node.end :]


def remove(text: str, container: Node, index: int) -> str:
    """``text`` without ``container``'s child at ``index``: the inverse of :func:`append`
    for the last child; an only child leaves ``{}`` or ``[]``."""
    children = container.children
    child = children[index]
    if len(children) == 1:
        return text[: container.start + 1] + text[container.end - 1 :]
    if index > 0:
        return text[: children[index - 1].end] + text[child.end :]
    return text[: child.span_start] + text[children[1].span_start :]


def _piece(key: str | None, value: Any, unit: str, indent: str, *, compact: bool) -> str:
    rendered = _render(value, unit, indent, compact=compact)
    return rendered if key is None else json.dumps(key, ensure_ascii=False) + ": " + rendered


def _render(value: Any, unit: str, base: str, *, compact: bool) -> str:
    if compact:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + base)


def _line_indent(text: str, position: int) -> str:
    line_start = text.rfind("\n", 0, position) + 1
    match = _WS.match(text, line_start)
    whitespace = match.group() if match else ""
    return whitespace.replace("\n", "").replace("\r", "")


def _skip(text: str, position: int) -> int:
    match = _WS.match(text, position)
    return match.end() if match else position


def _value(text: str, start: int) -> tuple[Node, int]:
    """The value at ``start`` of text already known to be valid JSON, and where it ends."""
    char = text[start]
    if char in "{[":
        return _container(text, start)
    match = _STRING.match(text, start) if char == '"' else _SCALAR.match(text, start)
    if match is None:  # unreachable for text json.loads accepted
        raise JsonProblem(f"unexpected {char!r} at offset {start}")
    return Node(start, match.end(), "scalar"), match.end()


def _container(text: str, start: int) -> tuple[Node, int]:
    is_object = text[start] == "{"
    closing = "}" if is_object else "]"
    children: list[Node] = []
    position = _skip(text, start + 1)
    while text[position] != closing:
        key: str | None = None
        key_start = -1
        if is_object:
            match = _STRING.match(text, position)
            if match is None:
                raise JsonProblem(f"expected a key at offset {position}")
            key, key_start = json.loads(match.group()), position
            position = _skip(text, _skip(text, match.end()) + 1)  # past the colon
        child, position = _value(text, position)
        children.append(
            Node(child.start, child.end, child.kind, child.children, key, key_start)
            if key is not None
            else child
        )
        position = _skip(text, position)
        if text[position] == ",":
            position = _skip(text, position + 1)
    kind: Literal["object", "array"] = "object" if is_object else "array"
    return Node(start, position + 1, kind, tuple(children)), position + 1
