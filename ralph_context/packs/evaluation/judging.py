"""The judge tool's logic: the prompt, and reading a verdict out of whatever the model wrote.

Judge models rarely answer with bare JSON: they think aloud (``<think>...</think>``), wrap the
object in a Markdown fence, or surround it with prose. The reply is read in this order, and
the first reading that finds a verdict wins:

1. ``<think>`` blocks are dropped (also everything before a lone ``</think>``, for servers
   that put the opening tag in the prompt); an unclosed leading ``<think>`` means the model
   ran out of tokens while thinking, so nothing is left to read.
2. Fenced code blocks, then any ``{...}`` object anywhere (balanced braces), holding ``pass``.
3. A line that plainly states the verdict (``Verdict: PASS``, ``result = fail``, ``pass: no``)
   or a reply that is only ``PASS`` / ``FAIL`` / ``YES`` / ``NO``.

Anything else is refused (:class:`UnparseableReply`) rather than guessed: "pass" and "true"
scattered through prose say nothing about which way the judge leaned.

:func:`json_objects` is the JSON extraction both this module and ``variants`` use.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import JsonValue

from ralph_context.errors import UnparseableReply
from ralph_context.inference import Message
from ralph_context.inference.replies import FENCE, quote, strip_thinking

__all__ = [
    "Verdict",
    "json_objects",
    "judge_messages",
    "parse_verdict",
]

JUDGE_SYSTEM = (
    "You are a strict, precise evaluator. You decide whether a response meets the given "
    "criteria. Answer with one JSON object and nothing else."
)
_JUDGE_PROMPT = """Evaluate whether the RESPONSE meets the CRITERIA.

CRITERIA:
{criteria}

RESPONSE:
{response}

Answer with exactly one JSON object of this form:
{{"pass": true or false, "reason": "one sentence explaining the verdict", "score": 0-10}}
where score rates how well the response meets the criteria (10 = fully)."""

# Start positions tried by the brace scan: a reply full of "{" must not cost quadratic time.
_MAX_CANDIDATES = 64
_WORDS = {
    "pass": True,
    "passed": True,
    "true": True,
    "yes": True,
    "fail": False,
    "failed": False,
    "false": False,
    "no": False,
}
_VERDICT_WORD = "|".join(_WORDS)
# Markdown decoration a model puts around a label: "**Verdict:** PASS", "- result = fail".
_DECOR = r"[\s*_`#>-]*"
_VERDICT_LINE = re.compile(
    rf"^{_DECOR}(?:final\s+)?(?:verdict|result|pass|judgement|judgment|decision){_DECOR}"
    rf"[:=]{_DECOR}({_VERDICT_WORD})\b",
    re.IGNORECASE,
)
_ONLY_WORD = re.compile(rf"^{_DECOR}({_VERDICT_WORD}){_DECOR}[.!]?{_DECOR}$", re.IGNORECASE)
_REASON_LINE = re.compile(rf"^{_DECOR}reason(?:ing)?{_DECOR}[:=]{_DECOR}(.+)$", re.IGNORECASE)
_SCORE_LINE = re.compile(
    rf"^{_DECOR}score{_DECOR}[:=]{_DECOR}(-?\d+(?:\.\d+)?)(?:\s*/\s*10)?\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Verdict:
    """What the judge decided; ``score`` is 0-10 (clamped), or ``None`` if it gave none."""

    passed: bool
    reason: str
    score: float | None


def judge_messages(response: str, criteria: str) -> list[Message]:
    """The chat asking a judge model whether ``response`` meets ``criteria``."""
    prompt = _JUDGE_PROMPT.format(criteria=criteria, response=response)
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": prompt}]


def json_objects(text: str) -> Iterator[dict[str, JsonValue]]:
    """Every JSON object in ``text``, most deliberate first: the contents of fenced code
    blocks, then each balanced ``{...}`` that parses, left to right (an object nested in
    one already found is not yielded again)."""
    for block in FENCE.findall(text):
        parsed = _loads(block.strip())
        if parsed is not None:
            yield parsed
        else:
            yield from _braced(block)
    yield from _braced(text)


def _braced(text: str) -> Iterator[dict[str, JsonValue]]:
    start = text.find("{")
    tried = 0
    while start != -1 and tried < _MAX_CANDIDATES:
        tried += 1
        end = _matching_brace(text, start)
        if end is None:
            return  # unbalanced from here on: no later "{" can close either
        parsed = _loads(text[start : end + 1])
        if parsed is not None:
            yield parsed
            start = text.find("{", end + 1)
        else:
            start = text.find("{", start + 1)


def _matching_brace(text: str, start: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``start``, skipping braces inside strings."""
    depth = 0
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def _loads(candidate: str) -> dict[str, JsonValue] | None:
    try:
        parsed = json.loads(candidate)
    except ValueError:  # JSONDecodeError, and RecursionError's kin for absurd nesting
        return None
    return parsed if isinstance(parsed, dict) else None


def parse_verdict(raw: str) -> Verdict:
    """The verdict in a judge model's reply (see the module docstring for the order).

    Raises:
        UnparseableReply: No verdict can be read without guessing; the message quotes the
            reply's start.
    """
    text = strip_thinking(raw)
    if not text:
        why = "only reasoning (<think> never closed: raise max_tokens?)" if raw.strip() else ""
        raise UnparseableReply(f"the judge model's reply is {why or 'empty'}: {quote(raw)}")
    for found in json_objects(text):
        verdict = _from_json(found)
        if verdict is not None:
            return verdict
    verdict = _from_lines(text)
    if verdict is not None:
        return verdict
    raise UnparseableReply(
        'the judge model gave no verdict (expected JSON {"pass": true|false, "reason": ..., '
        f'"score": 0-10}} or a line "Verdict: PASS|FAIL"): {quote(raw)}'
    )


def _from_json(found: dict[str, JsonValue]) -> Verdict | None:
    key = "pass" if "pass" in found else "passed" if "passed" in found else None
    if key is None:
        return None
    passed = _truth(found[key])
    if passed is None:
        return None
    reason = found.get("reason")
    return Verdict(passed, _text(reason), _score(found.get("score")))


def _truth(value: JsonValue) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _WORDS.get(value.strip().lower())
    return None


def _text(value: JsonValue) -> str:
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else json.dumps(value)


def _score(value: JsonValue) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value.strip().removesuffix("/10").strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return min(max(float(value), 0.0), 10.0)


def _from_lines(text: str) -> Verdict | None:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) == 1 and (only := _ONLY_WORD.match(lines[0])):
        return Verdict(_WORDS[only.group(1).lower()], "", None)
    stated = {
        _WORDS[match.group(1).lower()] for line in lines if (match := _VERDICT_LINE.match(line))
    }
    if len(stated) != 1:
        return None  # no verdict line, or lines that contradict each other
    reason = next((m.group(1).strip() for ln in lines if (m := _REASON_LINE.match(ln))), None)
    score = next((m.group(1) for ln in lines if (m := _SCORE_LINE.match(ln))), None)
    return Verdict(stated.pop(), reason if reason is not None else text, _score(score))
