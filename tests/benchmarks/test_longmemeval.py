"""The LongMemEval retrieval benchmark: loader, LongMemEval's metrics (hand-computed), the
store's text, and a real run through the CLI on a three-question file."""

from __future__ import annotations

import gzip
import json
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.retrieval.longmemeval import (
    LongMemEvalFormatError,
    Question,
    is_longmemeval,
    load_questions,
)
from benchmarks.retrieval.longmemeval_metrics import (
    distinct,
    official_evidence,
    official_session_recall,
    official_turn_id,
    recall,
    session_recall,
)
from benchmarks.retrieval.longmemeval_report import MODES
from benchmarks.retrieval.longmemeval_run import Ranked, score
from benchmarks.retrieval.longmemeval_store import TRUNCATED, stored_text
from tests.cli.test_cli import cli

HERE = Path(__file__).parent
TINY = HERE / "tiny_longmemeval.json"


def _tiny() -> dict[str, Question]:
    return {q.question_id: q for q in load_questions(TINY)}


def test_sessions_are_sorted_by_date_and_ties_keep_the_file_order() -> None:
    food = _tiny()["q_food"]
    # File order: garden (05/02), answer (05/01 09:00), capital (05/01 09:00).
    assert [s.session_id for s in food.sessions] == ["answer_food_1", "capital_1", "garden_1"]
    assert [s.number for s in food.sessions] == [1, 2, 3]
    assert [t.session for t in food.sessions[0].turns] == [1, 1, 1]
    assert food.evidence_turns == {"answer_food_1_1"}
    assert food.answer_session_ids == ("answer_food_1",)


def test_a_repeated_session_id_is_two_sessions_whose_turns_share_their_units() -> None:
    train = _tiny()["q_train"]
    assert [s.session_id for s in train.sessions] == ["weather_1", "answer_train_1", "weather_1"]
    first, _, again = train.sessions
    assert (first.number, again.number) == (1, 3)
    assert [t.unit for t in first.turns] == [t.unit for t in again.turns]
    assert len(train.turns) == 6
    assert train.evidence_turns == {"answer_train_1_2"}  # an assistant turn


def test_abstention_is_read_from_the_question_id() -> None:
    tiny = _tiny()
    assert tiny["q_pet_abs"].abstention
    assert not tiny["q_food"].abstention
    assert tiny["q_pet_abs"].evidence_turns == frozenset()


def test_a_gzipped_file_loads_and_both_forms_are_recognised(tmp_path: Path) -> None:
    zipped = tmp_path / "data.json.gz"  # the name is not what tells it apart
    zipped.write_bytes(gzip.compress(TINY.read_bytes()))
    assert load_questions(zipped) == load_questions(TINY)
    assert is_longmemeval(TINY) and is_longmemeval(zipped)
    assert not is_longmemeval(HERE / "tiny_locomo.json")
    assert not is_longmemeval(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("haystack_dates"), "(q_food): missing field 'haystack_dates'"),
        (lambda r: r["haystack_dates"].pop(), "differ in length (3, 2, 3)"),
        (lambda r: r["haystack_dates"].__setitem__(0, "May 2"), "is not like '2023/05/30"),
        (lambda r: r["haystack_sessions"][0][0].pop("role"), "missing field 'role'"),
    ],
)
def test_a_malformed_record_names_the_question_and_field(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], object], message: str
) -> None:
    records = json.loads(TINY.read_text())
    mutate(records[0])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(records))
    with pytest.raises(LongMemEvalFormatError, match=re.escape(message)):
        load_questions(path)


def test_recall_any_and_all_look_at_the_top_k_only() -> None:
    ranked = ["a", "b", "c", "d"]
    assert recall(ranked, {"b", "d"}, 2) == (1.0, 0.0)
    assert recall(ranked, {"b", "d"}, 4) == (1.0, 1.0)
    assert recall(ranked, {"e"}, 4) == (0.0, 0.0)


def test_session_recall_counts_each_session_once_in_rank_order() -> None:
    train = _tiny()["q_train"]
    weather, answer, again = train.sessions
    ranking = [*weather.turns, *again.turns, answer.turns[0]]
    assert distinct(t.session_id for t in ranking) == ["weather_1", "answer_train_1"]
    # Four turns, two distinct sessions: the answer session is the second.
    assert session_recall(ranking, {"answer_train_1"}, 1) == (0.0, 0.0)
    assert session_recall(ranking, {"answer_train_1"}, 2) == (1.0, 1.0)


def test_official_ids_rename_the_turns_of_an_answer_session_without_the_answer() -> None:
    food = _tiny()["q_food"]
    answer = food.sessions[0].turns
    assert [official_turn_id(t) for t in answer if t.role == "user"] == [
        "answer_food_1_1",
        "noans_food_1_3",
    ]
    assert official_turn_id(food.sessions[1].turns[0]) == "capital_1_1"
    assert official_evidence(food) == {"answer_food_1_1"}
    # The evidence is an assistant turn: the user-turn index has none.
    assert official_evidence(_tiny()["q_train"]) == frozenset()


