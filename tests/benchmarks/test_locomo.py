"""The LoCoMo retrieval benchmark: loader, recall metric (hand-computed), and a real run.

The run uses a tiny conversation written here in LoCoMo's format (the real data is not ours
to commit), with the real model and real LanceDB.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from benchmarks.retrieval.locomo import LocomoFormatError, load_conversations
from benchmarks.retrieval.recall import Recall, evidence_recall, summarize
from benchmarks.retrieval.run import KS, MODES, NO_PLOT, evaluate, markdown, write_outputs

TINY = Path(__file__).with_name("tiny_locomo.json")


def test_recall_is_the_fraction_of_evidence_retrieved() -> None:
    assert evidence_recall(["D1:1", "D2:3"], ["D2:3", "D9:9"]) == 0.5
    assert evidence_recall(["D1:1"], []) == 0.0
    assert evidence_recall([], ["D1:1"]) == 1.0  # no evidence counts 1, as in the paper
    # Repeated evidence counts each time (the paper's list arithmetic).
    assert evidence_recall(["D1:1", "D1:1", "D3:2"], ["D1:1"]) == pytest.approx(2 / 3)


def test_summary_means_per_category_and_overall_by_question() -> None:
    table = summarize([Recall(1, 5, 0.0), Recall(1, 5, 1.0), Recall(4, 5, 1.0), Recall(4, 10, 0.5)])
    assert table == {
        "5": {"overall": pytest.approx(2 / 3), "1": 0.5, "4": 1.0},
        "10": {"overall": 0.5, "4": 0.5},
    }


def test_loader_reads_turns_in_session_order_with_captions() -> None:
    (conversation,) = load_conversations(TINY)
    assert conversation.sample_id == "tiny-1"
    assert [t.dia_id for t in conversation.turns][:2] == ["D1:1", "D1:2"]
    assert {t.session for t in conversation.turns} == {1, 2}  # session_3 has only a date
    pottery = conversation.turns[3]
    assert pottery.text == (
        "Tomas: I started night classes in pottery at the community college."
        " [image: a photo of a lopsided clay bowl on a wheel]"
    )
    assert conversation.questions[4].evidence == () and conversation.questions[4].category == 5


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda data: data[0].pop("qa"), "[0] (tiny-1): missing field 'qa'"),
        (
            lambda data: data[0]["conversation"]["session_2"][1].pop("dia_id"),
            "session_2[1]: missing field 'dia_id'",
        ),
        (lambda data: data[0]["qa"][2].update(category=9), "qa[2]: 'category' must be 1-5"),
        (lambda data: data.clear(), "expected a non-empty list"),
    ],
)
def test_a_malformed_file_names_the_record_and_field(
    tmp_path: Path, mutate: object, message: str
) -> None:
    data = json.loads(TINY.read_text())
    mutate(data)  # type: ignore[operator]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(LocomoFormatError, match=re.escape(message)):
        load_conversations(bad)


def test_a_missing_file_says_which_option_to_pass(tmp_path: Path) -> None:
    with pytest.raises(LocomoFormatError, match="--data"):
        load_conversations(tmp_path / "nope.json")


@pytest.mark.model
async def test_run_on_a_tiny_conversation_finds_the_evidence(tmp_path: Path) -> None:
    ticks: list[int] = []

    def progress(total: int) -> object:
        ticks.append(total)
        return lambda: ticks.append(-1)

    results = await evaluate(
        TINY,
        workdir=tmp_path,
        progress=progress,  # type: ignore[arg-type]
        scenarios=0,
        paraphrases=0,
    )
    assert results["questions"] == 5 and ticks == [5] + [-1] * 5
    assert results["scenarios"] is None and results["paraphrases"] is None
    assert results["ingest"]["items"] == 8
    for mode in MODES:
        recall = results["modes"][mode]["recall"]
        assert set(recall) == {str(k) for k in KS}
        # The single-hop question names the dog kind the turn names: found at k = 5.
        assert recall["5"]["4"] == 1.0, mode
        assert recall["5"]["5"] == 1.0  # no evidence counts 1
        assert (
            results["modes"][mode]["latency_ms"]["p99"]
            >= results["modes"][mode]["latency_ms"]["p50"]
            > 0
        )
    # 8 turns: from k = 25 the vector half (and so the pool) holds every turn.
    assert results["modes"]["vector"]["recall"]["25"]["overall"] == 1.0
    assert results["modes"]["hybrid"]["recall"]["25"]["overall"] == 1.0
    paths = write_outputs(results, tmp_path / "out")
    assert [p.name for p in paths] == ["results.json", "results.md", "recall.png"]
    assert list(results["modes"]) == ["default", "vector", "text", "hybrid", "served"]
    assert json.loads(paths[0].read_text())["modes"]["hybrid"]["recall"]["5"]["4"] == 1.0
    assert "| DRAGON (paper, 10 conv.) | 0.567 | 0.662 | 0.767 | 0.827 |" in markdown(results)
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_results_are_written_and_one_line_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results = json.loads((Path(__file__).parent / "retrieval_results.json").read_text())
    real_find_spec = importlib.util.find_spec

    def no_matplotlib(name: str, *args: object) -> object:
        return None if name == "matplotlib" else real_find_spec(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", no_matplotlib)
    paths = write_outputs(results, tmp_path)
    assert [p.name for p in paths] == ["results.json", "results.md"]
    assert json.loads(paths[0].read_text()) == results
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [NO_PLOT] and "ralph-context[bench]" in NO_PLOT
