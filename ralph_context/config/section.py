"""What every settings section shares: frozen, closed models; errors about a definition as
a whole; the user's XDG folders."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

__all__ = ["DEFINITION_ERROR", "Section", "definition_error", "xdg"]

# Errors about a definition as a whole: reported without echoing the (long) offending input.
DEFINITION_ERROR = "prompt_definition"


def xdg(var: str, fallback: str) -> Path:
    """The folder ``$var`` names, else ``~/fallback`` (``XDG_CACHE_HOME``, ``.cache``)."""
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


class Section(BaseModel):
    """A section of the settings: unknown keys are refused, values never change."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def definition_error(detail: str) -> PydanticCustomError:
    """An error about a definition as a whole (two prompts of one name, say)."""
    # The detail goes in as context, so braces in user text are not read as placeholders.
    return PydanticCustomError(DEFINITION_ERROR, "{detail}", {"detail": detail})