def test_official_session_recall_widens_k_until_k_sessions_are_covered() -> None:
    ranked = ["a_1", "a_3", "b_1", "a_5", "c_1", "d_1"]  # sessions a a b a c d
    at2 = official_session_recall(ranked, {"c_1"}, 2)
    assert (at2.any, at2.effective_k, at2.covered) == (0.0, 3, True)  # a, b
    at3 = official_session_recall(ranked, {"c_1", "d_1"}, 3)
    assert (at3.any, at3.all, at3.effective_k) == (1.0, 0.0, 5)  # a, b, c
    at4 = official_session_recall(ranked, {"c_1", "d_1"}, 4)
    assert (at4.any, at4.all, at4.effective_k) == (1.0, 1.0, 6)


def test_a_non_evidence_turn_does_not_retrieve_its_answer_session_officially() -> None:
    # LongMemEval's quirk: noans_x is another session than answer_x.
    ranked = ["noans_x_1", "b_1", "answer_x_3"]
    assert official_session_recall(ranked, {"answer_x_3"}, 2).any == 0.0
    assert official_session_recall(ranked, {"answer_x_3"}, 3).any == 1.0


def test_widening_stops_at_the_end_of_a_short_ranking_and_says_so() -> None:
    short = official_session_recall(["a_1", "a_3"], {"a_1"}, 2)
    assert (short.any, short.effective_k, short.covered) == (1.0, 3, False)


def test_scores_skip_abstention_and_user_side_evidence_as_longmemeval_does() -> None:
    tiny = _tiny()
    train = tiny["q_train"]
    ranking = list(reversed(train.turns))  # weather again, answer, weather
    values = score(train, Ranked({5: ranking, 10: ranking}, ranking))
    assert values["turn_any@5"] == 1.0 and values["turn_all@10"] == 1.0
    assert values["session_any@5"] == 1.0 and values["session_all@10"] == 1.0
    assert values["official_any@5"] is None  # no user turn has the answer
    pet = tiny["q_pet_abs"]
    assert set(score(pet, Ranked({5: [], 10: []}, [])).values()) == {None}
    food = tiny["q_food"]
    capital_first = [*food.sessions[1].turns, *food.sessions[0].turns]
    found = score(food, Ranked({5: capital_first[:1], 10: capital_first}, capital_first))
    assert found["turn_any@5"] == 0.0 and found["turn_any@10"] == 1.0
    # Users turns: capital_1_1, answer_food_1_1, noans_food_1_3 -> sessions reached at k=5
    # only by widening past the ranking's end; the answer session is among them.
    assert found["official_any@5"] == 1.0 and found["official_covered@5"] == 0.0


def test_a_turn_over_the_size_limit_is_cut_at_the_limit_and_marked() -> None:
    turn = _tiny()["q_food"].turns[0]
    text, cut = stored_text(turn, 10_000)
    assert (text, cut) == ("user: My favourite dish is mushroom risotto with parmesan.", False)
    short, cut = stored_text(turn, 30)
    assert cut and short.endswith(TRUNCATED) and len(short.encode()) <= 30


@pytest.mark.model
def test_bench_retrieval_on_a_longmemeval_file_writes_its_files(tmp_path: Path) -> None:
    done = cli(
        "bench", "retrieval", "--data", str(TINY), "--out", str(tmp_path), "--questions", "3"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "longmemeval.json",
        "longmemeval.md",
        "longmemeval_pools.pkl",
    ]
    # The fit's pools from the same fill: one per question, answer turns labelled.
    pools = pickle.loads((tmp_path / "longmemeval_pools.pkl").read_bytes())
    questions = load_questions(TINY)[:3]
    assert [p.group for p in pools] == [q.question_id for q in questions]
    for pool, question in zip(pools, questions, strict=True):
        expected = 0 if question.abstention else len(question.evidence_turns)
        assert pool.evidence == len(pool.labels) == expected
    results = json.loads((tmp_path / "longmemeval.json").read_text())
    assert (results["questions"], results["answerable"], results["abstention"]) == (3, 2, 1)
    assert set(results["modes"]) == set(MODES)
    assert results["ingest"]["turns"] == 7 + 6 + 4
    cosine = results["modes"]["cosine"]
    assert cosine["n"]["turn_any@10"] == 2 and cosine["n"]["official_any@5"] == 1
    # Every turn of a tiny haystack is within the top 10 of a full ranking.
    assert cosine["overall"]["turn_all@10"] == 1.0
    assert set(results["default_returned"]["abstention_at_10"]) == {"q_pet_abs"}
    assert "| Stella V5 1.5B, paper, LongMemEval-M | 73.2 | 86.2 | 64.4 | 78.4 |" in done.stderr
    markdown = (tmp_path / "longmemeval.md").read_text()
    assert markdown.startswith("LongMemEval-S retrieval, 3 questions (2 answerable")
    assert "| single-session-user | bm25 |" in markdown
