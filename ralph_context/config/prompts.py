"""``prompts:``: custom MCP prompts, text templates or Python functions, checked on load."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import field_validator, model_validator

from ralph_context.config.section import Section, definition_error

__all__ = ["RESERVED_PROMPT_NAMES", "SEARCH_PROMPT", "PromptArgumentSpec", "PromptSpec"]

# Names of the MCP server's built-in prompts: a custom prompt may not shadow one.
SEARCH_PROMPT = "Search"
RESERVED_PROMPT_NAMES = frozenset({SEARCH_PROMPT})
_ARGUMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _lowercase_keys(data: object, fields: Iterable[str]) -> object:
    """Rename ``Name``-style keys to ``name``: prompt lists copied from other MCP servers use both.

    Only the capitalized spelling of a declared field is renamed; anything else is left for
    ``extra="forbid"`` to report.
    """
    if not isinstance(data, Mapping):
        return data  # pydantic reports the wrong type with the key's path
    normalized = dict(data)
    for field in fields:
        spelled = field.capitalize()
        if spelled == field or spelled not in normalized:
            continue
        if field in normalized:
            raise definition_error(f"both {field!r} and {spelled!r} are set; keep one")
        normalized[field] = normalized.pop(spelled)
    return normalized


class _CapitalizedKeysSection(Section):
    """A section that also accepts ``Name``-style keys (see :func:`_lowercase_keys`)."""

    @model_validator(mode="before")
    @classmethod
    def _accept_capitalized_keys(cls, data: object) -> object:
        return _lowercase_keys(data, cls.model_fields)


class PromptArgumentSpec(_CapitalizedKeysSection):
    """One argument of a custom prompt, as ``prompts/list`` shows it (lowercase keys only)."""

    name: str
    description: str = ""
    required: bool = False

    @field_validator("name")
    @classmethod
    def _identifier_like(cls, name: str) -> str:
        # The name is also the `{name}` placeholder in a text template and a key of the dict
        # a function receives, so spaces and punctuation would only cause surprises.
        if not _ARGUMENT_NAME.fullmatch(name):
            raise ValueError(
                "an argument name starts with a letter or '_' and holds only letters, "
                "digits, '_' and '-'"
            )
        return name


class PromptSpec(_CapitalizedKeysSection):
    """A custom MCP prompt from the ``prompts`` list: a text template or a Python function.

    ``type: auto`` decides by ``content``: a ``module:function`` reference is a function,
    anything else a template. Whether a function reference imports is checked when the server
    resolves its prompts (``ralph_context.server.custom_prompts``), not here, so loading the
    settings never runs user code.
    """

    name: str
    description: str = ""
    arguments: tuple[PromptArgumentSpec, ...] = ()
    type: Literal["text", "function", "auto"] = "auto"
    content: str

    @field_validator("name")
    @classmethod
    def _usable_name(cls, name: str) -> str:
        if not name or any(char.isspace() for char in name):
            raise ValueError("a prompt name must be non-empty and contain no whitespace")
        if name in RESERVED_PROMPT_NAMES:
            raise ValueError(f"{name!r} is a built-in prompt; choose another name")
        return name

    @field_validator("content")
    @classmethod
    def _has_content(cls, content: str) -> str:
        if not content.strip():
            raise ValueError("content must be a template or a 'module:function' reference")
        return content

    @model_validator(mode="after")
    def _unique_arguments(self) -> PromptSpec:
        seen: set[str] = set()
        for argument in self.arguments:
            if argument.name in seen:
                raise definition_error(
                    f"prompt {self.name!r} declares argument {argument.name!r} more than once"
                )
            seen.add(argument.name)
        return self
