"""LoCoMo conversations (Maharana et al., ACL 2024) as the retrieval benchmark reads them.

The data (``locomo10.json`` from snap-research/LoCoMo, CC BY-NC 4.0) is never committed here:
its path is an argument. Each turn becomes one stored item, ``"{speaker}: {text}"`` plus
`` [image: {caption}]`` for image turns, in the session it was said in. Malformed files get a
:class:`LocomoFormatError` naming the record and field, not a ``KeyError`` from deep inside.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "Conversation",
    "LocomoFormatError",
    "Question",
    "Turn",
    "load_conversations",
    "turn_text",
]

# The paper's QA categories (task_eval/evaluation.py numbering).
CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_SESSION = re.compile(r"^session_(\d+)$")


class LocomoFormatError(ValueError):
    """The file is not in LoCoMo's format; the message names where."""


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    text: str


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def turn_text(turn: dict[str, Any]) -> str:
    """What is stored for one turn: who said what, and the caption of a shared image."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return text


def load_conversations(path: Path) -> list[Conversation]:
    """Every conversation in a LoCoMo JSON file, sessions in number order.

    Raises:
        LocomoFormatError: The file is missing, not JSON, or a record lacks a field.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LocomoFormatError(
            f"{path}: no such file (pass --data PATH to locomo10.json)"
        ) from None
    except json.JSONDecodeError as exc:
        raise LocomoFormatError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, list) or not data:
        raise LocomoFormatError(f"{path}: expected a non-empty list of conversations")
    return [_conversation(record, f"{path}[{i}]") for i, record in enumerate(data)]


def _conversation(record: Any, where: str) -> Conversation:
    sample_id = str(_field(record, "sample_id", where))
    where = f"{where} ({sample_id})"
    sessions = _field(record, "conversation", where)
    if not isinstance(sessions, dict):
        raise LocomoFormatError(f"{where}: 'conversation' must be an object")
    turns: list[Turn] = []
    # Some session_<n>_date_time keys have no session list: iterate over the lists.
    numbered = sorted(
        (int(m.group(1)), value)
        for key, value in sessions.items()
        if (m := _SESSION.match(key)) and isinstance(value, list)
    )
    for number, session in numbered:
        for index, turn in enumerate(session):
            at = f"{where}.session_{number}[{index}]"
            for name in ("speaker", "dia_id", "text"):
                _field(turn, name, at)
            turns.append(Turn(str(turn["dia_id"]), number, turn_text(turn)))
    if not turns:
        raise LocomoFormatError(f"{where}: no session_<n> turn lists")
    questions = [
        _question(qa, f"{where}.qa[{i}]") for i, qa in enumerate(_field(record, "qa", where))
    ]
    return Conversation(sample_id, tuple(turns), tuple(questions))


def _question(qa: Any, where: str) -> Question:
    evidence = _field(qa, "evidence", where)
    category = _field(qa, "category", where)
    if not isinstance(evidence, list):
        raise LocomoFormatError(f"{where}: 'evidence' must be a list of dia_ids")
    if category not in CATEGORIES:
        raise LocomoFormatError(f"{where}: 'category' must be 1-5, got {category!r}")
    return Question(str(_field(qa, "question", where)), tuple(map(str, evidence)), category)


def _field(record: Any, name: str, where: str) -> Any:
    if not isinstance(record, dict) or name not in record:
        raise LocomoFormatError(f"{where}: missing field '{name}'")
    return record[name]
