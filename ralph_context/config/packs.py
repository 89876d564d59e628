"""``packs:``: the tool packs served next to the core tools, and their own keys.

Every tool listed costs the client's model tokens on every request, so the server offers the
core context tools alone unless a pack is named. Two forms, which mean the same::

    packs: [prompts, project]          # the list form: these packs, their keys at defaults

    packs:
      enabled: [prompts, project]      # the mapping form, for a pack's own keys
      prompt_learning:
        ema_alpha: 0.5

A pack's ``enabled`` (``true``/``false``) decides for that pack whatever the list says, so a
file written when every pack was on by default (``project: {enabled: true}``) keeps its
meaning, and ``RALPH_CONTEXT_PACKS__PROJECT__ENABLED=false`` turns off a pack the file names.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Literal, get_args

from pydantic import Field, model_validator

from ralph_context.config.section import Section, definition_error

__all__ = [
    "PACK_NAMES",
    "CurationSettings",
    "EvaluationSettings",
    "PackName",
    "PacksSettings",
    "ProjectMemorySettings",
    "PromptLearningSettings",
    "mapping_form",
]

PackName = Literal["prompts", "project", "evaluation", "curation"]
PACK_NAMES: tuple[PackName, ...] = get_args(PackName)
# The prompts pack's keys live under the section's name from before the list form; the list
# takes that name too.
_SYNONYMS = {"prompt_learning": "prompts"}
_SECTIONS: dict[PackName, str] = {
    "prompts": "prompt_learning",
    "project": "project",
    "evaluation": "evaluation",
    "curation": "curation",
}


class _PackSection(Section):
    # None: as ``packs.enabled`` says; true or false: this pack on or off whatever it says.
    enabled: bool | None = None


class PromptLearningSettings(_PackSection):
    """The prompt-learning tool pack (``prompts``): prompts, their outcomes, and sessions."""

    # Weight of a new observation in the moving averages (the spec's 30% new, 70% history).
    ema_alpha: float = Field(default=0.3, gt=0.0, le=1.0, allow_inf_nan=False)
    # A model id served by `inference`: suggest_improvements then also returns the prompt
    # rewritten to apply its suggestions. None: suggestions only.
    rewrite_model: str | None = Field(default=None, min_length=1)
    rewrite_timeout_seconds: float = Field(default=60.0, gt=0.0, allow_inf_nan=False)


class ProjectMemorySettings(_PackSection):
    """The project tool pack: projects, cycles, learnings and decisions."""


class EvaluationSettings(_PackSection):
    """The evaluation tool pack (prompt-prix): drift, variants, trajectories, and the
    language model tools when ``inference`` has a server."""


class CurationSettings(_PackSection):
    """The curation pack: skills listed by usefulness, summarize and prune on demand (the
    lifecycle does both on its own; these are for a person tending the store)."""


class PacksSettings(Section):
    """The tool packs served next to the core tools: none unless named."""

    enabled: tuple[PackName, ...] = ()
    prompt_learning: PromptLearningSettings = PromptLearningSettings()
    project: ProjectMemorySettings = ProjectMemorySettings()
    evaluation: EvaluationSettings = EvaluationSettings()
    curation: CurationSettings = CurationSettings()

    @model_validator(mode="before")
    @classmethod
    def _names(cls, data: Any) -> Any:
        """The list form (or one comma-separated string) as the mapping form, every name
        checked here so a typo is told as the pack it is not, with the names that exist."""
        data = mapping_form(data)
        if not isinstance(data, dict) or "enabled" not in data:
            return data
        given = data["enabled"]
        if isinstance(given, str):
            given = [part for part in given.replace(",", " ").split() if part]
        if not isinstance(given, list | tuple):
            return data  # not a list: the field's own error says what it must be
        return {**data, "enabled": tuple(dict.fromkeys(_pack_name(name) for name in given))}

    def served(self) -> frozenset[PackName]:
        """The packs to serve: those named, but for a pack whose own ``enabled`` says."""
        served = set()
        for name in PACK_NAMES:
            switch: bool | None = getattr(self, _SECTIONS[name]).enabled
            if (name in self.enabled) if switch is None else switch:
                served.add(name)
        return frozenset(served)


def mapping_form(value: object) -> object:
    """``packs:`` as a mapping: the list form (a list, a comma-separated string, a JSON
    list from the environment) becomes ``{"enabled": [...]}``; anything else as it is.

    The file's block goes through this before the environment is laid over it, so that
    ``RALPH_CONTEXT_PACKS__PROJECT__ENABLED`` merges with a listed file instead of
    replacing its list.
    """
    if isinstance(value, str) and value.lstrip().startswith("["):
        value = _json_list(value)
    if isinstance(value, str | list | tuple):
        return {"enabled": value}
    return value


def _pack_name(name: object) -> PackName:
    if isinstance(name, str):
        wanted = _SYNONYMS.get(name, name)
        for known in PACK_NAMES:
            if known == wanted:
                return known
    near = difflib.get_close_matches(str(name), [*PACK_NAMES, *_SYNONYMS], n=1, cutoff=0.6)
    hint = f" (did you mean {_SYNONYMS.get(near[0], near[0])!r}?)" if near else ""
    raise definition_error(f"unknown pack {name!r}{hint}; the packs are {', '.join(PACK_NAMES)}")


def _json_list(text: str) -> object:
    """``RALPH_CONTEXT_PACKS='["prompts"]'``: the list, else the text (told as a bad name)."""
    try:
        return json.loads(text)
    except ValueError:
        return text
