"""The generate_variants tool's logic: grammatical dimensions, the prompt, reading the reply.

A prompt constraint is usually written as a command ("Delete the file."). Rephrased along a
grammatical dimension (a question, the passive, the third person...) it may be obeyed more
or less often; ``analyze_variants`` then measures how far each variant moved in meaning.
The baseline is always returned as the ``imperative`` variant, whatever the model wrote.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import JsonValue

from ralph_context.errors import InvalidInput, UnparseableReply
from ralph_context.inference import Message
from ralph_context.inference.replies import quote, strip_thinking
from ralph_context.packs.evaluation.judging import json_objects

__all__ = [
    "BASELINE_LABEL",
    "DEFAULT_DIMENSIONS",
    "DIMENSIONS",
    "checked_dimensions",
    "parse_variants",
    "variant_labels",
    "variant_messages",
]

BASELINE_LABEL = "imperative"
# Dimension -> (label, what the form is) for each form the model is asked for.
DIMENSIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "mood": (
        ("imperative", "a command"),
        ("interrogative", "a question"),
        ("declarative", "a statement of fact"),
    ),
    "voice": (("active", "active voice"), ("passive", "passive voice")),
    "person": (
        ("first_person", "first person: I / we"),
        ("second_person", "second person: you"),
        ("third_person", "third person: it / they / the assistant"),
    ),
    "tense": (
        ("present", "present tense"),
        ("past", "past tense"),
        ("future", "future tense"),
        ("perfect", "perfect aspect: has been / will have been"),
    ),
    "frame": (
        ("presuppositional", "presupposes compliance, as if it already happens"),
        ("descriptive", "describes the expected behaviour"),
    ),
}
DEFAULT_DIMENSIONS = ("mood", "voice", "person", "frame")

_PROMPT = """Rephrase the following prompt constraint in other grammatical forms, keeping \
its meaning exactly.

Original ({baseline_label}): "{baseline}"

Write one variant for each of these forms:
{forms}

Answer with ONLY a JSON object whose keys are exactly these labels and whose values are the \
rephrased constraints, for example {{"passive": "The file is deleted."}}."""


def checked_dimensions(dimensions: Sequence[str]) -> tuple[str, ...]:
    """The dimensions asked for, each once, in the order given.

    Raises:
        InvalidInput: None given, or one that is not a known dimension.
    """
    if not dimensions:
        raise InvalidInput(f"dimensions must name at least one of: {', '.join(DIMENSIONS)}")
    unknown = [name for name in dimensions if name not in DIMENSIONS]
    if unknown:
        raise InvalidInput(
            f"unknown dimension(s) {', '.join(map(repr, unknown))}; allowed: "
            + "; ".join(
                f"{name} ({'/'.join(label for label, _ in forms)})"
                for name, forms in DIMENSIONS.items()
            )
        )
    return tuple(dict.fromkeys(dimensions))


def variant_labels(dimensions: Sequence[str]) -> list[str]:
    """The labels the model is asked for: every form of the dimensions but the baseline's."""
    labels = [label for name in dimensions for label, _ in DIMENSIONS[name]]
    return [label for label in dict.fromkeys(labels) if label != BASELINE_LABEL]


def variant_messages(baseline: str, dimensions: Sequence[str]) -> list[Message]:
    """The chat asking for ``baseline`` rephrased along ``dimensions`` (checked ones).

    Raises:
        InvalidInput: The baseline is empty.
    """
    if not baseline.strip():
        raise InvalidInput("baseline must not be empty: give the constraint to rephrase")
    forms = "\n".join(
        f"- {label}: {description} ({name})"
        for name in dimensions
        for label, description in DIMENSIONS[name]
        if label != BASELINE_LABEL
    )
    prompt = _PROMPT.format(baseline_label=BASELINE_LABEL, baseline=baseline.strip(), forms=forms)
    return [{"role": "user", "content": prompt}]


def parse_variants(raw: str, baseline: str) -> dict[str, str]:
    """The variants in a model's reply, the baseline first as ``imperative``.

    The first JSON object whose values are strings (or, one level down, objects of strings:
    ``{"mood": {"interrogative": ...}}``) is read; empty values are dropped.

    Raises:
        UnparseableReply: No such object, or it holds no variant; the message quotes the reply.
    """
    for found in json_objects(strip_thinking(raw)):
        variants = _flat(found)
        if variants:
            variants.pop(BASELINE_LABEL, None)
            return {BASELINE_LABEL: baseline, **variants}
    raise UnparseableReply(
        "the model gave no JSON object of variants (expected "
        f'{{"<label>": "<rephrased constraint>", ...}}): {quote(raw)}'
    )


def _flat(found: dict[str, JsonValue]) -> dict[str, str] | None:
    """``label -> text``, or ``None`` if ``found`` is not shaped like variants."""
    flat: dict[str, str] = {}
    for label, value in found.items():
        if isinstance(value, str):
            pairs = [(label, value)]
        elif isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            pairs = [(inner, str(text)) for inner, text in value.items()]
        else:
            return None
        flat.update((key.strip(), text.strip()) for key, text in pairs if text.strip())
    return flat or None
