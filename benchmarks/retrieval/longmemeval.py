"""LongMemEval (Wu et al., ICLR 2025) records as the retrieval benchmark reads them.

The data (``longmemeval_s_cleaned.json`` or a subset of it, MIT) is never committed here: its
path is an argument. A file is a JSON list, plain or gzipped (recognised by its magic bytes,
not its name), one record per question, each with its own haystack of chat sessions. The
haystack is not always in date order, so sessions are sorted by ``haystack_dates`` (stable:
sessions of the same minute keep the file's order); a few haystacks repeat a session id,
and each occurrence stays a session of its own (a loop would have seen it twice), while
their turns share LongMemEval's ids (``Turn.unit``), as in its own evaluation.

Malformed files get a :class:`LongMemEvalFormatError` naming the record and field.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "QUESTION_TYPES",
    "LongMemEvalFormatError",
    "Question",
    "Session",
    "Turn",
    "is_longmemeval",
    "load_questions",
]

QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
_GZIP_MAGIC = b"\x1f\x8b"
# "2023/05/30 (Tue) 23:40": the weekday is redundant; the rest sorts as numbers.
_DATE = re.compile(r"^(\d{4})/(\d{2})/(\d{2}) \(\w+\) (\d{2}):(\d{2})$")
# Enough of a file to see its first record's keys (they come before the haystack's text).
_PEEK_BYTES = 1 << 20


class LongMemEvalFormatError(ValueError):
    """The file is not in LongMemEval's format; the message names where."""


@dataclass(frozen=True)
class Turn:
    """One message of a haystack session."""

    session_id: str
    session: int  # 1-based position of its session in date order (the loop's iteration)
    index: int  # 0-based position in its session
    role: str  # "user" or "assistant"
    content: str
    has_answer: bool

    @property
    def unit(self) -> str:
        """LongMemEval's id for the turn, ``{session id}_{index + 1}``
        (``run_retrieval.py``, ``process_item_flat_index``)."""
        return f"{self.session_id}_{self.index + 1}"


@dataclass(frozen=True)
class Session:
    session_id: str
    number: int
    date: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question_id: str
    question_type: str
    text: str
    date: str
    answer: str
    answer_session_ids: tuple[str, ...]
    sessions: tuple[Session, ...]

    @property
    def abstention(self) -> bool:
        """The answer is not in the haystack (LongMemEval tests ``'_abs' in question_id``)."""
        return "_abs" in self.question_id

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(turn for session in self.sessions for turn in session.turns)

    @property
    def evidence_turns(self) -> frozenset[str]:
        """Units of the turns marked ``has_answer`` (user or assistant)."""
        return frozenset(turn.unit for turn in self.turns if turn.has_answer)


def is_longmemeval(path: Path) -> bool:
    """Whether ``path`` looks like a LongMemEval file: a JSON list whose first record has
    ``haystack_sessions``. Reads at most its first MiB; a missing file is not one."""
    try:
        with path.open("rb") as raw:
            magic = raw.read(2)
        if magic == _GZIP_MAGIC:
            with gzip.open(path, "rb") as unzipped:
                head = unzipped.read(_PEEK_BYTES)
        else:
            with path.open("rb") as plain:
                head = plain.read(_PEEK_BYTES)
    except (OSError, EOFError):
        return False
    text = head.decode("utf-8", errors="replace").lstrip()
    return text.startswith("[") and '"haystack_sessions"' in text


def load_questions(path: Path) -> list[Question]:
    """Every question in a LongMemEval file, its sessions in date order.

    Raises:
        LongMemEvalFormatError: The file is missing, not (gzipped) JSON, or a record lacks a
            field or has a malformed one.
    """
    try:
        raw = path.read_bytes()
        if raw.startswith(_GZIP_MAGIC):
            raw = gzip.decompress(raw)
        data = json.loads(raw)
    except FileNotFoundError:
        raise LongMemEvalFormatError(f"{path}: no such file") from None
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LongMemEvalFormatError(f"{path}: not JSON or gzipped JSON ({exc})") from None
    if not isinstance(data, list) or not data:
        raise LongMemEvalFormatError(f"{path}: expected a non-empty list of questions")
    return [_question(record, f"{path}[{i}]") for i, record in enumerate(data)]


def _question(record: Any, where: str) -> Question:
    question_id = str(_field(record, "question_id", where))
    where = f"{where} ({question_id})"
    ids = _list(record, "haystack_session_ids", where)
    dates = _list(record, "haystack_dates", where)
    sessions = _list(record, "haystack_sessions", where)
    if not len(ids) == len(dates) == len(sessions):
        raise LongMemEvalFormatError(
            f"{where}: haystack_session_ids, haystack_dates and haystack_sessions differ in "
            f"length ({len(ids)}, {len(dates)}, {len(sessions)})"
        )
    keyed = [(_date_key(date, f"{where}.haystack_dates[{i}]"), i) for i, date in enumerate(dates)]
    order = [i for _key, i in sorted(keyed, key=lambda pair: pair[0])]  # stable
    built = [
        _session(str(ids[i]), number, str(dates[i]), sessions[i], f"{where}.haystack_sessions[{i}]")
        for number, i in enumerate(order, start=1)
    ]
    return Question(
        question_id=question_id,
        question_type=str(_field(record, "question_type", where)),
        text=str(_field(record, "question", where)),
        date=str(_field(record, "question_date", where)),
        answer=str(_field(record, "answer", where)),
        answer_session_ids=tuple(map(str, _list(record, "answer_session_ids", where))),
        sessions=tuple(built),
    )


def _session(session_id: str, number: int, date: str, turns: Any, where: str) -> Session:
    if not isinstance(turns, list):
        raise LongMemEvalFormatError(f"{where}: a session must be a list of turns")
    built: list[Turn] = []
    for index, turn in enumerate(turns):
        at = f"{where}[{index}]"
        role = _field(turn, "role", at)
        if role not in ("user", "assistant"):
            raise LongMemEvalFormatError(f"{at}: role must be user or assistant, got {role!r}")
        content = _field(turn, "content", at)
        if not isinstance(content, str):
            raise LongMemEvalFormatError(f"{at}: content must be text")
        built.append(
            Turn(session_id, number, index, role, content, bool(turn.get("has_answer", False)))
        )
    return Session(session_id, number, date, tuple(built))


def _date_key(date: Any, where: str) -> tuple[int, ...]:
    match = _DATE.match(str(date))
    if match is None:
        raise LongMemEvalFormatError(f"{where}: date {date!r} is not like '2023/05/30 (Tue) 23:40'")
    return tuple(int(part) for part in match.groups())


def _list(record: Any, name: str, where: str) -> list[Any]:
    value = _field(record, name, where)
    if not isinstance(value, list):
        raise LongMemEvalFormatError(f"{where}: '{name}' must be a list")
    return value


def _field(record: Any, name: str, where: str) -> Any:
    if not isinstance(record, dict) or name not in record:
        raise LongMemEvalFormatError(f"{where}: missing field '{name}'")
    return record[name]
